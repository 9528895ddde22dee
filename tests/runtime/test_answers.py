"""Answer formats: files as fenced blocks and search/replace edits, parsed tolerantly
where the intent is plain and strictly where it is not."""

from __future__ import annotations

import json
from typing import Any

import pytest

from orchestra import Coordinator, FunctionModel, NewTask, Pipeline, Role, SQLiteBlackboard
from orchestra.answers import Edit, EditBlocks, EditError, FileBlocks, Files, apply_edits
from orchestra.errors import RoleDefinitionError
from orchestra.models.base import ModelRequest, ModelResponse
from orchestra.runtime.replies import OutputError

ONE = FileBlocks(paths=lambda _: ["kata/roman.py"])
TWO = FileBlocks(paths=lambda _: ["kata/roman.py", "tests/test_roman.py"])
CODE = "def to_roman(n: int) -> str:\n    return 'I' * n\n"


def parse(fmt: Any, text: str, truncated: bool = False) -> Any:
    return fmt.parse(text, truncated=truncated, task_input=None)


@pytest.mark.parametrize("text", [
    f"Here it is:\n\nkata/roman.py\n```python\n{CODE}```\nDone.",
    f"**kata/roman.py**\n```python\n{CODE}```",
    f"```python kata/roman.py\n{CODE}```",
    f"```python\n# kata/roman.py\n{CODE}```",
    f"```\n{CODE}```",  # one unlabelled block is the one file expected
    f"File: roman.py\n```py\n{CODE}```",  # a unique file name is enough
    f"```python\n# kata.roman.py\n{CODE}```",  # a module's dotted path (seen from a 1.5B)
])
def test_a_file_block_is_found_however_it_is_labelled(text: str) -> None:
    files = parse(ONE, text).files
    assert list(files) == ["kata/roman.py"]
    assert "def to_roman(n: int) -> str:" in files["kata/roman.py"]


def test_code_fenced_inside_a_json_string_is_unwrapped() -> None:
    text = json.dumps({"module_code": f"```python\n{CODE}```", "summary": "done"})
    assert parse(ONE, text).files == {"kata/roman.py": CODE}


def test_several_files_by_label_and_order() -> None:
    tests = "from kata.roman import to_roman\n\n\ndef test_one():\n    assert to_roman(1)\n"
    text = f"tests/test_roman.py\n```python\n{tests}```\n\n```python\n{CODE}```\n"
    files = parse(TWO, text).files
    assert files == {"tests/test_roman.py": tests, "kata/roman.py": CODE}


def test_other_languages_and_empty_blocks_are_not_files() -> None:
    text = f"```bash\npip install x\n```\n\n```python\n{CODE}```\n```\n```"
    assert parse(ONE, text).files == {"kata/roman.py": CODE}


def test_a_block_for_a_path_the_task_does_not_own_names_the_allowed_ones() -> None:
    with pytest.raises(OutputError, match=r"'kata/other\.py', which this task does not "
                                          r"write\. This task writes only: kata/roman\.py"):
        parse(ONE, f"kata/other.py\n```python\n{CODE}```")


def test_a_cut_off_answer_is_said_to_be_cut_off() -> None:
    with pytest.raises(OutputError, match=r"cut off at the token limit in the middle of "
                                          r"kata/roman\.py") as info:
        parse(ONE, "kata/roman.py\n```python\ndef to_roman(n):\n    return", truncated=True)
    assert "not valid" not in str(info.value)
    with pytest.raises(OutputError, match="cut off"):  # cut before a second file began
        parse(TWO, f"kata/roman.py\n```python\n{CODE}```\n\nNow the tests", truncated=True)


def test_an_unclosed_last_fence_of_a_finished_reply_is_still_the_file() -> None:
    assert parse(ONE, f"kata/roman.py\n```python\n{CODE}").files == {"kata/roman.py": CODE}


def test_a_missing_file_is_named() -> None:
    with pytest.raises(OutputError, match=r"no code block for tests/test_roman\.py"):
        parse(TWO, f"kata/roman.py\n```python\n{CODE}```")
    assert parse(FileBlocks(paths=lambda _: ["a.py", "b.py"], partial=True),
                 f"a.py\n```python\n{CODE}```").files == {"a.py": CODE}


def test_edit_blocks_parse_and_apply() -> None:
    fmt = EditBlocks(paths=lambda _: ["kata/roman.py"])
    text = ("Fixing it.\n\nkata/roman.py\n<<<<<<< SEARCH\n    return 'I' * n\n=======\n"
            "    return 'V' if n == 5 else 'I' * n\n>>>>>>> REPLACE\n")
    edits = parse(fmt, text)
    assert edits.edits == [Edit(path="kata/roman.py", search="    return 'I' * n\n",
                                replace="    return 'V' if n == 5 else 'I' * n\n")]
    new = apply_edits("kata/roman.py", CODE, edits.edits)
    assert new == "def to_roman(n: int) -> str:\n    return 'V' if n == 5 else 'I' * n\n"
    # applied to the text the task saw, the same answer always gives the same file:
    # a step re-run after a crash writes the same bytes
    assert apply_edits("kata/roman.py", CODE, edits.edits) == new
    # a whole file is a valid revision too
    assert parse(fmt, f"kata/roman.py\n```python\n{CODE}```").files == {"kata/roman.py": CODE}


def test_edits_match_lines_whatever_their_indentation_and_say_when_they_cannot() -> None:
    loose = [Edit(path="a.py", search="return 'I' * n", replace="    return ''")]
    assert apply_edits("a.py", CODE, loose).endswith("    return ''\n")
    with pytest.raises(EditError, match=r"'return 0' is not in a\.py"):
        apply_edits("a.py", CODE, [Edit(path="a.py", search="return 0", replace="")])
    with pytest.raises(OutputError, match="neither search/replace blocks nor a complete file"):
        parse(EditBlocks(paths=lambda _: ["a.py", "b.py"]), "I changed nothing.")


def test_role_declarations_are_checked() -> None:
    class Writer(Role):
        """Write the file."""

        answer = ONE

    assert Writer.output is Files and Writer().output_schema() is None
    assert "fenced code block" in Writer().system_prompt()
    assert Writer().task_message({"x": 1}).endswith(
        "Reply with it complete, in a fenced block labelled with its path.")
    with pytest.raises(RoleDefinitionError, match="answer: 'files' is not an answer format"):
        class Bad(Role):
            """x"""

            answer = "files"  # type: ignore[assignment]
    with pytest.raises(RoleDefinitionError, match="differs from what its answer format gives"):
        class Clash(Role):
            """x"""

            output = str
            answer = ONE
    with pytest.raises(TypeError, match="give Files or a subclass"):
        FileBlocks(paths=lambda _: [], output=dict)  # type: ignore[arg-type]


async def test_a_files_answer_runs_through_a_pipeline_as_plain_text(tmp_path: Any) -> None:
    class Writer(Role):
        """Write the file."""

        answer = ONE

    requests: list[ModelRequest] = []

    def model(request: ModelRequest) -> ModelResponse:
        requests.append(request)
        return ModelResponse(f"kata/roman.py\n```python\n{CODE}```")

    store = await SQLiteBlackboard.open(tmp_path / "o.db")
    try:
        pipeline = Pipeline("w", roles=[Writer()], start=lambda inp: [NewTask("writer", inp)])
        run = await Coordinator(store, pipeline, models={"writer": FunctionModel(model)}).run(
            {"task": "write it"})
        (task,) = await store.list_tasks(run.id)
    finally:
        await store.close()
    assert run.status == "completed", run.error
    assert task.result == {"files": {"kata/roman.py": CODE}, "text": ""}
    assert requests[0].output is None  # no JSON schema: the answer is free text


def test_one_block_holding_several_files_is_cut_at_their_path_comments() -> None:
    tests = "from kata.roman import to_roman\n\n\ndef test_one():\n    assert to_roman(1)\n"
    text = f"```python\n# /kata/roman.py\n{CODE}\n# /tests/test_roman.py\n{tests}```"
    assert parse(TWO, text).files == {"kata/roman.py": CODE, "tests/test_roman.py": tests}
    # the task's own file is taken; the other is never written (not this task's to write)
    own = parse(FileBlocks(paths=lambda _: ["tests/test_roman.py"]), text)
    assert own.files == {"tests/test_roman.py": tests}


async def test_the_same_answer_sent_back_again_starts_the_task_afresh(tmp_path: Any) -> None:
    from orchestra import ModelRetry

    class Picky(Role):
        """Write the file."""

        answer = ONE

        async def check_output(self, ctx: Any, output: Any) -> None:
            if "return 'I' * n" not in output.files["kata/roman.py"]:
                raise ModelRetry("wrong: it must return 'I' * n")

    bad = "kata/roman.py\n```python\ndef to_roman(n):\n    return ''\n```"
    run, requests = await _sampled(tmp_path, Picky(), [
        bad, bad, f"kata/roman.py\n```python\n{CODE}```"])
    assert run.status == "completed", run.error
    # 1st: sent back in full, the exchange in view; 2nd, the same: the task afresh
    assert requests[1].messages[-1].content == "wrong: it must return 'I' * n"
    # the task and the note in ONE user message: two user turns in a row get echoed
    assert [m.role for m in requests[2].messages] == ["system", "user"]
    last = requests[2].messages[-1].content
    assert last.index("write it") < last.index("# Note")
    assert "you sent the same answer again (wrong: it must return 'I' * n)" in last
    assert "Write a new answer to the task above" in last


async def _sampled(tmp_path: Any, role: Role, replies: list[str], run_input: Any = None
                   ) -> tuple[Any, list[ModelRequest]]:
    """``role`` run on ``run_input`` ("write it") with ``replies`` in order: the run and
    each request."""
    requests: list[ModelRequest] = []

    def model(request: ModelRequest) -> ModelResponse:
        requests.append(request)
        return ModelResponse(replies[len(requests) - 1])

    store = await SQLiteBlackboard.open(tmp_path / "o.db")
    try:
        pipeline = Pipeline("p", roles=[role], start=lambda inp: [NewTask(role.name, inp)])
        run = await Coordinator(store, pipeline, models={role.name: FunctionModel(model)}).run(
            {"task": "write it"} if run_input is None else run_input)
    finally:
        await store.close()
    return run, requests


async def test_a_check_can_ask_for_a_new_sample_instead_of_a_revision(tmp_path: Any) -> None:
    from orchestra import ModelRetry
    from orchestra.runtime.retry_sampling import SAMPLE_TEMPERATURE

    seen: list[tuple[bool, ...]] = []

    class Sampler(Role):
        """Write the file."""

        answer = ONE

        async def check_output(self, ctx: Any, output: Any) -> None:
            seen.append(tuple(r.fresh for r in ctx.rejections))
            if "return 'I' * n" not in output.files["kata/roman.py"]:
                raise ModelRetry("Write it again, a new version.", data={"n": 1}, fresh=True)

    replies = ["kata/roman.py\n```python\ndef to_roman(n):\n    return ''\n```",
               f"kata/roman.py\n```python\n{CODE}```"]
    run, requests = await _sampled(tmp_path, Sampler(), replies)
    assert run.status == "completed", run.error
    # the first answer is out of view: the task, then the check's words, and a new seed
    assert [m.role for m in requests[1].messages] == ["system", "user"]
    assert requests[1].messages[-1].content.endswith("# Note\n\nWrite it again, a new version.")
    assert requests[1].settings.seed != requests[0].settings.seed
    # warm enough to differ (a small model asked afresh at 0.4 repeats its greedy answer)
    assert requests[1].settings.temperature == SAMPLE_TEMPERATURE
    assert seen == [(), (True,)]


async def test_a_new_sample_with_no_message_is_the_first_request_again(tmp_path: Any) -> None:
    """``ModelRetry("", fresh=True)``: an independent sample, the task as first asked
    (no note steering it toward the answer before), warm and reseeded."""
    from orchestra import ModelRetry

    class Sampler(Role):
        """Write the file."""

        answer = ONE

        async def check_output(self, ctx: Any, output: Any) -> None:
            if "return 'I' * n" not in output.files["kata/roman.py"]:
                raise ModelRetry("", fresh=True)

    replies = ["kata/roman.py\n```python\ndef to_roman(n):\n    return ''\n```"] * 2 + [
        f"kata/roman.py\n```python\n{CODE}```"]
    run, requests = await _sampled(tmp_path, Sampler(), replies)
    assert run.status == "completed", run.error
    assert len(requests) == 3
    assert requests[1].messages == requests[0].messages == requests[2].messages
    assert len({r.settings.seed for r in requests}) == 3
    assert requests[1].settings.temperature and requests[1].settings.temperature >= 0.7


async def test_a_reply_cut_off_at_the_limit_is_asked_anew_out_of_view(tmp_path: Any) -> None:
    """A reply that ran into max_tokens is often a loop; shown it, a small model copies it
    (seen: a 1.5B tester's runaway parametrize list, sent back near-identical)."""

    class Writer(Role):
        """Write the file."""

        answer = ONE

    loop = "kata/roman.py\n```python\nVALUES = [\n" + "    1,\n" * 40
    replies = [ModelResponse(loop, finish_reason="length"),
               ModelResponse(f"kata/roman.py\n```python\n{CODE}```")]
    requests: list[ModelRequest] = []

    def model(request: ModelRequest) -> ModelResponse:
        requests.append(request)
        return replies[len(requests) - 1]

    run = await _run_writer(tmp_path, Writer(), model)
    assert run.status == "completed", run.error
    retry = requests[1].messages
    assert [m.role for m in retry] == ["system", "user"]  # the cut-off reply is out of view
    assert "VALUES" not in retry[-1].content
    assert "cut off at the token limit in the middle of kata/roman.py" in retry[-1].content
    assert requests[1].settings.seed != requests[0].settings.seed  # a new sample


async def test_a_reply_that_copies_its_task_is_refused_and_asked_anew(tmp_path: Any) -> None:
    """Seen from a 1.5B: its task copied into the code fence, five replies in a row, each
    shown its "invalid Python" and sent back the same copy."""

    class Writer(Role):
        """Write the file."""

        answer = ONE

        def task_message(self, task_input: Any) -> str:
            return ("# The spec\n\nBuild kata/roman.py with to_roman(n: int) -> str, which "
                    "writes n in Roman numerals; 1994 becomes MCMXCIV.\n\n# Your task\n\n"
                    "Write kata/roman.py.")

    requests: list[ModelRequest] = []

    def model(request: ModelRequest) -> ModelResponse:
        requests.append(request)
        task = request.messages[1].content
        if len(requests) == 1:  # the task, copied into a fenced block
            return ModelResponse("```python\n" + task + "\n```")
        return ModelResponse(f"kata/roman.py\n```python\n{CODE}```")

    run = await _run_writer(tmp_path, Writer(), model)
    assert run.status == "completed", run.error
    retry = requests[1].messages
    assert [m.role for m in retry] == ["system", "user"]  # the copy is out of view
    assert retry[-1].content.count("# The spec") == 1
    assert "copied the text of your task instead of answering it" in retry[-1].content
    assert "not valid Python" not in retry[-1].content


def test_a_reply_that_repeats_a_file_its_task_quotes_is_no_echo() -> None:
    from orchestra.runtime.replies import refuse_echo

    task = f"# Your task\n\nFix kata/roman.py.\n\n# The module as it is now\n\n{CODE * 3}"
    refuse_echo(f"kata/roman.py\n```python\n{CODE * 3}```", task)  # a revision: accepted
    refuse_echo(f"```python\n{CODE * 3}# more\n```",
                CODE * 3 + "\nAdd one comment at the end of the code above.")
    with pytest.raises(OutputError, match="copied the text of your task"):
        refuse_echo(f"```python\n{task}\n```", task)


async def _run_writer(tmp_path: Any, role: Role, model: Any) -> Any:
    """One task of ``role`` (named writer) with ``model``, to its end."""
    store = await SQLiteBlackboard.open(tmp_path / "o.db")
    try:
        pipeline = Pipeline("p", roles=[role], start=lambda inp: [NewTask("writer", inp)])
        return await Coordinator(store, pipeline, models={"writer": FunctionModel(model)}).run(
            {"task": "write it"})
    finally:
        await store.close()


async def test_a_task_started_afresh_keeps_its_input_once_when_its_view_is_cut(
        tmp_path: Any) -> None:
    """After an afresh start the task's input is the first message merged with the note;
    cut to a small context, the view keeps that message: the note is not lost, the
    input not doubled."""
    from orchestra import ModelRetry

    class Picky(Role):
        """Write the file."""

        answer = ONE
        output_retries = 12

        async def check_output(self, ctx: Any, output: Any) -> None:
            if "return 'I' * n" not in output.files["kata/roman.py"]:
                raise ModelRetry("wrong: it must return 'I' * n. " + "Look again. " * 60)

    bad = "kata/roman.py\n```python\ndef to_roman(n):\n    return ''\n```"
    replies = [bad, bad, *(f"kata/roman.py\n```python\ndef to_roman(n):\n    return '{i}'\n```"
                           for i in range(4)), f"kata/roman.py\n```python\n{CODE}```"]
    requests: list[ModelRequest] = []

    class Small(FunctionModel):
        context_tokens = 1200

    def model(request: ModelRequest) -> ModelResponse:
        requests.append(request)
        return ModelResponse(replies[len(requests) - 1])

    store = await SQLiteBlackboard.open(tmp_path / "o.db")
    try:
        pipeline = Pipeline("p", roles=[Picky()],
                            start=lambda inp: [NewTask("picky", inp)])
        run = await Coordinator(store, pipeline, models={"picky": Small(model)}).run(
            {"task": "write it " + "with care " * 80})
    finally:
        await store.close()
    assert run.status == "completed", run.error
    assert len(requests) == len(replies)
    for request in requests:
        assert sum(m.content.count("write it") for m in request.messages) == 1
    for request in requests[2:]:  # started afresh: the note stays with the input
        assert "# Note" in request.messages[1].content
