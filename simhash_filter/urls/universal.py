"""Universal URL rules: tracking and session parameters, the same on every site.

A parameter is *tracking* when it names where a visitor came from (``utm_*``, click ids) and
*session* when it names the visitor's session; neither selects the page's content, so a URL
without them is the same page. The names are the exact-name part of courlan's tracker list
(trafilatura's URL library, which follows AdGuard's and ClearURLs' lists), measured on the
links of real pages before becoming a default (docs/requests.md says why each is in or out);
courlan's fuzzy part (any name containing ``ref``, ``source``, ``cid``, ``uid``) is left out:
those names select content on many sites. ``sid`` is taken only when its value looks like a
session token (long, letters and digits), so ``?sid=3`` (a section id) stays.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "SESSION",
    "SESSION_PARAMETERS",
    "TRACKING",
    "TRACKING_PARAMETERS",
    "TRACKING_PREFIXES",
    "UniversalParameter",
    "classify_parameter",
    "looks_like_session_token",
]

TRACKING = "tracking"
SESSION = "session"

TRACKING_PARAMETERS = frozenset(
    {
        # click ids of ad networks (courlan: ^(dc|fbc|gc|twc|yc|ysc)lid, ^(gbra|msclk|wbra|igsh)id)
        "dclid",
        "fbclid",
        "gclid",
        "gclsrc",
        "twclid",
        "yclid",
        "ysclid",
        "msclkid",
        "gbraid",
        "wbraid",
        "igshid",
        "ttclid",
        "li_fat_id",
        # analytics hand-offs and mail campaigns
        "_ga",
        "_gl",
        "_hsenc",
        "_hsmi",
        "mc_cid",
        "mc_eid",
        "mkt_tok",
        "oly_anon_id",
        "oly_enc_id",
        "vero_id",
        "vero_conv",
        "srsltid",
    }
)
"""Tracking parameters by exact (lower-case) name."""

TRACKING_PREFIXES = ("utm_", "pk_", "mtm_", "itm_", "ga_")
"""Tracking parameters by prefix (Google Analytics ``utm_``, Matomo/Piwik ``pk_``/``mtm_``,
internal campaign ``itm_``)."""

SESSION_PARAMETERS = frozenset(
    {"jsessionid", "phpsessid", "sessionid", "session_id", "aspsessionid", "cfid", "cftoken"}
)
"""Session parameters by exact (lower-case) name: the value is the session, whatever it is."""

_TOKEN = re.compile(r"[0-9A-Za-z_-]{16,}")


@dataclass(frozen=True, slots=True)
class UniversalParameter:
    """A universal rule that applies to one parameter: its kind (tracking or session) and the
    name under which it is recorded (``utm_*`` for every ``utm_`` parameter)."""

    kind: str
    name: str


def looks_like_session_token(value: str) -> bool:
    """A value that can only be a session: 16 or more letters, digits, ``-``/``_``, with both
    letters and digits (``sid=7``, ``sid=news`` are section ids, not sessions)."""
    if _TOKEN.fullmatch(value) is None:
        return False
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def classify_parameter(name: str, value: str) -> UniversalParameter | None:
    """The universal rule ``name=value`` falls under, or None (a parameter that may select
    content). ``name`` is compared lower-cased."""
    lower = name.lower()
    if lower in TRACKING_PARAMETERS:
        return UniversalParameter(TRACKING, lower)
    if lower.startswith(TRACKING_PREFIXES):
        return UniversalParameter(TRACKING, lower[: lower.index("_") + 1] + "*")
    if lower in SESSION_PARAMETERS or lower.startswith("aspsessionid"):
        return UniversalParameter(SESSION, "aspsessionid" if lower.startswith("asp") else lower)
    if lower in ("sid", "s_id", "sess") and looks_like_session_token(value):
        return UniversalParameter(SESSION, lower)
    return None
