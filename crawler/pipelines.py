"""Item pipelines of the ``crawler`` project.

``KeptPagesFile`` is the storage pipeline of docs/keep.md: it keeps one item per kept page,
and when simhash-filter keeps a canonical copy in place of a variant it stored before
(``page_superseded``), the variant's item is replaced. Enable it with
``-s KEPT_PAGES_FILE=kept.jsonl``: the file is written when the crawl ends.
"""

from __future__ import annotations

import json
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from itemadapter import ItemAdapter
from scrapy import signals
from scrapy.exceptions import NotConfigured

from simhash_filter import page_superseded
from simhash_filter.store import canonical_url

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler


class KeptPagesFile:
    """Stores the crawl's items by URL; a superseded page's item is replaced by its
    canonical copy's (runs after ``NearDuplicatePipeline``: priority above 250). Items are
    keyed by their URL's canonical form, the form the signal's URLs come in."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.items: dict[str, dict[str, Any]] = {}
        self.replaced: set[str] = set()  # superseded URLs: an item of theirs is not stored

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        path = crawler.settings.get("KEPT_PAGES_FILE")
        if not path:
            raise NotConfigured("KEPT_PAGES_FILE is not set")
        pipeline = cls(Path(path))
        crawler.signals.connect(pipeline.superseded, signal=page_superseded)
        crawler.signals.connect(pipeline.close, signal=signals.spider_closed)
        return pipeline

    def superseded(self, old_url: str, new_url: str, item: Any) -> None:
        """The page at ``old_url`` is now a copy of ``new_url``: forget its item (``item``,
        the new page's, comes through :meth:`process_item` next). The old item may not have
        got here yet (its callback or an earlier pipeline still busy with it): remembered, it
        is not stored when it comes."""
        self.items.pop(old_url, None)  # canonical form: canonical_url(item URL)
        self.replaced.add(old_url)

    def process_item(self, item: Any) -> Any:
        data = asdict(item) if is_dataclass(item) else ItemAdapter(item).asdict()
        data.pop("html", None)  # the file keeps what a store would index, not the page
        url = canonical_url(str(data["url"]))
        if url not in self.replaced:
            self.items[url] = data
        return item

    def close(self) -> None:
        with self.path.open("w", encoding="utf-8") as out:
            for data in self.items.values():
                out.write(json.dumps(data, ensure_ascii=False) + "\n")
