"""A library's warning in a command's output is one line, never a traceback.

asyncpg's pool logs a warning with the whole exception (``exc_info``) while it cannot
reconnect, e.g. during a PostgreSQL restart: through Python's last-resort handler every
``orchestra worker`` printed a 15-line traceback for it.
"""

from __future__ import annotations

import logging

import pytest
import structlog

from orchestra.cli.main import _configure_logging


@pytest.fixture(autouse=True)
def _restore_logging() -> object:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield None
    root.handlers, root.level = handlers, level
    structlog.reset_defaults()


def test_a_librarys_warning_with_an_exception_is_one_line(
        capsys: pytest.CaptureFixture[str]) -> None:
    _configure_logging(verbose=False)
    try:
        raise ConnectionError("the database system is shutting down")
    except ConnectionError:
        logging.getLogger("asyncpg.pool").warning(
            "Failed to restore the pool connection floor; retrying", exc_info=True)
    logging.getLogger("asyncpg.pool").info("not shown below warning")
    err = capsys.readouterr().err
    assert err.splitlines() == [
        "[warning ] Failed to restore the pool connection floor; retrying "
        'logger=asyncpg.pool error="ConnectionError: the database system is shutting down"']
    assert "Traceback" not in err
