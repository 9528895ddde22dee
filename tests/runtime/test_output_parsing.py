"""A final answer is validated as JSON text (pydantic's JSON mode), bare or inside prose."""

from __future__ import annotations

import datetime as dt

import pydantic
import pytest

from orchestra.runtime.replies import OutputError, parse_output


class Strict(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(strict=True)

    span: tuple[int, int]
    due: dt.date


BARE = '{"span": [1, 2], "due": "2026-11-23"}'


@pytest.mark.parametrize("text", [BARE, f"  {BARE}\n", f"Here:\n```json\n{BARE}\n```",
                                  f"My answer is {BARE} as asked."])
def test_a_json_answer_validates_in_json_mode_bare_or_in_prose(text: str) -> None:
    out = parse_output(text, Strict, truncated=False)
    assert out == Strict(span=(1, 2), due=dt.date(2026, 11, 23))


def test_a_mismatch_names_the_field_whether_bare_or_fenced() -> None:
    for text in ('{"span": [1], "due": "2026-11-23"}',
                 '```json\n{"span": [1], "due": "2026-11-23"}\n```'):
        with pytest.raises(OutputError, match=r"does not match the Strict schema: span\."):
            parse_output(text, Strict, truncated=False)


def test_text_that_holds_no_json_says_so() -> None:
    with pytest.raises(OutputError, match="not valid JSON"):
        parse_output("I am done.", Strict, truncated=True)
