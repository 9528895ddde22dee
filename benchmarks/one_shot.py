"""The one-shot baselines: the same model asked once, in plain text, for a kata's modules.

Requests go out with the standard library (no retries, no tools, no JSON) so nothing
between the model and the measurement changes them. Two ways of asking:

- **one-shot** (:func:`run_one_shot`), the baseline: one request per module, the spec
  and "reply with the complete module in one fenced block", with a ``max_tokens`` no
  answer reaches. A spec of several modules is asked module by module in the order it
  names them (the sets name a module before the ones built on it), each request showing
  the modules already written.
- **module+tests** (:func:`run_baseline`): one request for every module and its tests
  at once. Its fenced code blocks become the modules: a block labelled with a module's
  path (the line before the fence, the fence's info string, or a first-line comment) is
  that module; modules without one take the first unlabelled blocks in order. A small
  model's answers to it often run into the token cap, which is why it is not the
  baseline.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
import urllib.error
import urllib.request
from functools import cache
from pathlib import Path
from typing import Any

from agents.coderasks import ONE_SHOT_SYSTEM, module_request
from benchmarks.katas import Kata
from orchestra.models._context import probe_context
from orchestra.models.openai import OPENAI_BASE_URL, is_loopback
from orchestra.models.spec import parse_model_spec

SYSTEM = ONE_SHOT_SYSTEM
_FENCE = re.compile(r"^[ \t]*```[ \t]*([^\n`]*)\n(.*?)^[ \t]*```", re.S | re.M)
_PATHLIKE = re.compile(r"[\w./-]+\.py\b")


def prompt(kata: Kata) -> str:
    """The user message: the spec, then how to reply."""
    if len(kata.modules) == 1:
        ask = "Reply with the module in one ```python block, then its tests."
    else:
        files = ", ".join(f"`{p}`" for p in (*kata.modules, *kata.tests))
        ask = ("Reply with each file in its own ```python block, preceded by a line giving "
               f"its path ({files}): the modules first, then their tests.")
    return f"{kata.text.rstrip()}\n\n{ask}"


def endpoint(model: str) -> tuple[str, str, str | None]:
    """(base URL, model name, API key) of a spec, parsed by orchestra's own parser."""
    parsed = parse_model_spec(model)
    if parsed.provider not in ("openai", "ollama", "openai-compatible"):
        raise ValueError(f"the baseline speaks OpenAI chat completions; {parsed.provider!r} "
                         "models have no such endpoint (serve the model with llama.cpp, "
                         "Ollama or vLLM and pass openai-compatible:URL#name)")
    key_env = "OPENAI_API_KEY" if parsed.provider == "openai" else "OPENAI_COMPATIBLE_API_KEY"
    return parsed.base_url or OPENAI_BASE_URL, parsed.model, os.environ.get(key_env) or None


def _label(block_info: str, before: str, code: str) -> str | None:
    """The path a block is labelled with, if any: info string, preceding line, first line."""
    lines = [ln for ln in before.splitlines() if ln.strip()]
    first = code.lstrip().splitlines()[0] if code.strip() else ""
    for place in (block_info, lines[-1] if lines else "",
                  first if first.lstrip().startswith("#") else ""):
        found = _PATHLIKE.findall(place)
        if found:
            return str(found[-1]).removeprefix("./")
    return None


def _matches(label: str, path: str, paths: tuple[str, ...]) -> bool:
    """``label`` names ``path``: exactly, or by a base name no other path shares."""
    if label == path:
        return True
    base = path.rsplit("/", 1)[-1]
    return label.rsplit("/", 1)[-1] == base and sum(
        p.rsplit("/", 1)[-1] == base for p in paths) == 1


def module_files(reply: str, modules: tuple[str, ...], tests: tuple[str, ...] = ()
                 ) -> dict[str, str]:
    """Which code block of ``reply`` is which module (modules without a block are absent)."""
    known = (*modules, *tests)
    blocks: list[tuple[str | None, str]] = []
    end = 0
    for m in _FENCE.finditer(reply):
        info, code = m.group(1), m.group(2)
        blocks.append((_label(info, reply[end:m.start()], code), code))
        end = m.end()
    files: dict[str, str] = {}
    free: list[str] = []
    for label, code in blocks:
        owner = next((p for p in known if label and _matches(label, p, known)), None)
        if owner is None:
            free.append(code)
        elif owner in modules and owner not in files:
            files[owner] = code
    for path in modules:
        if path not in files and free:
            files[path] = free.pop(0)
    return files


def chat(model: str, messages: list[dict[str, str]], *, max_tokens: int,
         timeout: float, temperature: float = 0.0, seed: int | None = None) -> dict[str, Any]:
    """One chat-completions request; the decoded response (raises on HTTP errors)."""
    base_url, name, key = endpoint(model)
    request: dict[str, Any] = {"model": name, "messages": messages,
                               "temperature": temperature, "max_tokens": max_tokens}
    if seed is not None:
        request["seed"] = seed
    if not temperature and is_loopback(base_url):  # llama.cpp's greedy answer, computed
        request["cache_prompt"] = False  # cold: its prompt cache would change it
    body = json.dumps(request).encode()
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    req = urllib.request.Request(f"{base_url}/chat/completions", body, headers)
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        data: dict[str, Any] = json.loads(resp.read())
    return data


def _ask(model: str, user: str, *, max_tokens: int, timeout: float, temperature: float,
         seed: int | None) -> tuple[str, dict[str, Any]]:
    """One request: the reply's text and its figures (an error is a figure, not raised)."""
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]
    started = time.monotonic()
    facts: dict[str, Any] = {"ended_by_itself": True, "error": None}
    try:
        data = chat(model, messages, max_tokens=max_tokens, timeout=timeout,
                    temperature=temperature, seed=seed)
    except (urllib.error.URLError, TimeoutError, OSError, ValueError) as exc:
        data = {}
        facts["error"] = f"{type(exc).__name__}: {exc}"
        facts["ended_by_itself"] = (not isinstance(exc, TimeoutError)
                                    and "timed out" not in str(exc))
    facts["wall_s"] = time.monotonic() - started
    choice = (data.get("choices") or [{}])[0]
    usage, timings = data.get("usage") or {}, data.get("timings") or {}
    facts.update(tokens_in=usage.get("prompt_tokens", 0),
                 tokens_out=usage.get("completion_tokens", 0),
                 finish_reason=choice.get("finish_reason"),
                 prompt_evaluated=timings.get("prompt_n"), prompt_reused=timings.get("cache_n"))
    return (choice.get("message") or {}).get("content") or "", facts


def _write(workspace: Path, files: dict[str, str]) -> None:
    for path, code in files.items():
        target = workspace / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(code)


def run_baseline(kata: Kata, model: str, workspace: Path, *, limit: float,
                 max_tokens: int, temperature: float = 0.0,
                 seed: int | None = None) -> dict[str, Any]:
    """Ask once for modules and tests, write the modules the reply holds into
    ``workspace``; what happened."""
    reply, facts = _ask(model, prompt(kata), max_tokens=max_tokens, timeout=limit,
                        temperature=temperature, seed=seed)
    row: dict[str, Any] = {"side": "module+tests", "model_calls": 1, **facts,
                           "wall_s": round(facts["wall_s"], 1)}
    files = module_files(reply, kata.modules, kata.tests)
    _write(workspace, files)
    row["files"] = sorted(files)
    (workspace.parent / "module-tests-reply.md").write_text(reply)
    return row


CHARS_PER_TOKEN = 3
"""A prompt's tokens are guessed from its length, on the safe side (code and English run
at about 3.5-4 characters a token with Qwen's tokenizer)."""


@cache
def context_size(model: str) -> int | None:
    """The server's context in tokens: the spec's ``context`` option, else what the server
    says (asked the way the framework asks it: :func:`orchestra.models._context.probe_context`);
    None when neither says."""
    stated = parse_model_spec(model).number("context")
    if stated:
        return int(stated)
    base_url, name, key = endpoint(model)
    window, _ = asyncio.run(probe_context(base_url, name, api_key=key, seconds=10))
    return window


def reply_room(model: str, prompt_text: str, cap: int) -> int:
    """``cap``, or less where the server's context leaves less beside the prompt."""
    context = context_size(model)
    if context is None:
        return cap
    return max(256, min(cap, context - (len(SYSTEM) + len(prompt_text)) // CHARS_PER_TOKEN
                        - 64))


def module_prompt(kata: Kata, module: str, written: dict[str, str]) -> str:
    """The user message asking for one module: the spec, the modules already written,
    then how to reply; the words the stock coder's first request uses
    (:func:`agents.coderasks.module_request`), so that request is this baseline's."""
    return module_request(kata.text, module, written)


_OPEN_FENCE = re.compile(r"^[ \t]*```[^\n`]*\n", re.M)


def module_code(reply: str, module: str, others: tuple[str, ...] = ()) -> str | None:
    """The module a module-alone reply holds: the block labelled with its path, else the
    first block not labelled with one of ``others`` (the spec's other paths); a reply cut
    off inside its block keeps what it wrote. None: no block."""
    files = module_files(reply, (module,), others)
    if files:
        return files[module]
    opened = _OPEN_FENCE.search(reply)
    return reply[opened.end():] if opened else None


def run_one_shot(kata: Kata, model: str, workspace: Path, *, limit: float,
                 max_tokens: int, temperature: float = 0.0,
                 seed: int | None = None) -> dict[str, Any]:
    """The baseline: each module asked for once, in the order the spec names them, into
    ``workspace``; what happened (figures summed over the requests)."""
    row: dict[str, Any] = {"side": "one-shot", "model_calls": 0, "ended_by_itself": True,
                           "error": None, "wall_s": 0.0, "tokens_in": 0, "tokens_out": 0,
                           "finish_reasons": [], "max_tokens": [], "prompt_evaluated": None,
                           "prompt_reused": None}
    written: dict[str, str] = {}
    replies: list[str] = []
    started = time.monotonic()
    for module in kata.modules:
        left = limit - (time.monotonic() - started)
        if left <= 0:
            row["ended_by_itself"] = False
            break
        asked = module_prompt(kata, module, written)
        room = reply_room(model, asked, max_tokens)
        reply, facts = _ask(model, asked, max_tokens=room, timeout=left,
                            temperature=temperature, seed=seed)
        row["max_tokens"].append(room)
        replies.append(f"## {module}\n\n{reply}")
        row["model_calls"] += 1
        row["ended_by_itself"] = row["ended_by_itself"] and facts["ended_by_itself"]
        row["error"] = row["error"] or facts["error"]
        row["finish_reasons"].append(facts["finish_reason"])
        for key in ("tokens_in", "tokens_out"):
            row[key] += facts[key]
        for key in ("prompt_evaluated", "prompt_reused"):
            if facts[key] is not None:
                row[key] = (row[key] or 0) + facts[key]
        code = module_code(reply, module, tuple(
            p for p in (*kata.modules, *kata.tests) if p != module))
        if code is not None:
            written[module] = code
    row["wall_s"] = round(time.monotonic() - started, 1)
    row["cut_off"] = row["finish_reasons"].count("length")
    _write(workspace, written)
    row["files"] = sorted(written)
    (workspace.parent / f"one-shot-reply-{seed or 0}.md").write_text("\n\n".join(replies))
    return row
