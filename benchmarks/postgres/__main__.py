"""``python -m benchmarks.postgres``: see ``benchmarks.postgres.compare``."""

from benchmarks.postgres.compare import main

if __name__ == "__main__":
    main()
