"""A held-out kata set: specs written without reading ``agents/``, hidden tests, references.

Layout (as in ``../shared/katas-external``): ``specs/NAME.md``,
``hidden/test_hidden_NAME.py``, ``hidden/COUNTS`` and ``reference/*.py``. The
references exist only to validate the hidden tests (``python -m
benchmarks.katas_heldout.validate``); a pipeline is given the spec alone.
"""
