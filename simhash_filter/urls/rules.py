"""One URL rule: a prediction that two URLs of a host show the same content.

A rule maps a URL to a smaller one (shorter, then lexicographically first), so rules never
cycle and every variant of a page reaches one form. The kinds (DUST, Bar-Yossef, Keidar &
Schonfeld, WWW 2007; pattern generalization as Koppula et al., WSDM 2010, and Lei et al.,
WWW 2010 describe, kept to one path scope so a rule stays conservative):

- ``tracking`` / ``session``: a universal parameter (:mod:`.universal`), pattern its name;
- ``param``: ``<scope>?<name>``: the parameter ``name`` does not change content on paths
  under ``scope`` (``/`` for the whole host), whatever its value; ``<scope>?<name>=<value>``:
  this one value does not (``?lang=en`` may be the default page while ``?lang=de`` is not);
- ``prefix``: ``<from> -> <to>``: a path starting with ``from`` is the path with ``to``
  instead (``/print/ -> /``, ``/amp/ -> /``, a mirror section ``/mirror/ -> /news/``);
- ``suffix``: ``<from> -> <to>``: a path ending with ``from`` (``/index.html -> /``, ``/amp -> ``);
  `` -> /`` adds the trailing slash to a path whose last segment is no file (the site's
  canonical hints name ``/news/x/``, not ``/news/x``);
- ``case``: ``<scope>``: paths under ``scope`` are the same page in lower case.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from .universal import SESSION, TRACKING

__all__ = [
    "CASE",
    "LEARNED_KINDS",
    "PARAM",
    "PREFIX",
    "RULE_KINDS",
    "SUFFIX",
    "RuleState",
    "UrlRule",
    "split_query",
]

PARAM = "param"
PREFIX = "prefix"
SUFFIX = "suffix"
CASE = "case"
LEARNED_KINDS = (PARAM, PREFIX, SUFFIX, CASE)
RULE_KINDS = (TRACKING, SESSION, *LEARNED_KINDS)
ARROW = " -> "


class RuleState(enum.Enum):
    """Where a rule stands: learned but unproven, skipping, stopped by a counterexample, or
    set by a user (pinned: always on, never retired; banned: never on)."""

    CANDIDATE = "candidate"
    ACTIVE = "active"
    RETIRED = "retired"
    PINNED = "pinned"
    BANNED = "banned"

    @property
    def skips(self) -> bool:
        """True when a rule in this state maps requests (active or pinned)."""
        return self in (RuleState.ACTIVE, RuleState.PINNED)


def split_query(query: str) -> list[tuple[str, str]]:
    """``a=1&b`` → ``[("a", "1"), ("b", "")]``, raw (no unescaping), order kept."""
    pairs = []
    for part in query.split("&"):
        if part:
            name, _, value = part.partition("=")
            pairs.append((name, value))
    return pairs


@dataclass(frozen=True, slots=True)
class UrlRule:
    """A rule of one host: ``kind`` (:data:`RULE_KINDS`) and ``pattern`` (the module doc)."""

    host: str
    kind: str
    pattern: str

    def __post_init__(self) -> None:
        if self.kind not in RULE_KINDS:
            raise ValueError(f"rule kind must be one of {', '.join(RULE_KINDS)}, got {self.kind!r}")
        if self.kind in (PREFIX, SUFFIX) and ARROW not in self.pattern:
            raise ValueError(f"a {self.kind} rule's pattern is 'FROM -> TO', got {self.pattern!r}")
        if self.kind == SUFFIX and self.pattern.startswith(ARROW) and self.pattern != ARROW + "/":
            raise ValueError(f"a suffix rule from nothing adds '/' only, got {self.pattern!r}")
        if self.kind == PARAM and "?" not in self.pattern:
            raise ValueError(f"a param rule's pattern is 'SCOPE?NAME', got {self.pattern!r}")

    @property
    def scope(self) -> str:
        """The path prefix a param or case rule applies under."""
        return self.pattern.partition("?")[0] if self.kind == PARAM else self.pattern

    @property
    def parameter(self) -> str:
        """The parameter a param rule removes."""
        return self.pattern.partition("?")[2].partition("=")[0]

    @property
    def value(self) -> str | None:
        """The one value a param rule removes (None: any value)."""
        name_value = self.pattern.partition("?")[2]
        return name_value.partition("=")[2] if "=" in name_value else None

    @property
    def reverse(self) -> UrlRule | None:
        """The prefix or suffix rule that maps the other way (None for other kinds): a rule
        and its reverse are never both in force, so rules never cycle."""
        if self.kind not in (PREFIX, SUFFIX):
            return None
        source, target = self.sides
        if self.kind == SUFFIX and not target and source != "/":
            return None  # `/amp -> ` reversed would add `/amp` to every path: never a rule
        return UrlRule(self.host, self.kind, f"{target}{ARROW}{source}")

    @property
    def sides(self) -> tuple[str, str]:
        """(from, to) of a prefix or suffix rule."""
        source, _, target = self.pattern.partition(ARROW)
        return source, target

    def apply_path(self, path: str) -> str:
        """The path this rule maps ``path`` to (itself when the rule does not apply)."""
        if self.kind == CASE:
            return path.lower() if path.startswith(self.scope) else path
        if self.kind == PREFIX:
            source, target = self.sides
            return target + path[len(source) :] if path.startswith(source) else path
        if self.kind == SUFFIX:
            source, target = self.sides
            if not source:  # `` -> /``: the trailing slash added, to a path that is no file
                last = path[path.rfind("/") + 1 :]
                return path if not last or "." in last else path + target
            if path.endswith(source) and len(path) > len(source):
                return (path[: len(path) - len(source)] + target) or "/"
        return path

    def apply_query(self, path: str, pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """The query pairs without this param rule's parameter (when it applies)."""
        if self.kind != PARAM or not path.startswith(self.scope):
            return pairs
        name, value = self.parameter, self.value
        return [
            pair for pair in pairs if pair[0] != name or (value is not None and pair[1] != value)
        ]

    def describe(self) -> str:
        """``host kind pattern``, as the command line shows a rule."""
        return f"{self.host} {self.kind} {self.pattern}"
