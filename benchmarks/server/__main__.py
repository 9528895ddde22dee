"""``python -m benchmarks.server``: see ``benchmarks.server.load``."""

import sys

from benchmarks.server.load import main

if __name__ == "__main__":
    sys.exit(main())
