"""The examples a spec states become tests the pipeline writes itself, read strictly."""

from __future__ import annotations

from agents.speccases import CASE_PREFIX, SpecCase, add_cases, render_cases, spec_cases

API = ["tokenize(text: str) -> list[str]", "evaluate(text: str) -> int"]


def test_calls_with_their_results_are_cases() -> None:
    section = ('- `tokenize("1+2") == ["1", "+", "2"]`; `tokenize("") -> []`.\n'
               '- tokenize(" 7 ") => ["7"], and `evaluate("1 / 0")` raises '
               '`ZeroDivisionError`.\n')
    assert spec_cases(section, API) == [
        SpecCase("tokenize('1+2')", "['1', '+', '2']"), SpecCase("tokenize('')", "[]"),
        SpecCase("tokenize(' 7 ')", "['7']"),
        SpecCase("evaluate('1 / 0')", error="ZeroDivisionError")]


def test_examples_told_in_sentences_are_not_read() -> None:
    """What a sentence means is left to the model's tests and to running code (issue
    46): each of these once became a trusted test, and some were read wrong."""
    section = ('- `tokenize("x")` is `["x"]`; `"aaab"` becomes `"3a1b"`.\n'
               '- A malformed expression raises `ValueError`: `""`, `"1 +"`.\n'
               '- `evaluate("2")` returns `2`, and `evaluate("3")` is not `4`.\n')
    assert spec_cases(section, API) == []


def test_doctest_sessions_and_tables_are_cases() -> None:
    section = ('```\n>>> evaluate("1 + 2")\n3\n```\n\n| text | evaluate(text) |\n'
               '|---|---|\n| `"2 * 3"` | `6` |\n')
    assert spec_cases(section, API) == [SpecCase('evaluate("1 + 2")', "3"),
                                        SpecCase("evaluate('2 * 3')", "6")]


def test_a_docstrings_last_example_ends_at_its_closing_quotes() -> None:
    """A doctest session inside a docstring (every HumanEval prompt) ends at the closing
    quotes, not only at a blank line: its last example was read as ``True \"\"\"``, no
    value, and dropped."""
    section = ('```python\ndef evaluate(text: str) -> int:\n    """The value.\n'
               '    >>> evaluate("1 + 2")\n    3\n    >>> evaluate("2 * 3")\n    6\n'
               '    """\n```\n')
    assert spec_cases(section, API) == [SpecCase('evaluate("1 + 2")', "3"),
                                        SpecCase('evaluate("2 * 3")', "6",
                                                 setup=('evaluate("1 + 2")',))]


def test_cases_render_as_runnable_tests_that_replace_an_earlier_block(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import os
    import subprocess
    import sys

    plain = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}  # as agents.testrunner runs it

    cases = [SpecCase("double(2)", "4"), SpecCase("double('x')", error="TypeError"),
             SpecCase("double(None)", error="Oops")]
    (tmp_path / "m.py").write_text("class Oops(Exception): ...\n\n"
                                   "def double(n):\n    if n is None:\n        raise Oops\n"
                                   "    if not isinstance(n, int):\n        raise TypeError\n"
                                   "    return 2 * n\n")
    first = add_cases("def test_own():\n    assert True\n", cases[:1], "m")
    again = add_cases(first, cases, "m")
    assert again.count("def test_own") == 1 and again.count(f"def {CASE_PREFIX}1") == 1
    (tmp_path / "test_m.py").write_text(again)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           str(tmp_path / "test_m.py")], cwd=tmp_path, env=plain,
                          capture_output=True, text=True)
    assert "4 passed" in done.stdout, done.stdout
    assert render_cases([], "m") == ""
