"""Are this checkout's signatures bit-identical to another checkout's, on the public data?

A changed signature changes verdicts on stored databases (the spec would not say so), so a
change to the signature's code (normalization, tokenization, simhash, sketch) is checked
against the commit before it on real text: every page of ``pages_en`` and ``pages_zh`` with
its three crawl variants through the page work (``work_page``: extraction, visible text,
fingerprint and sketch), their ground-truth main texts, and the 9,661 documents in 35
languages of ``haystack_multilingual`` (signed as text alone, and as the page text beside
their first half). Each checkout computes the signatures in its own interpreter
(the checkout first on its path), and this process compares them::

    .venv/bin/python -m bench.check_signatures --base /work/base --data /work/shared/data

Prints the counts, and the first differing items; exit 1 when any differs.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import pickle
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from bench._common import DATA_DIR, ROOT

Item = tuple[str, str | None, bytes | None, str | None]
"""(name, text, html, page text) of one thing to sign."""


def items(data: Path) -> Iterator[Item]:
    """What both checkouts sign, in one order."""
    from bench.crawl_site import load_corpus, variants

    for lang, name, html in load_corpus(data):
        for n, page in enumerate([html, *variants(html)]):
            yield f"page:{lang}/{name}/{n}", None, page, None
    truth = json.loads((data / "pages_en" / "ground-truth.json").read_text(encoding="utf-8"))
    for key, entry in sorted(truth.items()):
        yield f"text:en/{key[:16]}", entry["articleBody"], None, None
    for path in sorted((data / "pages_zh" / "cleaned").glob("*.txt")):
        yield f"text:zh/{path.stem[:16]}", path.read_text(encoding="utf-8"), None, None
    with gzip.open(data / "haystack_multilingual" / "docs.jsonl.gz", "rt") as lines:
        for line in lines:
            doc = json.loads(line)
            text = doc["text"]
            yield f"doc:{doc['id']}", text, None, None
            yield f"doc+page:{doc['id']}", text[: len(text) // 2], None, text


def sign_all(data: Path) -> tuple[list[tuple[str, object]], float]:
    """Every item's signature (fingerprint, sketch, text length, exact flag; None for none)
    in this interpreter, and the CPU seconds the signing took."""
    from simhash_filter import Fingerprinter
    from simhash_filter.page.work import work_page

    fingerprinter = Fingerprinter()
    fingerprinter.sign("warm up 预热分词词典 " * 10)
    out: list[tuple[str, object]] = []
    spent = 0.0
    for name, text, html, page_text in items(data):
        t0 = time.process_time()
        if html is not None:
            signature = work_page(fingerprinter, name, text, html, max_bytes=8 << 20).signature
        else:
            assert text is not None
            signature = fingerprinter.sign(text, page_text=page_text)
        spent += time.process_time() - t0
        if signature is None:
            out.append((name, None))
        else:
            out.append(
                (
                    name,
                    (
                        signature.fingerprint,
                        signature.sketch,
                        signature.text_length,
                        signature.exact,
                    ),
                )
            )
    return out, spent


def signatures_of(checkout: Path, data: Path) -> tuple[list[tuple[str, object]], float, str]:
    """:func:`sign_all` run in a fresh interpreter on ``checkout``'s package (and its spec)."""
    # the package from the checkout, the bench modules from this one (both have a `bench`)
    code = (
        "import pickle, sys; "
        f"sys.path.insert(0, {str(checkout)!r}); import simhash_filter; "
        f"sys.path.remove({str(checkout)!r}); sys.path.insert(0, {str(ROOT)!r}); "
        "from pathlib import Path; from bench.check_signatures import sign_all; "
        "from simhash_filter import Fingerprinter; "
        f"result = sign_all(Path({str(data)!r})); "
        "sys.stdout.buffer.write(pickle.dumps((result, simhash_filter.__file__, "
        "Fingerprinter().spec)))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd="/", capture_output=True, check=True)
    (signatures, spent), package, spec = pickle.loads(done.stdout)
    if not Path(package).resolve().is_relative_to(checkout.resolve()):
        raise RuntimeError(f"{checkout} ran the package at {package}")
    return signatures, spent, spec


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA_DIR)
    parser.add_argument("--base", type=Path, required=True, help="the other checkout")
    args = parser.parse_args(argv)
    head, head_cpu, head_spec = signatures_of(ROOT, args.data)
    base, base_cpu, base_spec = signatures_of(args.base, args.data)
    if [n for n, _ in head] != [n for n, _ in base]:
        print("the two checkouts signed different items", file=sys.stderr)
        return 1
    differ = [name for (name, a), (_, b) in zip(head, base, strict=True) if a != b]
    signed = sum(s is not None for _, s in head)
    digest = hashlib.sha256(pickle.dumps(head)).hexdigest()[:16]
    print(f"items: {len(head)}, signed: {signed}, differing: {len(differ)} (digest {digest})")
    print(f"spec equal: {head_spec == base_spec}")
    print(f"signing CPU: this checkout {head_cpu:.2f} s, base {base_cpu:.2f} s")
    for name in differ[:20]:
        print(f"  differs: {name}")
    return 1 if differ or head_spec != base_spec else 0


if __name__ == "__main__":
    sys.exit(main())
