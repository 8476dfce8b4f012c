"""PostgreSQL write path benchmark: the command; the code is in :mod:`bench.pg`."""

import sys

from bench.pg.main import main

if __name__ == "__main__":
    sys.exit(main())
