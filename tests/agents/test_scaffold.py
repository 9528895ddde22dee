"""Tests a small model writes into the module it was asked for are taken out of it; the
module itself, and anything that could be part of it, stays as written."""

from __future__ import annotations

from agents.scaffold import without_tests

MODULE = ('"""Versions."""\nimport re\n\n\ndef parse(text: str) -> tuple[int, ...]:\n'
          '    return tuple(int(p) for p in re.split(r"\\.", text))\n')


def test_a_second_file_s_heading_and_everything_under_it_goes() -> None:
    for heading in ("# test_versions.py", "# File: tests/test_versions.py", "## versions_test.py"):
        answer = (MODULE + f"\n\n{heading}\nimport pytest\nfrom versions import parse\n\n"
                  "def test_parse():\n    assert parse('1.2') == (1, 2)\n")
        assert without_tests(answer, "versions.py") == MODULE


def test_module_level_asserts_prints_tests_and_their_imports_go() -> None:
    answer = ("import pytest\nfrom test_versions import *\nfrom versions import parse\n"
              + MODULE + "\n\nassert parse('1.4.2') == (1, 4, 3)\nprint(parse('1'))\n\n"
              "@pytest.fixture\ndef text():\n    return '1.2'\n\n\n"
              "def test_parse(text):\n    assert parse(text) == (1, 2)\n\n\n"
              "class TestParse:\n    def test_one(self):\n        assert parse('1') == (1,)\n")
    assert without_tests(answer, "versions.py") == MODULE


def test_what_could_be_part_of_the_module_stays() -> None:
    # a name the spec gives the module, pytest used by the module itself, a main block
    spec_named = MODULE + "\n\ndef test_connection(url: str) -> bool:\n    return bool(url)\n"
    assert without_tests(spec_named, "versions.py", {"test_connection"}) == spec_named
    uses_pytest = ("import pytest\n\n\ndef approx(x):\n    return pytest.approx(x)\n\n\n"
                   "def test_approx():\n    assert approx(1) == 1\n")
    assert without_tests(uses_pytest, "m.py") == (
        "import pytest\n\n\ndef approx(x):\n    return pytest.approx(x)\n")
    main = MODULE + '\n\nif __name__ == "__main__":\n    print(parse("1.2"))\n'
    assert without_tests(main, "versions.py") == main
    same_line = MODULE + "\nimport os; assert os\n"
    assert without_tests(same_line, "versions.py") == same_line


def test_a_module_that_would_define_nothing_or_does_not_parse_is_left_as_it_is() -> None:
    only_tests = "def test_parse():\n    assert True\n"
    assert without_tests(only_tests, "versions.py") == only_tests
    broken = MODULE + "\ndef test_x(:\n    pass\n"
    assert without_tests(broken, "versions.py") == broken
    # a heading with no code above it is no second file
    headed = "# versions_test.py\n" + MODULE
    assert without_tests(headed, "versions.py") == headed
