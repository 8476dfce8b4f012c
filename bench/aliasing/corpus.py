"""Real article texts for the aliasing benchmark sites, read from ``../shared/data`` at bench time.

Never copied into the repository: English article bodies of ``pages_en`` (their human-extracted
ground truth), Chinese main texts of ``pages_zh`` (``cleaned/``), German MDN pages (the
newest version of each page of ``neardup_mdn_multilingual``, locale ``de``) and Universal
Dependencies documents of ``haystack_multilingual``, each turned into a
:class:`~crawler.testsite.aliasing.Text` (a title and paragraphs).
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from urllib.parse import urlsplit

from crawler.testsite.aliasing import AliasingCorpus, Text

__all__ = ["aliasing_corpus", "chinese_texts", "english_texts", "german_texts", "ud_texts"]


def _title_from_url(url: str) -> str:
    """A readable title from an article URL's last meaningful path segment."""
    segments = [s for s in urlsplit(url).path.split("/") if s and not s.isdigit()]
    words = re.sub(r"\.\w+$", "", segments[-1] if segments else "article")
    words = re.sub(r"[-_]+", " ", re.sub(r"\b[0-9a-f]{6,}\b|\d{5,}", "", words)).strip()
    return (words or "Article").capitalize()[:90]


def english_texts(data: Path) -> list[Text]:
    """The 181 English article bodies of ``pages_en``, in the ground truth's key order."""
    truth = json.loads((data / "pages_en" / "ground-truth.json").read_text())
    texts = []
    for key in sorted(truth):
        body = truth[key]["articleBody"]
        paragraphs = tuple(p.strip() for p in body.split("\n") if p.strip())
        texts.append(Text(_title_from_url(truth[key]["url"]), paragraphs))
    return texts


def chinese_texts(data: Path) -> list[Text]:
    """The hand-copied main texts of ``pages_zh`` (lines broken by the copy are rejoined)."""
    texts = []
    for path in sorted((data / "pages_zh" / "cleaned").glob("*.txt")):
        blocks = re.split(r"\n\s*\n", path.read_text(encoding="utf-8", errors="replace"))
        lines = [re.sub(r"\s+", "", block) for block in blocks]
        text = "".join(lines)
        if len(text) < 200:
            continue
        paragraphs = tuple(text[i : i + 300] for i in range(0, len(text), 300))
        texts.append(Text(text[:24], paragraphs, "zh"))
    return texts


def german_texts(data: Path, *, min_chars: int = 2000) -> list[Text]:
    """German MDN pages (newest stored version of each), front matter and code removed."""
    newest: dict[str, dict[str, object]] = {}
    with gzip.open(data / "neardup_mdn_multilingual" / "docs.jsonl.gz", "rt") as lines:
        for line in lines:
            doc = json.loads(line)
            if doc["lang"] != "de":
                continue
            old = newest.get(doc["doc_key"])
            if old is None or int(str(old["version_index"])) < doc["version_index"]:
                newest[doc["doc_key"]] = doc
    texts = []
    for key in sorted(newest):
        raw = str(newest[key]["text"])
        title = re.search(r"^title:\s*(.+)$", raw, re.M)
        body = re.sub(r"\A---\n.*?\n---\n", "", raw, flags=re.S)
        body = re.sub(r"```.*?```", "", body, flags=re.S)
        paragraphs = tuple(
            p.strip() for p in re.split(r"\n\s*\n", body) if len(p.strip()) > 40 and "{{" not in p
        )
        if title and sum(map(len, paragraphs)) >= min_chars:
            texts.append(Text(title.group(1).strip().strip("\"'"), paragraphs, "de"))
    return texts


def ud_texts(data: Path, *, min_chars: int = 1500) -> list[Text]:
    """Universal Dependencies documents of ``haystack_multilingual`` (many languages), in file
    order: those of at least ``min_chars`` characters and in none of its high-overlap pairs
    (near duplicates of another document), cut into paragraphs of whole sentences."""
    root = data / "haystack_multilingual"
    overlapping = set()
    for line in (root / "high_overlap_pairs.tsv").read_text().splitlines()[1:]:
        overlapping.update(line.split("\t")[:2])
    texts = []
    with gzip.open(root / "docs.jsonl.gz", "rt") as lines:
        for line in lines:
            doc = json.loads(line)
            text = str(doc["text"])
            if (
                not str(doc["source"]).startswith("UniversalDependencies/")
                or doc["id"] in overlapping
                or len(text) < min_chars
            ):
                continue
            paragraphs: list[str] = []
            for sentence in re.split(r"(?<=[.!?。！？])\s+", text):
                if paragraphs and len(paragraphs[-1]) < 400:
                    paragraphs[-1] += " " + sentence
                else:
                    paragraphs.append(sentence)
            title = " ".join(text.split()[:8])[:60] if " " in text else text[:24]
            texts.append(Text(title, tuple(paragraphs), str(doc["lang"])))
    return texts


def aliasing_corpus(data: Path, *, articles: int = 150, translations: int = 22) -> AliasingCorpus:
    """The generated site's corpus: ``articles`` English articles, the rest of ``pages_en`` as
    ``?p=`` notes, 20 Chinese texts as ``view.php`` documents, German MDN pages as ``?lang=de``."""
    english = english_texts(data)
    return AliasingCorpus(
        articles=tuple(english[:articles]),
        notes=tuple(english[articles:]),
        docs=tuple(chinese_texts(data)[:20]),
        translations=tuple(german_texts(data)[:translations]),
    )
