"""A failed spec example is said with what the module did, and the line that did it."""

from __future__ import annotations

from agents.failures import how_it_failed

REPORT = """\
FF.                                                                      [100%]
=================================== FAILURES ===================================
_______________________________ test_fizzbuzz_10 _______________________________

    def test_fizzbuzz_10():
>       assert fizzbuzz(10) == ["1", "2", "Fizz"]
E       AssertionError: assert ['1', '2', 'Fizz', '4'] == ['1', '2', 'Fizz']
E         Left contains one more item: '4'

tests/test_fizzbuzz.py:36: AssertionError
_____________________________ test_spec_example_1 ______________________________

    def test_spec_example_1():
>       assert _spec_module.fizzbuzz(n=0) == []
               ^^^^^^^^^^^^^^^^^^^^^^^^^^

tests/test_fizzbuzz.py:50:
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _

n = 0

    def fizzbuzz(n: int) -> list[str]:
        if n <= 0:
>           raise ValueError("n must be a positive integer")
E           ValueError: n must be a positive integer

kata/fizzbuzz.py:5: ValueError
=========================== short test summary info ============================
FAILED tests/test_fizzbuzz.py::test_fizzbuzz_10 - AssertionError: assert ['1',...
FAILED tests/test_fizzbuzz.py::test_spec_example_1 - ValueError: n must be a ...
2 failed, 1 passed
"""


def test_an_error_the_module_raised_names_its_line() -> None:
    assert how_it_failed(REPORT, "test_spec_example_1") == (
        "ValueError: n must be a positive integer (raised at kata/fizzbuzz.py line 5: "
        '`raise ValueError("n must be a positive integer")`)')


def test_a_wrong_value_is_pytests_own_words() -> None:
    assert how_it_failed(REPORT, "test_fizzbuzz_10") == (
        "AssertionError: assert ['1', '2', 'Fizz', '4'] == ['1', '2', 'Fizz']")


def test_a_test_the_report_does_not_show_says_nothing() -> None:
    assert how_it_failed(REPORT, "test_spec_example_2") == ""
    assert how_it_failed("", "test_spec_example_1") == ""
