"""The ``SIMHASH_FILTER_*`` settings, read and validated once into a frozen :class:`Config`.

``from_crawler`` of the pipeline and of the middleware is the only place that calls
:meth:`Config.from_settings`; everything downstream receives plain values. A bad value
raises ``ValueError`` naming the setting, so a typo in ``settings.py`` or ``-s`` stops the
crawl at start-up instead of silently filtering with the wrong options.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from simhash_filter.core.fingerprint import Fingerprinter
from simhash_filter.core.keep import KEEP_CANONICAL, KEEP_POLICIES
from simhash_filter.core.signature import MatchRule
from simhash_filter.core.template import DEFAULT_MIN_PAGES
from simhash_filter.index.defaults import (
    IndexChoice,
    IndexSettings,
    default_candidate_distance,
    index_settings,
)
from simhash_filter.index.schemes import INDEX_KINDS, IndexScheme, default_index
from simhash_filter.page.limits import DEFAULT_MAX_BYTES
from simhash_filter.page.pool import (
    DEFAULT_PAGE_TIMEOUT,
    DEFAULT_WORKER_NICENESS,
    MAX_NICENESS,
    default_workers,
)
from simhash_filter.store.faults import DEFAULT_LOCK_TIMEOUT, DEFAULT_OUTAGE_RETRY, WaitBounds
from simhash_filter.store.urls import DEFAULT_DATABASE_URL, database_url

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

    from simhash_filter.store import FingerprintStore, StoreOptions

__all__ = ["PREFIX", "Config", "SettingsError", "UnknownSetting", "unknown_settings"]

PREFIX = "SIMHASH_FILTER_"
_BITS = 64
_NONE_STRINGS = frozenset({"", "none", "null"})
_DEFAULT_RULE = MatchRule()


class SettingsError(ValueError):
    """A ``SIMHASH_FILTER_*`` setting with a bad value; the message names it (one line)."""


@dataclass(frozen=True, slots=True)
class UnknownSetting:
    """A ``SIMHASH_FILTER_*`` name no setting has, and the known name nearest to it."""

    name: str
    nearest: str | None


def _name(key: str) -> str:
    return PREFIX + key


def _raw(settings: BaseSettings, key: str) -> Any:
    return settings.get(_name(key))


def _bool(settings: BaseSettings, key: str, default: bool) -> bool:
    if _raw(settings, key) is None:
        return default
    try:
        return bool(settings.getbool(_name(key), default))
    except ValueError:
        raise ValueError(
            f"{_name(key)} must be a boolean (True/False, 1/0), got {_raw(settings, key)!r}"
        ) from None


def _optional_bool(settings: BaseSettings, key: str) -> bool | None:
    value = _raw(settings, key)
    if value is None or (isinstance(value, str) and value.strip().lower() in _NONE_STRINGS):
        return None
    return _bool(settings, key, False)


def _optional_int(settings: BaseSettings, key: str, *, minimum: int) -> int | None:
    value = _raw(settings, key)
    if value is None or (isinstance(value, str) and value.strip().lower() in _NONE_STRINGS):
        return None
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError(f"{_name(key)} must be an integer, got {value!r}")
    try:
        number = int(value)
    except ValueError:
        raise ValueError(f"{_name(key)} must be an integer, got {value!r}") from None
    if number < minimum:
        raise ValueError(f"{_name(key)} must be >= {minimum}, got {number}")
    return number


def _int(settings: BaseSettings, key: str, default: int, *, minimum: int) -> int:
    number = _optional_int(settings, key, minimum=minimum)
    return default if number is None else number


def _float(settings: BaseSettings, key: str, default: float) -> float:
    value = _raw(settings, key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"{_name(key)} must be a number, got {value!r}")
    try:
        return float(value)
    except ValueError:
        raise ValueError(f"{_name(key)} must be a number, got {value!r}") from None


def _optional_float(settings: BaseSettings, key: str) -> float | None:
    return None if _raw(settings, key) is None else _float(settings, key, 0.0)


def _optional_str(settings: BaseSettings, key: str) -> str | None:
    value = _raw(settings, key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"{_name(key)} must be a string, got {value!r}")
    value = value.strip()
    return None if value.lower() in _NONE_STRINGS else value


def _str(settings: BaseSettings, key: str, default: str) -> str:
    value = _optional_str(settings, key)
    return default if value is None else value


@dataclass(frozen=True, slots=True)
class Config:
    """Every ``SIMHASH_FILTER_*`` setting, validated. Field names drop the prefix."""

    enabled: bool = True
    database_url: str = DEFAULT_DATABASE_URL
    max_distance: int | None = None  # k1, simhash bits to a candidate; None: the index's
    min_similarity: float | None = None  # the sketches' verdict; None: the database's own
    index: str | None = None  # None: the database's own, else minhash-lsh
    blocks: int | None = None  # None: the database's own, else the index kind's default
    text_field: str = "text"
    html_field: str = "html"
    url_field: str = "url"
    min_tokens: int | None = None  # None: the Fingerprinter's default
    weighting: str | None = None
    top_n: int | None = None
    fingerprint_field: str | None = None
    debug: bool = False
    fail_open: bool = True
    durable: bool | None = None  # None: each back-end's default (StoreOptions.durable)
    max_bytes: int = DEFAULT_MAX_BYTES
    middleware: bool = False  # read by the add-on: also enable NearDuplicateMiddleware
    segmenter: str | None = None  # None: the Fingerprinter's default (jieba)
    workers: int | None = None  # None: default_workers() (0: the page work runs in threads)
    page_timeout: float = DEFAULT_PAGE_TIMEOUT  # seconds of page work in a worker at most
    worker_niceness: int = DEFAULT_WORKER_NICENESS  # how much nicer than the crawl workers run
    store_text: bool = False  # keep each page's main text (compressed, capped) for audits
    add_text: bool = False  # the main text into passing items (TEXT_FIELD): an importable feed
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT  # seconds a check waits for a lock at most
    outage_retry: float = DEFAULT_OUTAGE_RETRY  # seconds a check retries a server gone away
    request_filter: bool = True  # fingerprint requests by their canonical form (URL rules)
    universal_rules: bool = True  # tracking and session parameters are rules on every host
    rule_min_support: int = 3  # supporting pairs before a learned rule skips requests
    rule_sample: int = 20  # 1 in N of a rule's predictions is still fetched and checked
    form_first: bool = True  # a mapped variant's download fetches its form's URL instead
    keep: str = KEEP_CANONICAL  # which copy stays: "canonical", "supersede" or "first"
    canonical_field: str = "canonical"  # item field with the page's declared canonical URL
    canonical_url_field: str | None = "canonical_url"  # set on kept items: their canonical
    variants_last: bool = False  # likely variants' requests one priority step down
    views_wait: bool = True  # a view (print/amp/mirror path) declaring nothing waits for its page
    remove_html: bool = True  # the HTML field leaves a passing item (feed exports take no bytes)
    template_min_pages: int = DEFAULT_MIN_PAGES  # pages of a host a template block is on (0: off)

    def __post_init__(self) -> None:
        if self.max_distance is not None and not 0 <= self.max_distance <= _BITS:
            raise ValueError(
                f"{_name('MAX_DISTANCE')} must be between 0 and {_BITS}, got {self.max_distance}"
            )
        if self.min_similarity is not None and (
            isinstance(self.min_similarity, bool) or not 0.0 <= self.min_similarity <= 1.0
        ):
            raise ValueError(
                f"{_name('MIN_SIMILARITY')} must be a number between 0 and 1, "
                f"got {self.min_similarity}"
            )
        if self.index is not None and self.index not in INDEX_KINDS:
            raise ValueError(
                f"{_name('INDEX')} must be one of {', '.join(INDEX_KINDS)}, got {self.index!r}"
            )
        try:
            self.scheme()
        except ValueError as exc:
            raise ValueError(
                f"{_name('BLOCKS')}={self.blocks} does not fit {_name('MAX_DISTANCE')}="
                f"{self.effective_max_distance} with the "
                f"{self.index or default_index(self.effective_max_distance, sketches=True)} "
                f"index: {exc}"
            ) from None
        if not self.database_url:
            raise ValueError(f"{_name('DATABASE_URL')} must not be empty")
        for key, value in (
            ("TEXT_FIELD", self.text_field),
            ("HTML_FIELD", self.html_field),
            ("URL_FIELD", self.url_field),
        ):
            if not value:
                raise ValueError(f"{_name(key)} must name an item field, got {value!r}")
        if self.keep not in KEEP_POLICIES:
            raise ValueError(
                f"{_name('KEEP')} must be one of {', '.join(map(repr, KEEP_POLICIES))}, "
                f"got {self.keep!r}"
            )
        if not self.canonical_field:
            raise ValueError(f"{_name('CANONICAL_FIELD')} must name an item field, got ''")
        if self.max_bytes < 1:
            raise ValueError(f"{_name('MAX_BYTES')} must be >= 1, got {self.max_bytes}")
        if self.workers is not None and self.workers < 0:
            raise ValueError(f"{_name('WORKERS')} must be >= 0, got {self.workers}")
        if not 0 <= self.worker_niceness <= MAX_NICENESS:
            raise ValueError(
                f"{_name('WORKER_NICENESS')} must be between 0 and {MAX_NICENESS}, "
                f"got {self.worker_niceness}"
            )
        if not (0 < self.lock_timeout < float("inf")):
            raise ValueError(
                f"{_name('LOCK_TIMEOUT')} must be a number of seconds > 0, got {self.lock_timeout}"
            )
        if not (0 <= self.outage_retry < float("inf")):
            raise ValueError(
                f"{_name('OUTAGE_RETRY')} must be a number of seconds >= 0, got {self.outage_retry}"
            )
        if self.rule_min_support < 1:
            raise ValueError(
                f"{_name('RULE_MIN_SUPPORT')} must be >= 1, got {self.rule_min_support}"
            )
        if self.rule_sample < 1:
            raise ValueError(f"{_name('RULE_SAMPLE')} must be >= 1, got {self.rule_sample}")
        if not (0 < self.page_timeout < float("inf")):
            raise ValueError(
                f"{_name('PAGE_TIMEOUT')} must be a number of seconds > 0, got {self.page_timeout}"
            )

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> Config:
        """Read and validate every ``SIMHASH_FILTER_*`` setting (a :class:`SettingsError`,
        a ValueError, names the bad one)."""
        try:
            return cls._read(settings)
        except SettingsError:
            raise
        except ValueError as exc:
            raise SettingsError(str(exc)) from None

    @classmethod
    def _read(cls, settings: BaseSettings) -> Config:
        defaults = cls()
        config = cls(
            enabled=_bool(settings, "ENABLED", defaults.enabled),
            database_url=database_url(_str(settings, "DATABASE_URL", defaults.database_url)),
            max_distance=_optional_int(settings, "MAX_DISTANCE", minimum=0),
            min_similarity=_optional_float(settings, "MIN_SIMILARITY"),
            index=_optional_str(settings, "INDEX"),
            blocks=_optional_int(settings, "BLOCKS", minimum=1),
            text_field=_str(settings, "TEXT_FIELD", defaults.text_field),
            html_field=_str(settings, "HTML_FIELD", defaults.html_field),
            url_field=_str(settings, "URL_FIELD", defaults.url_field),
            min_tokens=_optional_int(settings, "MIN_TOKENS", minimum=1),
            weighting=_optional_str(settings, "WEIGHTING"),
            top_n=_optional_int(settings, "TOP_N", minimum=1),
            fingerprint_field=_optional_str(settings, "FINGERPRINT_FIELD"),
            debug=_bool(settings, "DEBUG", defaults.debug),
            fail_open=_bool(settings, "FAIL_OPEN", defaults.fail_open),
            durable=_optional_bool(settings, "DURABLE"),
            max_bytes=_int(settings, "MAX_BYTES", defaults.max_bytes, minimum=1),
            middleware=_bool(settings, "MIDDLEWARE", defaults.middleware),
            segmenter=_optional_str(settings, "SEGMENTER"),
            workers=_optional_int(settings, "WORKERS", minimum=0),
            page_timeout=_float(settings, "PAGE_TIMEOUT", defaults.page_timeout),
            worker_niceness=_int(settings, "WORKER_NICENESS", defaults.worker_niceness, minimum=0),
            store_text=_bool(settings, "STORE_TEXT", defaults.store_text),
            add_text=_bool(settings, "ADD_TEXT", defaults.add_text),
            lock_timeout=_float(settings, "LOCK_TIMEOUT", defaults.lock_timeout),
            outage_retry=_float(settings, "OUTAGE_RETRY", defaults.outage_retry),
            request_filter=_bool(settings, "REQUEST_FILTER", defaults.request_filter),
            universal_rules=_bool(settings, "UNIVERSAL_RULES", defaults.universal_rules),
            rule_min_support=_int(
                settings, "RULE_MIN_SUPPORT", defaults.rule_min_support, minimum=1
            ),
            rule_sample=_int(settings, "RULE_SAMPLE", defaults.rule_sample, minimum=1),
            form_first=_bool(settings, "FORM_FIRST", defaults.form_first),
            keep=_str(settings, "KEEP", defaults.keep).lower(),
            canonical_field=_str(settings, "CANONICAL_FIELD", defaults.canonical_field),
            canonical_url_field=_optional_str(settings, "CANONICAL_URL_FIELD")
            if _raw(settings, "CANONICAL_URL_FIELD") is not None
            else defaults.canonical_url_field,
            remove_html=_bool(settings, "REMOVE_HTML", defaults.remove_html),
            template_min_pages=_int(
                settings, "TEMPLATE_MIN_PAGES", defaults.template_min_pages, minimum=0
            ),
            variants_last=_bool(settings, "VARIANTS_LAST", defaults.variants_last),
            views_wait=_bool(settings, "VIEWS_WAIT", defaults.views_wait),
        )
        config.make_fingerprinter()  # validates MIN_TOKENS, WEIGHTING, TOP_N together
        return config

    def index_choice(self) -> IndexChoice:
        """What ``INDEX``, ``MAX_DISTANCE``, ``BLOCKS`` and ``MIN_SIMILARITY`` name of the
        index and rule (the rest is :mod:`simhash_filter.index.defaults`')."""
        return IndexChoice(self.index, self.max_distance, self.blocks, self.similarity)

    @property
    def similarity(self) -> float:
        """``MIN_SIMILARITY``, or the default rule's (a new database's; an existing one
        keeps its own when the setting is not given)."""
        if self.min_similarity is None:
            return _DEFAULT_RULE.min_similarity
        return self.min_similarity

    def index_settings(self) -> IndexSettings:
        """The index scheme and match rule of a new database made with these settings."""
        return index_settings(self.index_choice())

    @property
    def effective_index(self) -> str:
        """The index kind of a new database (``INDEX``, default minhash-lsh: the crawl's
        rule confirms candidates with sketches)."""
        return self.index_settings().scheme.kind

    @property
    def effective_max_distance(self) -> int:
        """k1 (``MAX_DISTANCE``; default: any distance under the minhash-lsh index, whose
        bands find the candidates, and 9 under the simhash indexes, which need a radius)."""
        if self.max_distance is not None:
            return self.max_distance
        return default_candidate_distance(self.index)

    def scheme(self) -> IndexScheme:
        """The index scheme a new database gets from these settings (an existing one keeps
        its own index kind and blocks unless ``INDEX``/``BLOCKS`` ask for others)."""
        return self.index_settings().scheme

    @property
    def effective_blocks(self) -> int:
        """The number of blocks of :meth:`scheme` (``BLOCKS``, default: the index kind's)."""
        return self.scheme().n_blocks

    def match_rule(self) -> MatchRule:
        """The match rule: candidates within ``MAX_DISTANCE`` bits, confirmed when the
        sketches estimate at least ``MIN_SIMILARITY``; a page without a sketch is judged
        by the simhash alone within the rule's fallback distance (at most ``MAX_DISTANCE``)."""
        rule = self.index_settings().rule
        assert rule is not None  # the crawl's rule confirms with sketches
        return rule

    def store_options(self, spec: str) -> StoreOptions:
        """How the crawl opens its store for fingerprints made under ``spec``: made when it
        is not there with :meth:`index_settings`. An existing one keeps its own index and
        blocks unless ``INDEX`` or ``BLOCKS`` name others; ``MIN_SIMILARITY`` may differ
        from its own (the stored sketches answer any threshold). Every write waits
        ``LOCK_TIMEOUT`` for a lock and retries an outage ``OUTAGE_RETRY`` at most."""
        from simhash_filter.store import StoreOptions

        return StoreOptions(
            spec,
            max_distance=self.max_distance,
            min_similarity=self.similarity,
            own_similarity=self.min_similarity is None,
            index=self.index,
            blocks=self.blocks,
            durable=self.durable,
            bounds=WaitBounds(self.lock_timeout, self.outage_retry),
        )

    def open_store(self, spec: str) -> FingerprintStore:
        """The store at ``DATABASE_URL``, opened with :meth:`store_options`."""
        from simhash_filter.store import FingerprintStore

        return FingerprintStore.open(self.database_url, self.store_options(spec))

    @property
    def effective_workers(self) -> int:
        """The number of page worker processes (``WORKERS``, default
        :func:`~simhash_filter.page.pool.default_workers`); 0 is the thread path."""
        return default_workers() if self.workers is None else self.workers

    def fingerprinter_options(self) -> dict[str, Any]:
        """The keyword options for :class:`Fingerprinter` that the settings override."""
        options: dict[str, Any] = {}
        if self.min_tokens is not None:
            options["min_tokens"] = self.min_tokens
        if self.weighting is not None:
            options["weighting"] = self.weighting
        if self.top_n is not None:
            options["top_n"] = self.top_n
        if self.segmenter is not None:
            options["segmenter"] = self.segmenter
        return options

    def make_fingerprinter(self) -> Fingerprinter:
        """A :class:`Fingerprinter` with these options (ValueError names the setting at fault)."""
        try:
            return Fingerprinter(**self.fingerprinter_options())
        except ValueError as exc:
            names = ", ".join(
                _name(key)
                for key, value in (
                    ("MIN_TOKENS", self.min_tokens),
                    ("WEIGHTING", self.weighting),
                    ("TOP_N", self.top_n),
                    ("SEGMENTER", self.segmenter),
                )
                if value is not None
            )
            raise ValueError(f"{names}: {exc}") from exc


SETTING_NAMES = frozenset(_name(f.name.upper()) for f in fields(Config))
"""Every ``SIMHASH_FILTER_*`` setting :class:`Config` reads (its fields, upper-cased)."""


def unknown_settings(settings: BaseSettings) -> list[UnknownSetting]:
    """The ``SIMHASH_FILTER_*`` names in ``settings`` that no setting has (a typo is
    otherwise silently ignored), each with the nearest known name (difflib), sorted."""
    unknown = sorted(
        name
        for name in settings.attributes
        if isinstance(name, str) and name.startswith(PREFIX) and name not in SETTING_NAMES
    )
    keys = sorted(name[len(PREFIX) :] for name in SETTING_NAMES)
    return [UnknownSetting(name, _nearest(name[len(PREFIX) :], keys)) for name in unknown]


def _nearest(key: str, keys: list[str]) -> str | None:
    """The known setting whose name (after the prefix) is closest to ``key``, if any is."""
    found = difflib.get_close_matches(key, keys, n=1)
    return _name(found[0]) if found else None
