"""The HTML of ``simhash-filter report``: one self-contained page (inline CSS, inline SVG
charts, no script, nothing fetched), made from plain values by :func:`render_report`.

Every text that comes from a crawl (URLs, domains, page texts) goes through :func:`esc`:
HTML-escaped, and bidirectional overrides and other control characters shown as visible
``U+XXXX`` marks, so a page's text can neither run nor reorder or break the page around
it. A Content-Security-Policy that allows no script and no fetch backs this up.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from simhash_filter.cli.output import iso_time
from simhash_filter.core.textdiff import Passage, word_diff
from simhash_filter.store.audit import DropGroup, Histogram, Timeline

__all__ = ["DomainRow", "ReportData", "SampleView", "esc", "render_report"]

_CONTROLS = re.compile(
    "[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f"
    "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff]"
)
_ROWS_PER_SAMPLE = 200  # diff rows shown per sampled drop
_CONTEXT = 2  # equal passages kept around a change

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
"""No script, no fetch: only the page's own inline style."""

CSS = """
:root { --kept: #4c78a8; --dropped: #e45756; --line: #222; --muted: #666; }
* { box-sizing: border-box; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0;
       color: #1b1b1b; background: #fafafa; }
main { max-width: 1200px; margin: 0 auto; padding: 24px; overflow-wrap: anywhere; }
h1 { font-size: 24px; margin: 0 0 4px; } h2 { font-size: 19px; margin: 32px 0 8px; }
.meta, .note { color: var(--muted); font-size: 13px; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(140px, 1fr));
         gap: 12px; margin: 16px 0; padding: 0; }
.card { background: #fff; border: 1px solid #ddd; border-radius: 6px; padding: 10px 12px;
        margin: 0; }
.card dt { font-size: 12px; color: var(--muted); } .card dd { font-size: 22px; margin: 0;
        font-weight: 600; }
table { border-collapse: collapse; width: 100%; background: #fff; table-layout: fixed; }
th, td { border: 1px solid #e2e2e2; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f0f0f0; font-weight: 600; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; width: 9em; }
svg { background: #fff; border: 1px solid #ddd; border-radius: 6px; max-width: 100%;
      height: auto; }
svg text { font: 11px system-ui, sans-serif; fill: #333; }
svg text.axis { font-size: 12px; fill: #555; }
.sample { background: #fff; border: 1px solid #ddd; border-radius: 6px; margin: 16px 0;
          padding: 10px 12px; }
.sample h3 { font-size: 15px; margin: 0 0 6px; }
.diff td { font: 13px/1.4 ui-monospace, "DejaVu Sans Mono", monospace; white-space: pre-wrap;
           overflow-wrap: anywhere; word-break: break-word; unicode-bidi: isolate; }
.diff td.del { background: #fdecea; } .diff td.ins { background: #e8f5e9; }
.diff .p { max-height: 14em; overflow: auto; }
.diff td.gap { color: var(--muted); text-align: center; font-style: italic; }
del { background: #f8b4ae; text-decoration: line-through; }
ins { background: #a5d6a7; text-decoration: none; }
.ctl { border: 1px solid #999; border-radius: 3px; font-size: 10px; padding: 0 2px;
       color: #900; unicode-bidi: isolate; }
.url { unicode-bidi: isolate; overflow-wrap: anywhere; }
"""


def _mark(match: re.Match[str]) -> str:
    code = f"U+{ord(match.group()):04X}"
    return f'<span class="ctl" title="{code}">{code}</span>'


def esc(value: object) -> str:
    """``value`` as safe HTML text: escaped, control and bidi-override characters shown
    as visible marks (they would otherwise reorder or hide what follows them)."""
    return _CONTROLS.sub(_mark, html.escape(str(value), quote=True))


def _n(value: int) -> str:
    return f"{value:,}"


@dataclass(frozen=True, slots=True)
class DomainRow:
    domain: str
    kept: int
    dropped: int
    kept_without_text: int


@dataclass(frozen=True, slots=True)
class SampleView:
    """One sampled drop as the report shows it."""

    url: str
    duplicate_of: str
    distance: int
    similarity: float | None
    seen_at: datetime
    reason: str
    steps: list[Passage] | None  # None: a text is missing
    missing: str = ""  # which text is missing
    truncated: bool = False  # a stored text was cut at 64 KiB
    superseded: bool = False  # kept, then replaced by its canonical copy (docs/keep.md)


@dataclass(slots=True)
class ReportData:
    """Everything the report shows, as plain values."""

    database: str
    generated_at: datetime
    pages: int
    duplicates: int
    domain_count: int
    pages_with_text: int
    drops_with_text: int
    scheme: str
    rule: str
    threshold: float | None  # the rule's min_similarity (None: distance alone)
    max_distance: int  # the band index's reach: no candidate is farther
    distance_bounds: bool = True  # the reach limits candidates (not under LSH bands, k=64)
    domains: list[DomainRow] = field(default_factory=list)
    timeline: Timeline | None = None
    histogram: Histogram | None = None
    distances: dict[int, int] = field(default_factory=dict)
    clusters: list[DropGroup] = field(default_factory=list)
    samples: list[SampleView] = field(default_factory=list)
    sample_note: str = ""
    seconds: float | None = None
    superseded: int = 0  # of the duplicates: pages kept, then replaced by their canonical copy
    request_side: str = ""  # the HTML of what was skipped before download (report_requests)


# --- charts ----------------------------------------------------------------------------


WIDTH, HEIGHT, LEFT, BOTTOM = 736, 256, 64, 44
"""A chart's size and its plot's margins: room for the axis titles left and below."""


def _axis_titles(x_title: str, y_title: str, top: int) -> str:
    """The axes' titles: under the labels of the x axis, and up the y axis."""
    middle = top + (HEIGHT - BOTTOM - top) / 2
    return (
        f'<text class="axis" x="{LEFT + (WIDTH - LEFT - 12) / 2:.0f}" y="{HEIGHT - 4}" '
        f'text-anchor="middle">{esc(x_title)}</text>'
        f'<text class="axis" transform="rotate(-90)" x="{-middle:.0f}" y="14" '
        f'text-anchor="middle">{esc(y_title)}</text>'
    )


def _bars_svg(
    values: Sequence[int],
    labels: Sequence[tuple[float, str]],
    *,
    title: str,
    axes: tuple[str, str],
    tooltips: Sequence[str],
    marker: tuple[float, str] | None = None,
    colour: str = "var(--dropped)",
    element_id: str,
) -> str:
    """A bar chart: ``values`` left to right, ``labels`` (index, text) under the axis,
    ``axes`` the x and y axes' titles, ``marker`` (position in bars, text) a dashed
    vertical line."""
    width, height, left, bottom, top = WIDTH, HEIGHT, LEFT, BOTTOM, 16
    plot_w, plot_h = width - left - 12, height - bottom - top
    peak = max(values, default=0) or 1
    bar_w = plot_w / max(len(values), 1)
    parts = [
        f'<svg id="{element_id}" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" role="img" aria-label="{esc(title)}">',
        f"<title>{esc(title)}</title>",
        f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" '
        'stroke="#999"/>',
        f'<text x="{left - 6}" y="{top + 4}" text-anchor="end">{_n(peak)}</text>',
        f'<text x="{left - 6}" y="{top + plot_h}" text-anchor="end">0</text>',
    ]
    for n, (value, tip) in enumerate(zip(values, tooltips, strict=True)):
        h = plot_h * value / peak
        x = left + n * bar_w
        parts.append(
            f'<rect x="{x + 1:.1f}" y="{top + plot_h - h:.1f}" width="{max(bar_w - 2, 1):.1f}" '
            f'height="{h:.1f}" fill="{colour}"><title>{esc(tip)}</title></rect>'
        )
    for position, text in labels:
        x = left + position * bar_w
        parts.append(f'<text x="{x:.1f}" y="{height - 24}" text-anchor="middle">{esc(text)}</text>')
    if marker is not None:
        position, text = marker
        x = left + position * bar_w
        parts.append(
            f'<line x1="{x:.1f}" y1="{top - 6}" x2="{x:.1f}" y2="{top + plot_h}" '
            'stroke="var(--line)" stroke-width="2" stroke-dasharray="5 4"/>'
            f'<text x="{x - 4:.1f}" y="{top + 6}" text-anchor="end">{esc(text)}</text>'
        )
    parts.append(_axis_titles(*axes, top))
    parts.append("</svg>")
    return "".join(parts)


def _similarity_chart(data: ReportData) -> str:
    histogram = data.histogram
    if histogram is None or not any(histogram.counts):
        return ""
    bins = len(histogram.counts)
    tips = [
        f"similarity {n / bins:.2f}-{(n + 1) / bins:.2f}: {_n(c)} drops"
        for n, c in enumerate(histogram.counts)
    ]
    labels: list[tuple[float, str]] = [
        (n, f"{n / bins:.2f}") for n in range(0, bins + 1, max(bins // 4, 1))
    ]
    marker = None
    if data.threshold is not None:
        marker = (data.threshold * bins, f"threshold {data.threshold:g}")
    return _bars_svg(
        histogram.counts,
        labels,
        title="similarity of dropped pages",
        axes=("similarity: the sketches' estimated share of 5-grams in common", "drops"),
        tooltips=tips,
        marker=marker,
        element_id="similarity-chart",
    )


def distance_ticks(top: int, width: float = 708.0, spacing: float = 28.0) -> list[int]:
    """The distances labelled under a histogram of 0..``top``: every one while they fit,
    else every 2nd, 4th, 5th, 8th ... so labels stand at least ``spacing`` pixels apart."""
    bar = width / (top + 1)
    step = next((s for s in (1, 2, 4, 5, 8, 10, 16, 20, 32) if s * bar >= spacing), 64)
    return list(range(0, top + 1, step))


def _distance_chart(data: ReportData) -> str:
    if not data.distances:
        return ""
    top = max(data.distances)
    if data.distance_bounds:
        top = max(top, data.max_distance)
    values = [data.distances.get(n, 0) for n in range(top + 1)]
    tips = [f"distance {n}: {_n(v)} drops" for n, v in enumerate(values)]
    marker = None
    if data.distance_bounds:
        marker = (data.max_distance + 1, f"reach k = {data.max_distance}")
    return _bars_svg(
        values,
        [(n + 0.5, str(n)) for n in distance_ticks(top)],
        title="Hamming distance of dropped pages",
        axes=("simhash distance (bits of 64 that differ)", "drops"),
        tooltips=tips,
        marker=marker,
        colour="#f58518",
        element_id="distance-chart",
    )


def _timeline_chart(data: ReportData) -> str:
    line = data.timeline
    if line is None:
        return ""
    width, height, left, bottom, top = WIDTH, HEIGHT, LEFT, BOTTOM, 30
    plot_w, plot_h = width - left - 12, height - bottom - top
    buckets = line.buckets
    peak = max((b.kept + b.dropped for b in buckets), default=0) or 1
    bar_w = plot_w / len(buckets)
    parts = [
        f'<svg id="timeline-chart" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" role="img" aria-label="pages kept and dropped over time">',
        "<title>pages kept and dropped over time</title>",
        f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" '
        'stroke="#999"/>',
        f'<text x="{left - 6}" y="{top + 4}" text-anchor="end">{_n(peak)}</text>',
        f'<text x="{left - 6}" y="{top + plot_h}" text-anchor="end">0</text>',
    ]
    for n, bucket in enumerate(buckets):
        x = left + n * bar_w
        kept_h = plot_h * bucket.kept / peak
        drop_h = plot_h * bucket.dropped / peak
        tip = f"{iso_time(bucket.start)}: {_n(bucket.kept)} kept, {_n(bucket.dropped)} dropped"
        base = top + plot_h
        parts.append(
            f"<g><title>{esc(tip)}</title>"
            f'<rect x="{x + 1:.1f}" y="{base - kept_h:.1f}" width="{max(bar_w - 2, 1):.1f}" '
            f'height="{kept_h:.1f}" fill="var(--kept)"/>'
            f'<rect x="{x + 1:.1f}" y="{base - kept_h - drop_h:.1f}" '
            f'width="{max(bar_w - 2, 1):.1f}" height="{drop_h:.1f}" fill="var(--dropped)"/></g>'
        )
    first, last = buckets[0].start, buckets[-1].start + line.width
    parts.append(f'<text x="{left}" y="{height - 24}">{esc(iso_time(first))}</text>')
    parts.append(
        f'<text x="{left + plot_w}" y="{height - 24}" text-anchor="end">'
        f"{esc(iso_time(last))}</text>"
    )
    parts.append(_axis_titles("time (UTC)", "pages", top))
    parts.append(
        f'<rect x="{left}" y="8" width="10" height="10" fill="var(--kept)"/>'
        f'<text x="{left + 14}" y="17">kept</text>'
        f'<rect x="{left + 52}" y="8" width="10" height="10" fill="var(--dropped)"/>'
        f'<text x="{left + 66}" y="17">dropped</text>'
    )
    parts.append("</svg>")
    return "".join(parts)


# --- the side-by-side diff -------------------------------------------------------------


def _pieces_html(old: str, new: str) -> tuple[str, str]:
    left, right = [], []
    for piece in word_diff(old, new):
        text = esc(piece.text)
        if piece.op == "equal":
            left.append(text)
            right.append(text)
        elif piece.op == "delete":
            left.append(f"<del>{text}</del>")
        else:
            right.append(f"<ins>{text}</ins>")
    return "".join(left), "".join(right)


def _td(content: str, css: str = "") -> str:
    """A diff cell; a long passage scrolls inside it (a 64 KiB line stays one cell high)."""
    attribute = f' class="{css}"' if css else ""
    return (
        f'<td{attribute}><div class="p">{content}</div></td>'
        if content
        else f"<td{attribute}></td>"
    )


def diff_rows(steps: Iterable[Passage], limit: int = _ROWS_PER_SAMPLE) -> tuple[list[str], int]:
    """Table rows (kept page left, dropped page right) for a diff, runs of equal
    passages cut to their ends; and how many rows were left out past ``limit``."""
    rows: list[str] = []
    steps = list(steps)

    def row(left: str, right: str, left_css: str = "", right_css: str = "") -> None:
        rows.append(f"<tr>{_td(left, left_css)}{_td(right, right_css)}</tr>")

    for n, step in enumerate(steps):
        if step.op == "equal":
            shown = list(step.a)
            head = _CONTEXT if n > 0 else 0
            tail = _CONTEXT if n + 1 < len(steps) else 0
            if len(shown) > head + tail + 1:
                for p in shown[:head]:
                    row(esc(p), esc(p))
                hidden = len(shown) - head - tail
                what = f"{_n(hidden)} equal passages"
                if len(steps) == 1:
                    what = f"identical texts ({_n(hidden)} passages)"
                rows.append(f'<tr><td class="gap" colspan="2">{what}</td></tr>')
                shown = shown[len(shown) - tail :] if tail else []
            for p in shown:
                row(esc(p), esc(p))
        elif step.op == "delete":
            for p in step.a:
                row(esc(p), "", "del")
        elif step.op == "insert":
            for p in step.b:
                row("", esc(p), "", "ins")
        else:
            for old, new in zip(step.a, step.b, strict=False):
                row(*_pieces_html(old, new), "del", "ins")
            for p in step.a[len(step.b) :]:
                row(esc(p), "", "del")
            for p in step.b[len(step.a) :]:
                row("", esc(p), "", "ins")
    return rows[:limit], max(0, len(rows) - limit)


def _sample_html(number: int, sample: SampleView) -> str:
    similarity = "no sketch" if sample.similarity is None else f"{sample.similarity:.3f}"
    what, of = (
        ("superseded", "replaced by") if sample.superseded else ("dropped", "near-duplicate of")
    )
    head = (
        f'<section class="sample" id="sample-{number}"><h3>{number}. {what} '
        f'<span class="url">{esc(sample.url)}</span></h3>'
        f'<p class="meta">{of} <span class="url">{esc(sample.duplicate_of)}</span>'
        f" · distance {sample.distance} · similarity {similarity} · "
        f"{esc(iso_time(sample.seen_at))} · chosen: {esc(sample.reason)}</p>"
    )
    if sample.steps is None:
        return head + f'<p class="note">{esc(sample.missing)}</p></section>'
    rows, left_out = diff_rows(sample.steps)
    note = ""
    if left_out:
        note = f'<p class="note">{_n(left_out)} more rows not shown (simhash-filter diff)</p>'
    if sample.truncated:
        note += '<p class="note">a stored text was cut at 64 KiB</p>'
    return (
        head
        + '<table class="diff"><thead><tr><th>kept page</th><th>dropped page</th></tr></thead>'
        + "<tbody>"
        + "".join(rows)
        + "</tbody></table>"
        + note
        + "</section>"
    )


# --- the page --------------------------------------------------------------------------


def _card(element_id: str, label: str, value: int | str, count: int | None = None) -> str:
    attribute = "" if count is None else f' data-count="{count}"'
    return (
        f'<div class="card"><dt>{esc(label)}</dt>'
        f'<dd id="{element_id}"{attribute}>{esc(value)}</dd></div>'
    )


def _cards(data: ReportData) -> str:
    share = data.duplicates / (data.pages + data.duplicates) if data.pages + data.duplicates else 0
    return "".join(
        [
            _card("total-pages", "pages kept", _n(data.pages), data.pages),
            _card("total-duplicates", "duplicates dropped", _n(data.duplicates), data.duplicates),
            _card("dropped-share", "dropped share", f"{share:.1%}"),
            *(
                [_card("superseded", "superseded", _n(data.superseded), data.superseded)]
                if data.superseded
                else []
            ),
            _card("total-domains", "domains", _n(data.domain_count), data.domain_count),
            _card(
                "pages-with-text", "kept with text", _n(data.pages_with_text), data.pages_with_text
            ),
            _card(
                "drops-with-text", "drops with text", _n(data.drops_with_text), data.drops_with_text
            ),
        ]
    )


def _domain_rows(data: ReportData) -> str:
    rows = "".join(
        f'<tr data-domain="{esc(d.domain)}"><td class="url">{esc(d.domain)}</td>'
        f'<td class="n kept" data-count="{d.kept}">{_n(d.kept)}</td>'
        f'<td class="n dropped" data-count="{d.dropped}">{_n(d.dropped)}</td>'
        f'<td class="n no-text" data-count="{d.kept_without_text}">'
        f"{_n(d.kept_without_text)}</td></tr>"
        for d in data.domains
    )
    return f"""<table id="domains"><thead><tr><th>domain</th><th class="n">kept</th>
<th class="n">dropped</th><th class="n">kept without text</th></tr></thead>
<tbody>{rows}</tbody></table>"""


def _closeness(data: ReportData) -> str:
    """How close the drops were to the line: the similarity the rule confirms with, and
    the simhash distance (the index's reach where it bounds the candidates)."""
    threshold = (
        f"a candidate is dropped when its sketch similarity is at least {data.threshold:g}"
        if data.threshold is not None
        else f"a page within {data.max_distance} bits is dropped"
    )
    if data.distance_bounds:
        about = "the band index finds candidates up to its reach"
    else:
        about = (
            "the index's LSH bands find candidates at any simhash distance, so this is how "
            "far apart the copies' simhashes are, not a line they had to stay within"
        )
    return f"""<p class="note">{esc(threshold)}; the nearer the bars stand to the dashed line,
the closer the decisions were.</p>
{_similarity_chart(data)}
<p class="note">Hamming distance of the dropped pages' simhashes to the pages they copy
({esc(about)}).</p>
{_distance_chart(data)}"""


def render_report(data: ReportData) -> str:
    """The whole report as one HTML document."""
    more_domains = ""
    if data.domain_count > len(data.domains):
        more_domains = (
            f'<p class="note">the {len(data.domains)} domains with the most drops of '
            f"{_n(data.domain_count)} (simhash-filter stats --domains 0: all)</p>"
        )
    cluster_rows = "".join(
        f'<tr><td class="url">{esc(c.url)}</td><td class="n">{_n(c.drops)}</td>'
        f'<td class="n">{_n(c.drop_domains)}</td></tr>'
        for c in data.clusters
    )
    samples = "".join(_sample_html(n, s) for n, s in enumerate(data.samples, start=1))
    took = "" if data.seconds is None else f" in {data.seconds:.1f} s"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>simhash-filter report</title>
<style>{CSS}</style></head>
<body><main>
<h1>simhash-filter: what the filter did</h1>
<p class="meta">database <span class="url" id="database">{esc(data.database)}</span> ·
made {esc(iso_time(data.generated_at))}{took}</p>
<p class="meta" id="index">{esc(data.scheme)}. {esc(data.rule)}.</p>
<h2>Totals</h2>
<dl class="cards">{_cards(data)}</dl>
<p class="note">Counts as <code>simhash-filter stats</code> gives them. Pages with too little text
to fingerprint pass without entering the database: the crawl's own
<code>simhash_filter/no_text</code> stat counts them. "Without text": kept pages whose text was not
stored (SIMHASH_FILTER_STORE_TEXT off when they were crawled).</p>
{data.request_side}
<h2>Domains</h2>
{_domain_rows(data)}
{more_domains}
<h2>Over time</h2>
{_timeline_chart(data) or '<p class="note">no pages yet</p>'}
<h2>How close the drops are to the line</h2>
{_closeness(data)}
<h2>Largest clusters</h2>
<p class="note">Kept pages with the most copies dropped against them.</p>
<table id="clusters"><thead><tr><th>kept page</th><th class="n">drops</th>
<th class="n">their domains</th></tr></thead><tbody>{cluster_rows}</tbody></table>
<h2>A sample of drops</h2>
<p class="note" id="sample-note">{esc(data.sample_note)}</p>
{samples}
<footer id="report-end" class="note">simhash-filter report · self-contained: no script,
nothing fetched</footer>
</main></body></html>
"""
