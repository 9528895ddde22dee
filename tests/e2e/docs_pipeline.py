"""The stock pipeline with a docs writer added by one class, for the kill test of the
stock pipeline on the board: ``orchestra run --pipeline tests.e2e.docs_pipeline:build
--spec SPEC --workspace DIR --model python:tests.e2e.docs_pipeline:scripted`` (with the
repository root on ``PYTHONPATH``). ``blocking`` answers as ``scripted`` does, except
that the docs writer never answers: a test kills the run with its task in flight."""

from __future__ import annotations

import asyncio
import json

from pydantic import BaseModel

from agents.entries import ModuleWritten
from agents.extend import extend
from agents.roles import WorkspaceRole
from orchestra import FunctionModel, On, reply
from orchestra.models.base import ModelRequest, ModelResponse

SPEC = ("# add\n\nBuild `calc/add.py` with `add(a: int, b: int) -> int`, tested in "
        "`tests/test_add.py`. Example: `add(1, 2) -> 3`.\n")
PLAN = {"modules": [{"path": "calc/add.py", "purpose": "add two integers",
                     "public_api": ["add(a: int, b: int) -> int"],
                     "test_path": "tests/test_add.py"}]}
TESTS = "from calc.add import add\n\n\ndef test_add() -> None:\n    assert add(1, 2) == 3\n"
CODE = "def add(a: int, b: int) -> int:\n    return a + b\n"


class Docs(BaseModel):
    module: str
    text: str


class DocsWriter(WorkspaceRole):
    """You document one finished module in a paragraph."""

    input = ModuleWritten
    output = Docs
    consumes = [On(ModuleWritten, where=lambda m: m.accepted)]
    posts_output = True


build = extend(DocsWriter)


def _answer(request: ModelRequest) -> ModelResponse:
    system = request.messages[0].content
    if system.startswith("You document"):
        return reply(json.dumps({"module": "calc/add.py", "text": "add adds."}))
    if system.startswith("You are the architect"):
        return reply(json.dumps(PLAN))
    if system.startswith("You write"):
        return reply(f"tests/test_add.py\n```python\n{TESTS}```\n")
    return reply(f"calc/add.py\n```python\n{CODE}```\n")


def scripted() -> FunctionModel:
    return FunctionModel(_answer, name="scripted")


def blocking() -> FunctionModel:
    async def answer(request: ModelRequest) -> ModelResponse:
        if request.messages[0].content.startswith("You document"):
            await asyncio.sleep(3600)  # killed before it answers
        return _answer(request)

    return FunctionModel(answer, name="scripted")
