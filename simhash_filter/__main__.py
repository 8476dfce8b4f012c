"""``python -m simhash_filter``: the ``simhash-filter`` command line."""

from __future__ import annotations

import sys

from simhash_filter.cli import main

if __name__ == "__main__":
    sys.exit(main())
