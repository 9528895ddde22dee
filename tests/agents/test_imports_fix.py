"""Forgotten standard imports are added back, and nothing else is touched."""

from __future__ import annotations

from agents.imports_fix import add_missing_imports


def test_a_used_standard_module_or_pytest_is_imported() -> None:
    tests = "from m import f\n\ndef test_f():\n    with pytest.raises(ValueError):\n        f(0)\n"
    assert add_missing_imports(tests) == "import pytest\n" + tests
    code = ('"""Doc."""\nfrom __future__ import annotations\ndef f(s):\n'
            '    return re.sub("a", "", s)\n')
    assert add_missing_imports(code).split("\n")[:3] == [
        '"""Doc."""', "from __future__ import annotations", "import re"]


def test_bound_names_and_unknown_ones_are_left_alone() -> None:
    for text in ("import pytest\ndef test():\n    pytest.fail()\n",
                 "def f(re):\n    return re.x\n",
                 "def f():\n    return numpy.zeros(1)\n",  # not standard: no guess
                 "json = {}\ndef f():\n    return json.get(1)\n",
                 "def broken(:\n"):
        assert add_missing_imports(text) == text


def test_a_name_of_another_project_module_is_imported_from_it() -> None:
    code = "def evaluate(text):\n    return len(tokenize(text))\n"
    fixed = add_missing_imports(code, {"tokenize": "calc.tokenizer", "other": "calc.x"})
    assert fixed == "from calc.tokenizer import tokenize\n" + code
    own = "def tokenize(t):\n    return t\n\ndef evaluate(text):\n    return tokenize(text)\n"
    assert add_missing_imports(own, {"tokenize": "calc.tokenizer"}) == own


def test_a_name_with_one_standard_home_is_imported_from_it() -> None:
    code = ("class Cache:\n    def __init__(self, clock: Callable[[], float]):\n"
            "        self._d = OrderedDict()\n")
    assert add_missing_imports(code) == ("from typing import Callable\n"
                                         "from collections import OrderedDict\n" + code)
    mine = "def Callable(x):\n    return x\n\n\nf = Callable(1)\n"
    assert add_missing_imports(mine) == mine  # its own name: nothing added


def test_relative_imports_become_the_ones_users_need() -> None:
    from agents.imports_fix import absolute_imports

    top = "from .tokens import tokenize\nfrom . import util\n\n\ndef f():\n    return 1\n"
    assert absolute_imports(top, "evaluator.py").startswith(
        "from tokens import tokenize\nimport util\n")
    inside = "from tokens import tokenize\nimport os\n"
    assert absolute_imports(inside, "calc/ev.py", ["calc/tokens.py", "calc/ev.py"]) == (
        "from calc.tokens import tokenize\nimport os\n")
    assert absolute_imports(top, "calc/ev.py") == top  # a package's relative import works
    assert absolute_imports("def broken(:\n", "x.py") == "def broken(:\n"


def test_a_module_whose_appended_tests_do_not_parse_keeps_the_module() -> None:
    from agents.imports_fix import usable_prefix

    module = "import re\n\n\ndef f(x):\n    return x\n\n\nclass K:\n    pass\n"
    broken = module + "\n\ndef test_f:\n    assert f(1) == 1\n"
    assert usable_prefix(broken) == module
    assert usable_prefix(module) is None  # it parses: nothing to cut
    assert usable_prefix("def broken(:\n    pass\n") is None  # nothing before the error


def test_more_names_with_one_standard_home_are_imported() -> None:
    code = ("def top(xs, k):\n    heap = []\n    for x in xs:\n        heappush(heap, -x)\n"
            "    return list(chain([1], islice(heap, k))), sqrt(4), deepcopy(xs)\n")
    fixed = add_missing_imports(code)
    assert set(fixed.split("\n")[:5]) == {
        "from copy import deepcopy", "from heapq import heappush", "from itertools import chain",
        "from itertools import islice", "from math import sqrt"}
    assert fixed.endswith(code)
    # a name the module binds itself (a parameter, an assignment) is its own
    mine = "def f(chain, sqrt=1):\n    pi = 3\n    return chain, sqrt, pi\n"
    assert add_missing_imports(mine) == mine
