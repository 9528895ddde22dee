"""Model specs: parsing, per-role overrides, lazy adapter loading."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import orchestra
from orchestra._errors import UserError
from orchestra.models.json_tools import JSONToolModel
from orchestra.models.spec import ModelSpec, load_model, parse_model_spec, resolve_model_specs


@pytest.mark.parametrize(("spec", "expected"), [
    ("openai:gpt-4.1-mini", ModelSpec("openai", "gpt-4.1-mini")),
    ("anthropic:claude-sonnet-4-5", ModelSpec("anthropic", "claude-sonnet-4-5")),
    ("ollama:qwen2.5-coder:7b", ModelSpec("ollama", "qwen2.5-coder:7b",
                                         "http://127.0.0.1:11434/v1")),
    ("openai-compatible:http://127.0.0.1:8080/v1#qwen",
     ModelSpec("openai-compatible", "qwen", "http://127.0.0.1:8080/v1")),
    ("openai-compatible:https://h.example/v1/#org/model#2",
     ModelSpec("openai-compatible", "org/model#2", "https://h.example/v1")),
    ("gguf:./models/q.gguf", ModelSpec("gguf", "./models/q.gguf")),
    (" OpenAI:gpt-4o ", ModelSpec("openai", "gpt-4o")),
])
def test_good_specs(spec: str, expected: ModelSpec) -> None:
    assert parse_model_spec(spec) == expected


def test_spec_round_trips_through_str() -> None:
    for spec in ("openai:gpt-4o", "openai-compatible:http://h:1/v1#m", "gguf:/x.gguf"):
        assert str(parse_model_spec(spec)) == spec


@pytest.mark.parametrize(("spec", "problem"), [
    ("gpt-4o", "missing the provider prefix"),
    ("openai:", "missing the model"),
    ("azure:gpt-4o", "unknown provider 'azure'"),
    ("openai-compatible:http://h/v1", "needs '<base_url>#<model>'"),
    ("openai-compatible:ftp://h/v1#m", "must start with http:// or https://"),
    ("openai-compatible:http://h/v1#", "needs '<base_url>#<model>'"),
])
def test_bad_specs_quote_the_spec_and_list_the_forms(spec: str, problem: str) -> None:
    with pytest.raises(UserError) as info:
        parse_model_spec(spec)
    message = str(info.value)
    assert repr(spec) in message and problem in message
    for form in ("openai:<model>", "anthropic:<model>", "ollama:<model>",
                 "openai-compatible:<base_url>#<model>", "gguf:<path>"):
        assert form in message


@pytest.mark.parametrize(("env", "url"), [
    ("http://gpu-box:11434", "http://gpu-box:11434/v1"),
    ("http://gpu-box:11434/v1/", "http://gpu-box:11434/v1"),
    ("gpu-box:11434", "http://gpu-box:11434/v1"),
])
def test_ollama_base_url_from_env(monkeypatch: pytest.MonkeyPatch, env: str, url: str) -> None:
    monkeypatch.setenv("OLLAMA_BASE_URL", env)
    assert parse_model_spec("ollama:llama3").base_url == url


def test_resolve_roles_and_default() -> None:
    default, roles = resolve_model_specs(
        "openai:gpt-4.1-mini", ["coder=anthropic:claude-x", "reviewer = ollama:qwen"])
    assert default == "openai:gpt-4.1-mini"
    assert roles == {"coder": "anthropic:claude-x", "reviewer": "ollama:qwen"}


def test_bare_override_is_the_default_and_urls_may_hold_equals() -> None:
    spec = "openai-compatible:http://h/v1?a=b#m"
    assert resolve_model_specs(None, [spec, "coder=gguf:/m.gguf"]) == (
        spec, {"coder": "gguf:/m.gguf"})


def test_env_default(monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve_model_specs(None, []) == (None, {})
    monkeypatch.setenv("ORCHESTRA_MODEL", "ollama:qwen")
    assert resolve_model_specs(None, []) == ("ollama:qwen", {})
    assert resolve_model_specs("openai:gpt-4o", []) == ("openai:gpt-4o", {})


@pytest.mark.parametrize(("default", "overrides", "problem"), [
    (None, ["coder=azure:x"], "unknown provider 'azure'"),
    (None, ["coder=openai:a", "coder=openai:b"], "already has model"),
    (None, ["bad role=openai:a"], "is not a role name"),
    ("openai:a", ["openai:b"], "several default models"),
    ("nonsense", [], "missing the provider prefix"),
])
def test_resolve_rejects(default: str | None, overrides: list[str], problem: str) -> None:
    with pytest.raises(UserError, match=problem):
        resolve_model_specs(default, overrides)


def test_bad_env_default_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ORCHESTRA_MODEL", "gpt-4o")
    with pytest.raises(UserError, match="'gpt-4o'"):
        resolve_model_specs(None, [])


def test_load_model_builds_the_adapter(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from orchestra.models.anthropic import AnthropicModel
    from orchestra.models.openai import OpenAIModel

    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-y")
    openai_model = load_model("openai:gpt-4.1-mini")
    assert isinstance(openai_model, OpenAIModel) and openai_model.name == "openai:gpt-4.1-mini"
    local = load_model("ollama:qwen")
    # local servers get the JSON tool protocol by default
    assert isinstance(local, JSONToolModel) and local.name == "ollama:qwen"
    assert isinstance(local.inner, OpenAIModel)
    assert local.inner.base_url == "http://127.0.0.1:11434/v1"
    compatible = load_model("openai-compatible:http://127.0.0.1:9/v1#m")
    assert isinstance(compatible, JSONToolModel) and isinstance(compatible.inner, OpenAIModel)
    assert compatible.inner.model == "m"
    assert isinstance(load_model("anthropic:claude-x"), AnthropicModel)
    with pytest.raises(UserError, match="GGUF model file not found"):
        load_model(f"gguf:{tmp_path / 'missing.gguf'}")


def test_spec_and_record_do_not_import_sdks() -> None:
    code = ("import sys, orchestra, orchestra.models.spec, orchestra.models.record; "
            "loaded = {'openai', 'anthropic', 'xllamacpp'} & set(sys.modules); "
            "assert not loaded, loaded")
    package_root = Path(orchestra.__file__).resolve().parents[1]
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60, env={**os.environ, "PYTHONPATH": str(package_root)})
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize(("spec", "expected"), [
    ("gguf:./q.gguf?n_ctx=8192", ModelSpec("gguf", "./q.gguf", options=(("n_ctx", "8192"),))),
    ("openai-compatible:http://h:1/v1?a=b#local?timeout=600&tools=native",
     ModelSpec("openai-compatible", "local", "http://h:1/v1?a=b",
               (("timeout", "600"), ("tools", "native")))),
    ("ollama:qwen2.5-coder:7b?context=32768&structured=json_object",
     ModelSpec("ollama", "qwen2.5-coder:7b", "http://127.0.0.1:11434/v1",
               (("context", "32768"), ("structured", "json_object")))),
    ("gguf:./what?.gguf", ModelSpec("gguf", "./what?.gguf")),  # a '?' of the path
])
def test_spec_options(spec: str, expected: ModelSpec) -> None:
    parsed = parse_model_spec(spec)
    assert parsed == expected
    assert parse_model_spec(str(parsed)) == parsed


@pytest.mark.parametrize(("spec", "problem"), [
    ("openai:gpt-4o?temperature=1", "unknown option 'temperature'"),
    ("openai:gpt-4o?timeout=soon", "timeout='soon' must be a positive number"),
    ("gguf:q.gguf?n_ctx=0", "n_ctx='0' must be a positive whole number"),
    ("gguf:q.gguf?context=1.5", "must be a positive whole number"),
    ("openai:gpt-4o?tools=xml", "tools='xml' must be one of native, json"),
    ("openai:gpt-4o?timeout=1&timeout=2", "option 'timeout' given twice"),
    ("ollama:qwen?n_ctx=8192", "option 'n_ctx' is for gguf models"),
    ("ollama:?timeout=5", "missing the model before the options"),
])
def test_bad_spec_options_say_what_is_wrong(spec: str, problem: str) -> None:
    with pytest.raises(UserError, match=re.escape(problem)):
        parse_model_spec(spec)


def test_spec_options_reach_the_adapter(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from orchestra.models.anthropic import AnthropicModel
    from orchestra.models.gguf import GGUFModel
    from orchestra.models.openai import OpenAIModel

    served = load_model("openai-compatible:http://127.0.0.1:9/v1#m?timeout=600&context=8192"
                        "&structured=json_object")
    assert isinstance(served, JSONToolModel) and isinstance(served.inner, OpenAIModel)
    assert served.inner.timeout == 600 and served.context_tokens == 8192
    assert served.inner.json_schema_mode == "json_object"
    native = load_model("ollama:qwen?tools=native&timeout=30")
    assert isinstance(native, OpenAIModel) and native.timeout == 30
    assert native.context_tokens is None
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-y")
    claude = load_model("anthropic:claude-x?timeout=300&tools=json")
    assert isinstance(claude, JSONToolModel) and isinstance(claude.inner, AnthropicModel)
    assert claude.inner.timeout == 300
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF" + bytes(16))
    monkeypatch.setattr("orchestra.models.gguf._import_sdk", lambda: object())
    local = load_model(f"gguf:{gguf}?n_ctx=8192&tools=native")
    assert isinstance(local, GGUFModel) and local.n_ctx == 8192 == local.context_tokens
    with pytest.raises(UserError, match="no request timeout"):
        load_model(f"gguf:{gguf}?timeout=5")
