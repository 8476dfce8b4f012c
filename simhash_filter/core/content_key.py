"""A page's exact-content key, and the signature that only a byte-identical page matches.

A page with too little text gets no fingerprint of its text (an empty page must not collide
with every other empty page), but an exact copy of it under another URL is still a copy
(DESIGN.md, invariant 2). :func:`content_key` hashes the page's bytes with runs of ASCII
white space collapsed (re-indented markup, ``\\r\\n`` line ends and a trailing newline make
no copy new); :func:`exact_signature` turns the key into a :class:`PageSignature` whose
simhash and sketch slots are drawn from the key itself: two pages with one key share every
slot (similarity 1.0, every band key), two pages with different keys share a slot with
probability 2^-16 each, so they are never candidates of each other, nor of a page signed by
its text. The store needs nothing new: the key rides through the ordinary check-and-add,
atomic as any other page.
"""

from __future__ import annotations

import hashlib

from .signature import PageSignature, encode_slots
from .sketch_params import DEFAULT_SLOTS

__all__ = ["KEY_BYTES", "content_key", "exact_signature"]

KEY_BYTES = 16
"""Bytes of a content key (BLAKE2b-128: no accidental collision among any number of pages a
crawl will see)."""


def content_key(body: bytes | str) -> bytes:
    """The exact-content key of a page's body (bytes as received, or a text)."""
    data = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body
    return hashlib.blake2b(b" ".join(data.split()), digest_size=KEY_BYTES).digest()


def exact_signature(key: bytes, slots: int = DEFAULT_SLOTS) -> PageSignature:
    """A signature drawn from ``key`` alone (:attr:`PageSignature.exact`): simhash and sketch
    slots from SHAKE-256 of the key, text length 0."""
    stream = hashlib.shake_256(b"simhash-filter exact content\0" + key).digest(8 + 2 * slots)
    fingerprint = int.from_bytes(stream[:8], "little")
    return PageSignature(fingerprint, encode_slots(stream[8:]), 0, exact=True)
