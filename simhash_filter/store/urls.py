"""Database URLs, and how they may be shown (a page URL's keys are ``urls/key.py``'s).

A database URL is shown (in messages, logs, ``stats``) only through :func:`display_url`,
which hides every credential it can carry: the password of its userinfo and the values of
query parameters named like secrets (``password=``, ``sslpassword=``, ``token=``, ``api_key=`` ...).
:func:`redact` does the same to any message that might quote them.
"""

from __future__ import annotations

import re
from urllib.parse import quote, quote_plus, unquote, urlsplit

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

DEFAULT_DATABASE_URL = "sqlite:///dedup.db"
"""The database of a crawl and of the command line when none is named."""


def database_url(value: str) -> str:
    """A SQLAlchemy URL as given, or a plain path (no ``://``) as the URL of a SQLite file
    at that path: the crawl's ``SIMHASH_FILTER_DATABASE_URL`` and the command line's
    ``--db`` take either."""
    if "://" in value:
        return value
    return f"sqlite:///{value}"


HIDDEN = "***"
_SECRET_PARAMETER = re.compile(
    r"pass|pwd|secret|token|key|auth|credential|signature|sig$", re.IGNORECASE
)


def _parsed(url: str | URL) -> URL | None:
    try:
        return make_url(url)
    except (ArgumentError, ValueError, TypeError):
        return None


def _is_secret(parameter: str) -> bool:
    return _SECRET_PARAMETER.search(parameter) is not None


def display_url(url: str | URL) -> str:
    """The database URL as safe to log or show: its password and the values of
    secret-like query parameters are replaced by ``***``."""
    parsed = _parsed(url)
    if parsed is None:
        return "<unparseable database URL>"
    query = {
        name: ((HIDDEN,) * len(value) if isinstance(value, tuple) else HIDDEN)
        if _is_secret(name)
        else value
        for name, value in parsed.query.items()
    }
    shown = parsed.set(query=query).render_as_string(hide_password=True)
    return shown.replace(quote(HIDDEN, safe=""), HIDDEN)  # (the query is percent-encoded)


def url_secrets(url: str | URL) -> list[str]:
    """Every credential in a database URL (its password, secret-like query values), in
    the forms a message might quote them: as given and percent-encoded."""
    parsed = _parsed(url)
    found: list[str] = []
    if parsed is not None:
        if parsed.password:
            found.append(str(parsed.password))
        for name, value in parsed.query.items():
            if _is_secret(name):
                found.extend([value] if isinstance(value, str) else value)
    elif isinstance(url, str):  # unparseable: whatever sits where a password would
        userinfo = urlsplit(url).netloc.rpartition("@")[0] if "://" in url else ""
        if ":" in userinfo:
            found.append(userinfo.split(":", 1)[1])
    forms = {form for secret in found if secret for form in _forms(secret)}
    return sorted(forms, key=len, reverse=True)  # longest first: no partial replacement


def _forms(secret: str) -> set[str]:
    return {secret, quote(secret, safe=""), quote_plus(secret), unquote(secret)}


def redact(message: str, url: str | URL | None) -> str:
    """``message`` with every credential of ``url`` replaced by ``***``."""
    if url is None:
        return message
    for secret in url_secrets(url):
        message = message.replace(secret, HIDDEN)
    return message
