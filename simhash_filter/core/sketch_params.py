"""The MinHash sketch's parameters (:mod:`.sketch` computes it): what a fingerprint spec names
and what a crawler process needs to know of a sketch without computing one, so that it never
imports NumPy (issue 45)."""

from __future__ import annotations

__all__ = ["DEFAULT_SLOTS", "SHINGLE", "SKETCH_SEED", "check_slots"]

SHINGLE = 5
"""Characters per shingle."""
DEFAULT_SLOTS = 256
"""Bins of a sketch (a power of two); the estimate's standard error is sqrt(J(1-J)/slots)."""
SKETCH_SEED = 0x51C3
"""Seed of the shingle hash (unrelated to the simhash's mmh3 seed)."""


def check_slots(slots: int) -> None:
    """ValueError unless ``slots`` is a power of two between 1 and 65536."""
    if slots < 1 or slots & (slots - 1) or slots > 1 << 16:
        raise ValueError(f"slots must be a power of two between 1 and 65536, got {slots}")
