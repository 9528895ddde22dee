"""A hosted-model run replayed from provider responses in each SDK's real shape (the
official OpenAI and Anthropic SDKs talk to a scripted loopback server): the cost it
reports is what genai-prices' table gives by hand from each call's tokens."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from model_wire import SECRET, Reply, WireServer, anthropic_streamed
from pydantic import BaseModel
from test_prices import by_hand, table
from test_usage_shapes import ANTHROPIC_USAGE

from orchestra import Coordinator, NewTask, Pipeline, Role, SQLiteBlackboard, ToolContext, tool
from orchestra.coordinator.usage_report import run_usage
from orchestra.models.anthropic import AnthropicModel
from orchestra.models.base import Usage
from orchestra.models.openai import OpenAIModel


class Draft(BaseModel):
    text: str


class Verdict(BaseModel):
    ok: bool


class Writer(Role[Draft, Draft]):
    """You write a draft; look the topic up first."""

    @tool
    async def lookup(self, ctx: ToolContext, topic: str) -> str:
        """Facts about a topic."""
        return f"{topic}: three facts"


class Checker(Role[Draft, Verdict]):
    """You check a draft."""


def chat(content: str | None, usage: dict[str, Any], calls: list[Any] | None = None
         ) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None}
    if calls:
        message["tool_calls"] = calls
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 1,
            "model": "gpt-4.1-mini-2025-04-14", "service_tier": "default",
            "choices": [{"index": 0, "message": message, "logprobs": None,
                         "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": usage}


def openai_usage(prompt: int, cached: int, out: int, reasoning: int = 0) -> dict[str, Any]:
    return {"prompt_tokens": prompt, "completion_tokens": out, "total_tokens": prompt + out,
            "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": reasoning, "audio_tokens": 0}}


def anthropic_message(text: str, usage: dict[str, Any]) -> dict[str, Any]:
    return {"id": "msg_01", "type": "message", "role": "assistant",
            "model": "claude-3-5-haiku-20241022", "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn", "stop_sequence": None, "usage": usage}


CALLS = [  # (provider, model, usage block) in the order the run makes them
    ("openai", "gpt-4.1-mini", openai_usage(1_450, 0, 40)),
    ("openai", "gpt-4.1-mini", openai_usage(1_530, 1_408, 96, reasoning=32)),
    ("anthropic", "claude-3-5-haiku-latest", {"input_tokens": 310, "output_tokens": 25,
                                              "cache_creation_input_tokens": 1_200,
                                              "cache_read_input_tokens": 0}),
    ("anthropic", "claude-3-5-haiku-latest", ANTHROPIC_USAGE),
]


def script(wire: WireServer) -> None:
    lookup = {"id": "call_1", "type": "function",
              "function": {"name": "lookup", "arguments": '{"topic": "tides"}'}}
    wire.add(Reply(body=chat(None, CALLS[0][2], [lookup])),
             Reply(body=chat('{"text": "Tides follow the moon."}', CALLS[1][2])),
             # the checker's first answer is not JSON: fed back, it answers again; a run
             # streams from Anthropic (its text reaches the event log as it is written)
             anthropic_streamed(anthropic_message("Looks fine.", CALLS[2][2])),
             anthropic_streamed(anthropic_message('{"ok": true}', CALLS[3][2])))


async def test_hosted_run_costs_what_the_table_gives_by_hand(wire: WireServer,
                                                             tmp_path: Path) -> None:
    script(wire)
    models = {"writer": OpenAIModel("gpt-4.1-mini", base_url=f"{wire.url}/v1", api_key=SECRET,
                                    name="openai:gpt-4.1-mini"),
              "checker": AnthropicModel("claude-3-5-haiku-latest", api_key=SECRET,
                                        base_url=wire.url)}
    pipeline = Pipeline("costed", roles=[Writer(), Checker()],
                        start=lambda spec: [NewTask("writer", spec)],
                        routes={Writer: Checker})
    store = await SQLiteBlackboard.open(tmp_path / "cost.db")
    try:
        run = await Coordinator(store, pipeline, models=models).run({"text": "tides"})
        assert run.status == "completed", run.error
        usage = await run_usage(store, run.id)
        steps = [s for t in await store.list_tasks(run.id)
                 for s in await store.get_steps(t.id, 0) if s.kind == "model"]
    finally:
        await store.close()
    assert len(steps) == len(CALLS)
    expected = []
    for (provider, model, _), step in zip(CALLS, steps, strict=True):
        rec = step.output["usage"]
        tokens = Usage(step.tokens_in, step.tokens_out, cached_input_tokens=rec[2],
                       cache_write_tokens=rec[3], reasoning_tokens=rec[4])
        expected.append(by_hand(table(provider, model), tokens))
        assert step.cost == expected[-1]  # priced once, when the call was made
    by_call = [tuple(s.output["usage"]) for s in steps]
    assert by_call == [(1450, 40, 0, 0, 0), (1530, 96, 1408, 0, 32), (1510, 25, 0, 1200, 0),
                       (2050, 120, 1800, 200, 0)]
    assert run.cost == sum(expected) > 0
    assert usage.total.cost == run.cost and usage.total.calls == 4
    assert usage.by_role["writer"].usage.cached_input_tokens == 1408
    assert usage.by_role["checker"].usage.cache_write_tokens == 1400
    assert usage.total.usage.reasoning_tokens == 32
