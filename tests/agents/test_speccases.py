"""The examples a spec states become tests the pipeline writes itself, read strictly."""

from __future__ import annotations

from agents.speccases import CASE_PREFIX, SpecCase, add_cases, render_cases, spec_cases


def test_calls_with_literal_values_and_a_verb_of_equality_are_cases() -> None:
    section = ('- `tokenize("1+2")` is `["1", "+", "2"]`; `tokenize("")` is `[]`.\n'
               '- `tokenize(" 7 ")` returns `["7"]` and `tokenize("x")` is not `[]`.\n'
               '- `word_counts("")` and `word_counts("1 ...")` are `{}`.\n'
               '- `tokenize("(")  == ["("]`, and `tokenize(")") -> [")"]`.\n')
    cases = spec_cases(section, ["tokenize(text: str) -> list[str]",
                                 "word_counts(text: str) -> dict[str, int]"])
    assert cases == [SpecCase("tokenize('1+2')", "['1', '+', '2']"),
                     SpecCase("tokenize('')", "[]"), SpecCase("tokenize(' 7 ')", "['7']"),
                     SpecCase("word_counts('')", "{}"), SpecCase("word_counts('1 ...')", "{}"),
                     SpecCase("tokenize('(')", "['(']"), SpecCase("tokenize(')')", "[')']")]


def test_bare_arguments_belong_to_the_one_function_a_sentence_names() -> None:
    section = ("`to_roman(n: int) -> str`\n\n- `4` is `\"IV\"`, `1994` is `\"MCMXCIV\"`.\n"
               "- `n = 0` gives `\"\"`.\n")
    assert spec_cases(section, ["to_roman(n: int) -> str"]) == [
        SpecCase("to_roman(4)", "'IV'"), SpecCase("to_roman(1994)", "'MCMXCIV'"),
        SpecCase("to_roman(n=0)", "''")]
    two = ["encode(text: str) -> str", "decode(text: str) -> str"]
    rle = ('- `encode` replaces runs: `"aaab"` becomes `"3a1b"`.\n'
           '- `decode` is the inverse: `"3a1b"` becomes `"aaab"`; `"12x"` is twelve `x`.\n'
           '- Both: `"a"` is `"1a"`.\n')
    assert spec_cases(rle, two) == [SpecCase("encode('aaab')", "'3a1b'"),
                                    SpecCase("decode('3a1b')", "'aaab'")]


def test_stated_errors_are_cases_and_ambiguity_is_left_out() -> None:
    section = ("- A malformed expression raises `ValueError`: `\"\"`, `\"1 +\"`.\n"
               "- Division by zero raises `ZeroDivisionError`: `evaluate(\"1 / 0\")`.\n"
               "- A negative `n` raises `ValueError`.\n")
    assert spec_cases(section, ["evaluate(text: str) -> int"]) == [
        SpecCase("evaluate('')", error="ValueError"), SpecCase("evaluate('1 +')",
                                                                error="ValueError"),
        SpecCase("evaluate('1 / 0')", error="ZeroDivisionError")]
    # a class's methods need an instance; two parameters need both
    assert spec_cases("`count(\"a\")` is `0`", ["Inventory()", "count(item: str) -> int"]) == []
    assert spec_cases("`n = 0` gives `[]`", ["top(text: str, n: int) -> list"]) == []
    assert spec_cases("`f(x)` is `1`", ["f(x: int) -> int"]) == []  # not a literal argument


def test_cases_render_as_runnable_tests_that_replace_an_earlier_block(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import subprocess
    import sys

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
                           str(tmp_path / "test_m.py")], cwd=tmp_path, capture_output=True,
                          text=True)
    assert "4 passed" in done.stdout, done.stdout
    assert render_cases([], "m") == ""
