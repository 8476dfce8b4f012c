"""A page's main text as the store keeps it when ``SIMHASH_FILTER_STORE_TEXT`` is on:
capped at :data:`MAX_TEXT_BYTES` of UTF-8 and zlib-compressed.

Pure functions (no I/O): the crawl packs the text where it computes the signature (in
the page workers too), the store keeps the bytes as they are, and the command line and
the report unpack them. zlib because the standard library has it everywhere; a stream
starts with its own header byte (``0x78``), so another codec can be told apart later.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

__all__ = ["MAX_TEXT_BYTES", "StoredText", "cap_text", "pack_text", "unpack_text"]

MAX_TEXT_BYTES = 64 * 1024
"""UTF-8 bytes of a page's main text kept at most (the rest is cut, and marked so)."""
_LEVEL = 6  # zlib's default: within 10% of level 9's size at a third of its time
_TRUNCATED = b"\x00"  # a trailing marker after the text: it was cut (text never has NUL)


@dataclass(frozen=True, slots=True)
class StoredText:
    """A stored text: the (possibly cut) text, and whether it was cut."""

    text: str
    truncated: bool


def cap_text(text: str, limit: int = MAX_TEXT_BYTES) -> tuple[bytes, bool]:
    """``text`` as UTF-8, cut to at most ``limit`` bytes on a character boundary, and
    whether it was cut. NUL characters are dropped (they mark a cut text)."""
    data = text.replace("\x00", "").encode("utf-8", errors="replace")
    if len(data) <= limit:
        return data, False
    return data[:limit].decode("utf-8", errors="ignore").encode("utf-8"), True


def pack_text(text: str, limit: int = MAX_TEXT_BYTES) -> bytes:
    """The stored form of ``text``: capped (:func:`cap_text`), then zlib-compressed."""
    data, truncated = cap_text(text, limit)
    return zlib.compress(data + _TRUNCATED if truncated else data, _LEVEL)


def unpack_text(blob: bytes) -> StoredText:
    """The text :func:`pack_text` stored (ValueError for bytes it did not make)."""
    try:
        data = zlib.decompress(bytes(blob))
    except zlib.error as exc:
        raise ValueError(f"not a stored text: {exc}") from None
    truncated = data.endswith(_TRUNCATED)
    if truncated:
        data = data[: -len(_TRUNCATED)]
    return StoredText(data.decode("utf-8", errors="replace"), truncated)
