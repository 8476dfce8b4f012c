"""``simhash-filter report`` (issue 20), looked at as a person would: rendered by headless
Chromium, its visible counts read from the rendered DOM and checked against ``stats``, a
screenshot taken; and hostile page texts that must neither run nor break the layout."""

from __future__ import annotations

import itertools
import random
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from support.browser import WINDOW, rendered_dom, screenshot
from support.cli_corpus import run

from simhash_filter.cli.report_html import distance_ticks
from simhash_filter.core.fingerprint import Fingerprinter
from simhash_filter.core.signature import MatchRule
from simhash_filter.core.stored_text import pack_text
from simhash_filter.store import FingerprintStore, StoreOptions, reports, texts
from simhash_filter.store.audit import sample_drops, similarity_histogram

FINGERPRINTER = Fingerprinter()
WORDS = (
    "river harbour council market library bridge tram station garden museum school "
    "festival weather bakery theatre forest valley mountain island village engineer "
    "teacher farmer doctor painter sailor builder printer merchant miller student"
).split()
VERBS = "opens closes builds repairs visits paints counts carries follows plans".split()


def article(rng: random.Random, sentences: int = 14) -> str:
    return "\n".join(
        " ".join(
            [rng.choice(WORDS).capitalize(), rng.choice(VERBS)]
            + [rng.choice(WORDS) for _ in range(rng.randint(6, 12))]
        )
        + "."
        for _ in range(sentences)
    )


def edited(rng: random.Random, text: str) -> str:
    """A near-copy: one sentence's words changed."""
    lines = text.split("\n")
    n = rng.randrange(len(lines))
    lines[n] = lines[n].replace(lines[n].split()[2], "lighthouse", 1)
    return "\n".join(lines)


def add(store: FingerprintStore, url: str, text: str, *, keep_text: bool = True) -> None:
    fingerprint = FINGERPRINTER.fingerprint(text)
    assert fingerprint is not None
    store.check_and_add(
        url,
        fingerprint,
        text_length=len(text),
        sketch=FINGERPRINTER.sketch(text),
        text=pack_text(text) if keep_text else None,
    )


def fill_crawl(url: str) -> None:
    """Three domains of originals and their copies; some pages stored without text."""
    rng = random.Random(7)
    with FingerprintStore.open(
        url, StoreOptions(spec=FINGERPRINTER.spec, rule=MatchRule())
    ) as store:
        for n in range(12):
            original = article(rng)
            add(store, f"https://news.example/a{n}", original, keep_text=n % 4 != 0)
            for copy in range(n % 3):
                add(store, f"https://mirror{copy}.example/a{n}", edited(rng, original))


class _Counts(HTMLParser):
    """The report's visible numbers: element id or domain row → data-count, and the
    drop samples shown."""

    def __init__(self) -> None:
        super().__init__()
        self.by_id: dict[str, int] = {}
        self.domains: dict[str, dict[str, int]] = {}
        self.samples = 0
        self._domain: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "tr" and a.get("data-domain") is not None:
            self._domain = a["data-domain"]
            self.domains[str(self._domain)] = {}
        if "data-count" in a and a["data-count"] is not None:
            if a.get("id"):
                self.by_id[str(a["id"])] = int(a["data-count"])
            elif self._domain is not None:
                kind = str(a.get("class", "")).split()[-1]
                self.domains[self._domain][kind] = int(a["data-count"])
        if tag == "section" and a.get("class") == "sample":
            self.samples += 1


def test_report_shows_what_stats_says_in_a_real_browser(
    sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fill_crawl(sqlite_url)
    out_file = tmp_path / "report.html"
    code, out, err = run(capsys, "--db", sqlite_url, "report", "--out", str(out_file))
    assert (code, out) == (0, f"{out_file}\n"), err
    html = out_file.read_text(encoding="utf-8")
    assert "<script" not in html
    assert "http://" not in html.replace("http://www.w3.org", "")  # nothing fetched
    assert "https://" not in re.sub(r">[^<]*<", "><", html)  # URLs only as text, no src/href

    dom = rendered_dom(out_file, tmp_path / "profile")
    shown = _Counts()
    shown.feed(dom)
    with FingerprintStore.open_existing(sqlite_url) as store:
        numbers = store.stats()
        domains = reports.domain_counts(store)
        with_text = texts.domain_text_counts(store)
        pages_with_text, drops_with_text = texts.text_counts(store)
    assert numbers.duplicates > 0
    assert shown.by_id["total-pages"] == numbers.pages
    assert shown.by_id["total-duplicates"] == numbers.duplicates
    assert shown.by_id["total-domains"] == len(domains)
    assert shown.by_id["pages-with-text"] == pages_with_text
    assert shown.by_id["drops-with-text"] == drops_with_text == numbers.duplicates
    assert shown.domains == {
        d.domain: {
            "kept": d.pages,
            "dropped": d.duplicates,
            "no-text": d.pages - with_text.get(d.domain, 0),
        }
        for d in domains
    }
    assert shown.samples == min(20, numbers.duplicates)
    assert 'id="similarity-chart"' in dom
    assert 'id="timeline-chart"' in dom
    assert "<del>" in dom
    assert "<ins>" in dom  # the changed words are marked

    png = screenshot(out_file, tmp_path / "profile", tmp_path / "report.png")
    data = png.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    assert int.from_bytes(data[16:20], "big") == WINDOW[0]
    assert len(data) > 20_000  # drawn, not blank


def test_sampling_is_bounded_and_said(sqlite_url: str) -> None:
    fill_crawl(sqlite_url)
    with FingerprintStore.open_existing(sqlite_url) as store:
        total = store.stats().duplicates
        sampled, counted = sample_drops(store, 4)
        histogram = similarity_histogram(store)
    assert counted == total
    assert len(sampled) == 4
    assert len({s.drop.duplicate_id for s in sampled}) == 4
    assert [s.reason for s in sampled][:2] == ["nearest the threshold"] * 2
    nearest = min(s.drop.similarity or 1 for s in sampled)
    assert nearest == min(s.drop.similarity or 1 for s in sampled[:2])
    assert sum(histogram.counts) + histogram.without_similarity == total


HOSTILE = [
    "<script>document.title = 'pwned'</script> Script tags in a page's text stay text.",
    '</textarea></td></tr></table><img src=x onerror="document.body.setAttribute('
    "'data-pwned', '1')\"> Closing tags stay text too.",
    "\u202eThis line starts with a right-to-left override \u2066and an isolate.",
    "A closing style tag </style><style>body{display:none}</style> stays text.",
]


def test_hostile_texts_neither_run_nor_break_the_layout(
    sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = random.Random(11)
    base = article(rng, sentences=60)
    one_line = "x" * 10_000_000  # 10 MB of one line (the store keeps 64 KiB of it)
    with FingerprintStore.open(
        sqlite_url, StoreOptions(spec=FINGERPRINTER.spec, rule=MatchRule())
    ) as store:
        add(store, "https://evil.example/kept", base)
        # the hostile lines are what the copies add: the report shows them as changes
        add(
            store,
            "https://evil.example/<script>alert(1)</script>",
            base + "\n" + "\n".join(HOSTILE),
        )
        add(store, "https://evil.example/long", base + "\n" + one_line)
        assert store.stats().duplicates == 2
    out_file = tmp_path / "report.html"
    code, _, err = run(capsys, "--db", sqlite_url, "report", "--out", str(out_file))
    assert code == 0, err
    html = out_file.read_text(encoding="utf-8")
    assert len(html) < 2_000_000  # the 10 MB line is not copied into the report
    # A copy without the page's Content-Security-Policy, with a probe script: a text that
    # escaped its escaping would run here, and the probe measures the laid-out width.
    probe = (
        "<script>document.body.dataset.scripts = document.scripts.length;"
        "document.body.dataset.width = document.documentElement.scrollWidth;</script>"
    )
    bare = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", html)
    assert bare != html
    probed = tmp_path / "probed.html"
    probed.write_text(bare.replace("</body>", probe + "</body>"), encoding="utf-8")
    dom = rendered_dom(probed, tmp_path / "profile")
    body = re.search(r"<body[^>]*>", dom)
    assert body is not None
    assert "data-pwned" not in body.group()
    assert 'data-scripts="1"' in body.group()  # the probe alone ran
    width = re.search(r'data-width="(\d+)"', body.group())
    assert width is not None
    assert int(width.group(1)) <= WINDOW[0]  # no line pushes the page wider than the window
    assert "<title>simhash-filter report</title>" in dom
    assert 'id="report-end"' in dom  # the page is whole to its end
    assert dom.count('class="sample"') == 2
    assert "&lt;script&gt;document.title" in dom
    assert "&lt;/textarea&gt;" in dom
    assert 'title="U+202E"' in dom  # the override is shown, not obeyed
    assert "\u202e" not in dom
    assert "<style>body{display:none}" not in dom


def _label_positions(svg: str) -> list[float]:
    """The x of the labels under a chart's axis (the text elements at its bottom)."""
    return [float(x) for x in re.findall(r'<text x="([0-9.]+)" y="232"', svg)]


@pytest.mark.parametrize(
    ("options", "words", "reach"),
    [
        (
            {"rule": MatchRule.for_distance(64)},  # the crawl's default
            "MinHash LSH index: 18 bands of 8 rows, pages without a sketch: permuted",
            None,
        ),
        (
            {"rule": MatchRule(), "index": "multi-index"},
            "multi-index simhash tables: within 9 bits",
            "reach k = 9",
        ),
    ],
    ids=["minhash-lsh", "multi-index"],
)
def test_the_report_speaks_of_the_index_in_use(
    sqlite_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    options: dict[str, object],
    words: str,
    reach: str | None,
) -> None:
    """Issue 31 item 10: the header in words, distance labels that do not overlap, and the
    'reach' line only where the simhash distance bounds the candidates."""
    rng = random.Random(3)
    opening = StoreOptions(spec=FINGERPRINTER.spec, **options)  # type: ignore[arg-type]
    with FingerprintStore.open(sqlite_url, opening) as store:
        for n in range(10):
            original = article(rng)
            add(store, f"https://news.example/a{n}", original)
            add(store, f"https://copy.example/a{n}", edited(rng, original))
    out_file = tmp_path / "report.html"
    assert run(capsys, "--db", sqlite_url, "report", "--out", str(out_file))[0] == 0
    html = out_file.read_text(encoding="utf-8")
    index_line = re.search(r'<p class="meta" id="index">([^<]*)</p>', html)
    assert index_line is not None
    assert index_line.group(1).startswith(words)
    assert "Copies: " in index_line.group(1)
    assert "f=64" not in html
    assert "fallback=k3/b4" not in html
    chart = re.search(r'<svg id="distance-chart".*?</svg>', html)
    assert chart is not None
    xs = _label_positions(chart.group())
    assert len(xs) >= 2
    assert min(b - a for a, b in itertools.pairwise(xs)) >= 28  # labels do not overlap
    if reach is None:
        assert "reach k" not in html
        assert "at any simhash distance" in html
    else:
        assert reach in chart.group()
    png = screenshot(out_file, tmp_path / "profile", tmp_path / "report.png")
    assert png.read_bytes().startswith(b"\x89PNG")


def test_distance_labels_never_crowd() -> None:
    assert distance_ticks(4) == [0, 1, 2, 3, 4]
    for top in (9, 20, 40, 64):
        ticks = distance_ticks(top)
        assert ticks[0] == 0
        assert (ticks[1] - ticks[0]) * 708 / (top + 1) >= 28
    assert distance_ticks(64) == list(range(0, 65, 4))
