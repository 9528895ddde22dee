"""Examples and APIs read from specs in the common phrasings, one class per test; each
spec here is written for the test (none is a kata's). A rule that cannot tell leaves a
case out; what it keeps is what the spec's own characters say."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from agents.specapi import spec_signatures
from agents.speccases import SpecCase, render_cases, spec_cases
from agents.specread import fits, literal_prefix, read_api

PLAIN = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
"""Plain pytest, as the pipeline runs it (:mod:`agents.testrunner`): no installed plugin."""


def cases(spec: str, api: list[str] | None = None) -> list[SpecCase]:
    return spec_cases(spec, api if api is not None else spec_signatures(spec, "m.py"))


def test_doctest_sessions_with_values_state_and_tracebacks() -> None:
    spec = ("# m\n\n`m.py`: `halve(n: int) -> int`\n\n```\n>>> halve(8)\n4\n>>> x = 6\n"
            ">>> halve(x)\n3\n>>> halve(3)\nTraceback (most recent call last):\n  ...\n"
            "ValueError: odd\n```\n")
    # each statement before a check is its state (a call with a value may change some)
    assert cases(spec) == [SpecCase("halve(8)", "4"),
                           SpecCase("halve(x)", "3", setup=("halve(8)", "x = 6")),
                           SpecCase("halve(3)", error="ValueError",
                                    setup=("halve(8)", "x = 6", "halve(x)"))]


def test_a_script_with_results_in_comments_keeps_its_state_and_skips_alternatives() -> None:
    spec = ("# m\n\nA class `Counter` in `m.py`:\n\n- `Counter(start: int = 0)`\n"
            "- `bump(by: int = 1) -> int`\n- `reset() -> None`\n\n```python\n"
            "c = Counter(2)\nc.bump()      # 3, the new value\nc.bump(by=4)\n"
            "c.bump()\n# 8\nc.reset()\nc.bump(-1)    # raises ValueError\n"
            "c.bump()      # 1, or 2 after a reset by another\n"
            "assert c.bump() == 2\n```\n")
    api = spec_signatures(spec, "m.py")  # after a constructor, its methods
    assert "bump" not in read_api(api).functions
    got = cases(spec, api)
    assert got[0] == SpecCase("c.bump()", "3", setup=("c = Counter(2)",))
    assert got[1] == SpecCase("c.bump()", "8", setup=("c = Counter(2)", "c.bump()",
                                                       "c.bump(by=4)"))
    assert got[2].error == "ValueError" and got[2].setup[-1] == "c.reset()"
    assert got[3].call == "c.bump()" and got[3].expected == "2" and len(got) == 4


def test_a_listing_that_is_not_python_gives_its_equalities() -> None:
    spec = ("# m\n\nModule `m.py`.\n\n```\npad(text: str, width: int) -> str\n"
            "    Pads on the left. width < 0 -> ValueError.\n"
            '    pad("ab", 4) == "  ab"\n    pad("abc", 2) ==\n        "abc"\n```\n')
    assert spec_signatures(spec, "m.py") == ["pad(text: str, width: int) -> str"]
    assert cases(spec) == [SpecCase("pad('ab', 4)", "'  ab'"), SpecCase("pad('abc', 2)",
                                                                        "'abc'")]


def test_markdown_tables_of_inputs_and_outputs() -> None:
    spec = ("# m\n\n`m.py` has `area(w: int, h: int) -> int` and `parse_size(s: str) -> "
            "tuple[int, int]`; both raise `ValueError` on bad input.\n\n"
            "| `w` | `h` | `area(w, h)` |\n|---|---|---|\n| 2 | 3 | `6` |\n| 0 | 5 | 0 |\n\n"
            "| s | parse_size(s) |\n|:--|--:|\n| `2x3` | `(2, 3)` |\n| 10x1 | (10, 1) |\n\n"
            "Rejected sizes:\n\n| s | why |\n|---|---|\n| `x3` | no width |\n| `2x` | no "
            "height |\n")
    assert cases(spec) == [
        SpecCase("area(2, 3)", "6"), SpecCase("area(0, 5)", "0"),
        SpecCase("parse_size('2x3')", "(2, 3)"), SpecCase("parse_size('10x1')", "(10, 1)")]
    # the rejected sizes' table says no result: that they raise is the sentence's word
    one = ("# m\n\n`m.py`: `shout(text: str) -> str`.\n\n| input | output |\n|---|---|\n"
           '| "a" | "A!" |\n| "" | "!" |\n')
    assert cases(one) == [SpecCase("shout('a')", "'A!'"), SpecCase("shout('')", "'!'")]


def test_a_listings_classes_own_their_methods() -> None:
    listing = ("# m\n\n`m.py`:\n\n```python\nclass Shelf:\n    def add(self, item: str, "
               "qty: int) -> None: ...\n    def count(self, item: str) -> int: ...\n"
               "    def _secret(self): ...\n\n\ndef make_shelf() -> Shelf: ...\n```\n"
               "\n`count(\"x\")` is `0` on a new shelf.\n")
    assert spec_signatures(listing, "m.py") == [
        "class Shelf", "Shelf.add(item: str, qty: int) -> None", "Shelf.count(item: str) -> int",
        "make_shelf() -> Shelf"]
    for api in (spec_signatures(listing, "m.py"), ["Shelf()", "add(item, qty)", "count(item)"]):
        assert "add" not in read_api(api).functions  # methods, not module functions
        assert cases(listing, api) == []  # a method's call needs an instance
    errors = read_api(["class NotFound(KeyError)", "find(key: str) -> int"])
    assert list(errors.functions) == ["find"]  # an exception's class owns no methods


def test_signatures_leave_out_builtins_methods_of_values_and_parameters() -> None:
    spec = ("# m\n\n`m.py`: `Timer(clock: Callable[[], float])` calls `clock()`; "
            "`len(timer)` and `str(err)` work; lines come from `text.splitlines()`.\n")
    assert spec_signatures(spec, "m.py") == ["Timer(clock: Callable[[], float])"]


def test_values_are_read_to_their_end_and_typed() -> None:
    assert literal_prefix('[1, "a, b"] and more') == ("[1, 'a, b']", 11)
    assert literal_prefix("1, and then") == ("1", 1)  # not the tuple (1,)
    assert literal_prefix("1.4.2 is a version") is None
    assert literal_prefix("3. Next") == ("3", 1)
    assert fits("[1]", "list[int]") and not fits("1", "list[int]")
    assert fits("None", "int | None") and fits("1", "Optional[int]") and fits("1", "Foo")
    assert not fits("True", "int") and fits("2", "float")


def test_cases_with_state_render_as_runnable_tests(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(
        "import time\n\n\nclass Counter:\n    def __init__(self, start=0):\n        self.n = "
        "start\n\n    def bump(self, by=1):\n        if by < 0:\n            raise ValueError\n"
        "        self.n += by\n        return self.n\n")
    text = render_cases([SpecCase("c.bump()", "3", setup=("c = Counter(2)",)),
                         SpecCase("c.bump(-1)", error="ValueError", setup=("c = Counter()",)),
                         SpecCase("time.time() > 0", "True")], "m")
    (tmp_path / "test_m.py").write_text(text)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "test_m.py"], cwd=tmp_path, env=PLAIN, capture_output=True, text=True)
    assert "3 passed" in done.stdout, done.stdout + text


def test_a_setup_string_over_several_lines_keeps_its_value(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("def lines(text):\n    return text.splitlines()\n")
    setup = 'got = lines("""a\nb\n""")'
    text = render_cases([SpecCase("got", "['a', 'b']", setup=(setup,))], "m")
    (tmp_path / "test_m.py").write_text(text)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "test_m.py"], cwd=tmp_path, env=PLAIN, capture_output=True, text=True)
    assert "1 passed" in done.stdout, done.stdout + text


def test_dataclasses_and_exceptions_named_in_prose_are_classes() -> None:
    spec = ("# m\n\n`m.py` defines a frozen dataclass `Point` and an exception `BadPoint`, "
            "and `distance(a: Point, b: Point) -> float`.\n")
    api = spec_signatures(spec, "m.py")
    assert api == ["class Point", "class BadPoint", "distance(a: Point, b: Point) -> float"]
    assert list(read_api(api).functions) == ["distance"]  # after a class, still a function


def test_an_error_class_said_to_subclass_another_is_part_of_the_api() -> None:
    spec = ("# m\n\n## `lex.py`\n\n`lex(s: str) -> list[str]`; bad input raises `LexError`, "
            "a subclass of `ValueError` defined in this module.\n\n## `run.py`\n\n"
            "`run(s: str) -> int`; a `LexError` passes through.\n")
    assert spec_signatures(spec, "lex.py", ["run.py"]) == ["lex(s: str) -> list[str]",
                                                           "class LexError(ValueError)"]
    assert spec_signatures(spec, "run.py", ["lex.py"]) == ["run(s: str) -> int"]


def test_a_single_module_spec_is_all_about_that_module_whatever_its_headings() -> None:
    """A heading that uses the module's stem as a plain word ("How it parses prices"
    for ``prices.py``) is no section of its own when the spec names no other module."""
    from agents.checks import spec_section

    spec = ("# prices\n\nOne file, `prices.py`, with `parse_price(text)` and "
            "`show_price(cents)`.\n\n## How it parses prices\n\n`parse_price(\"1.50\") "
            "== 150`.\n\n## How it shows prices\n\n`show_price(150) == \"1.50\"`.\n")
    assert spec_section(spec, "prices.py") == spec
    api = spec_signatures(spec, "prices.py", ["test_prices.py"])
    assert api == ["parse_price(text)", "show_price(cents)"]
    assert spec_cases(spec, api) == [SpecCase("parse_price('1.50')", "150"),
                                     SpecCase("show_price(150)", "'1.50'")]
    two = spec.replace("One file, `prices.py`", "Two files, `prices.py` and `money.py`")
    assert "show_price(150)" not in spec_section(two, "prices.py")  # sections again


def test_classes_named_in_prose_are_listed_and_their_methods_left_as_written() -> None:
    """Which prose signature is whose method is not read from the sentences around it
    (a reading of English): the classes are named, the signatures stand as written."""
    spec = ("# shop\n\nAll of `shop.py`. The first dataclass is `Item`, frozen. An item has "
            "one method, `cost(qty)`, the price of `qty` of it.\n\n`Basket` is a small "
            "class. It has these methods:\n\n- `add(item)` puts an item in.\n- `total()` "
            "sums the costs.\n\nThe module-level function `cheapest(items)` returns the "
            "cheapest item.\n\nEverything else lives in one class, `Till`, whose methods "
            "are `start()` and `close()`.\n")
    assert spec_signatures(spec, "shop.py") == [
        "class Item", "cost(qty)", "class Basket", "add(item)", "total()", "cheapest(items)",
        "class Till", "start()", "close()"]
    api = read_api(spec_signatures(spec, "shop.py"))
    assert api.classes >= {"Item", "Basket", "Till"}


def test_a_property_in_a_skeleton_is_no_method_to_call() -> None:
    spec = ("# m\n\nFill in `m.py`:\n\n```python\nclass Tank:\n    def __init__(self) -> None:"
            "\n        ...\n\n    @property\n    def level(self) -> int:\n        ...\n\n"
            "    @level.setter\n    def level(self, value: int) -> None:\n        ...\n\n"
            "    def fill(self, litres: int) -> int:\n        ...\n```\n")
    assert spec_signatures(spec, "m.py") == ["class Tank", "Tank.fill(litres: int) -> int"]


def test_a_call_before_a_check_that_raises_fails_only_its_own_case(tmp_path: Path) -> None:
    """A session's earlier calls are each case's state; one that raises in a wrong module
    is passed over, so the later case tests its own call (a right module runs them all)."""
    spec = ("# m\n\n`m.py`: `double(n: int) -> int`.\n\n```\n>>> double(2)\n4\n"
            ">>> double(5)\n10\n```\n")
    assert cases(spec)[1] == SpecCase("double(5)", "10", setup=("double(2)",))
    (tmp_path / "test_m.py").write_text(render_cases(cases(spec), "m"))
    (tmp_path / "m.py").write_text("def double(n):\n    if n == 2:\n        raise ValueError\n"
                                   "    return 2 * n\n")
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
                         cwd=tmp_path, env=PLAIN, capture_output=True, text=True).stdout
    assert "1 failed, 1 passed" in out, out


def test_what_the_specs_parts_name_outweighs_the_plans_guess() -> None:
    """A small model's plan had the chain backwards (a lexer built on the parser built on
    the VM): where the spec's parts name the modules each builds on, the plan's guesses
    go; where none does, they are all there is."""
    from agents.pipeline import _ordered, _uses
    from agents.roles import ModuleSpec, ProjectPlan
    from agents.specfacts import read_spec

    def plan(uses: dict[str, list[str]]) -> ProjectPlan:
        return ProjectPlan(modules=[ModuleSpec(path=p, purpose="", public_api=[],
                                               test_path=f"test_{p}", uses=u)
                                    for p, u in uses.items()])

    backwards = plan({"vm.py": ["lexer.py", "parser.py"], "parser.py": ["lexer.py", "vm.py"],
                      "lexer.py": ["parser.py"]})
    spec = ("# lang\n\n## `lexer.py`\n\nSplits.\n\n## `parser.py`\n\nStarts with `from "
            "lexer import tokenize`.\n\n## `vm.py`\n\nRuns what `parser.py` gives.\n")
    uses = _uses(backwards, read_spec(spec))
    assert uses == {"vm.py": ["parser.py"], "parser.py": ["lexer.py"], "lexer.py": []}
    assert _ordered(["vm.py", "parser.py", "lexer.py"], uses) == [
        "lexer.py", "parser.py", "vm.py"]
    silent = "# lang\n\nThree modules: `lexer.py`, `parser.py` and `vm.py`.\n"
    assert _uses(backwards, read_spec(silent))["parser.py"] == ["vm.py", "lexer.py"]

def test_a_class_named_in_one_modules_part_is_that_modules_api_alone() -> None:
    """A class the readers name is the API of the module whose part names it, of no other
    module; its method stands as the spec writes it."""
    spec = ("# shop\n\n**`shop/cart.py`** keeps items. It has a class `Cart` with a list of\n"
            "items and a method `count()` that returns how many there are. `load_cart(text)`\n"
            "reads a cart from text.\n\n**`shop/price.py`** uses `cart`. `price_of(cart,\n"
            "rate)` is the price of a cart at a rate.\n")
    paths = ["shop/cart.py", "shop/price.py"]
    assert spec_signatures(spec, paths[0], paths[1:]) == [
        "class Cart", "count()", "load_cart(text)"]
    # the class is not the other module's too; a signature wrapped inside its backticks
    # is read whole
    assert spec_signatures(spec, paths[1], paths[:1]) == ["price_of(cart, rate)"]
