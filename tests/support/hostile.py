"""A fingerprinter whose page work never ends, in C code that holds the GIL (a catastrophic
regular expression): for the tests that a worker ends, mid-page, when its crawler dies or its
page budget is spent. Importable by the worker processes (they get the tests' ``sys.path``)."""

from __future__ import annotations

import re

from simhash_filter.core.fingerprint import Fingerprinter
from simhash_filter.core.signature import PageSignature

__all__ = ["SPIN", "SpinningFingerprinter"]

SPIN = "spin forever"
"""A page text that :class:`SpinningFingerprinter` never finishes signing."""


class SpinningFingerprinter(Fingerprinter):
    """Signs as :class:`Fingerprinter` does, but spins forever on the text :data:`SPIN`."""

    def sign(
        self,
        text: str,
        *,
        page_text: str | None = None,
        listing: bool = False,
        unsure: bool = False,
    ) -> PageSignature | None:
        if text == SPIN:
            re.match(r"(a+)+$", "a" * 64 + "b")  # exponential backtracking, GIL held
        return super().sign(text, page_text=page_text, listing=listing, unsure=unsure)
