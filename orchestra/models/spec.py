"""Model specs: the strings that name a model on the command line and in config.

``provider:model`` picks an adapter; adapter modules (and their SDKs) are imported
only when :func:`load_model` builds one, so ``import orchestra`` stays fast. The
test doubles have no spec: tests pass them as objects.

Options follow the model after ``?`` (``gguf:./q.gguf?n_ctx=8192``,
``openai-compatible:http://h:8080/v1#local?timeout=600&tools=json``): the limits and
capabilities a user must be able to set for their server (see :data:`OPTIONS`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from orchestra._errors import UserError
from orchestra._secrets import MASK, mask_url, url_secrets
from orchestra.models.base import Model

__all__ = ["ModelSpec", "load_model", "parse_model_spec", "resolve_model_specs"]

Provider = Literal["openai", "anthropic", "ollama", "openai-compatible", "gguf", "replay",
                   "replay-task", "python"]

OLLAMA_BASE_URL = "http://127.0.0.1:11434/v1"
SPEC_FORMS = (
    "openai:<model>                      e.g. openai:gpt-4.1-mini",
    "anthropic:<model>                   e.g. anthropic:claude-sonnet-4-5",
    "ollama:<model>                      e.g. ollama:qwen2.5-coder:7b "
    "(OLLAMA_BASE_URL overrides the URL)",
    "openai-compatible:<base_url>#<model> e.g. openai-compatible:http://127.0.0.1:8080/v1#qwen",
    "gguf:<path>                         e.g. gguf:./models/qwen2.5-0.5b.gguf",
    "replay:<path>                       replay a recording made with RecordingModel",
    "replay-task:<path>                  replay keyed per task (any schedule replays)",
    "python:<module>:<factory>           a Model your code builds (factory() -> Model)",
    "...?option=value&...                e.g. gguf:./q.gguf?n_ctx=8192, "
    "openai-compatible:http://h/v1#m?timeout=600",
)
OPTIONS: dict[str, str] = {
    "timeout": "seconds without a token before a request is abandoned (HTTP providers; "
               "default 120; streamed answers may take longer in all)",
    "context": "the model's context window in tokens: requests are compacted to fit it "
               "(default: asked of a llama.cpp, vLLM or LM Studio server, else learned "
               "from its first refusal for size; given, it wins)",
    "n_ctx": "gguf only: the context the model is loaded with (default 4096; also 'context')",
    "structured": "how a structured answer is constrained: json_schema, json_object or none",
    "tools": "native (the provider's tool calls) or json (one constrained JSON object a turn)",
    "concurrency": "requests in flight at once (HTTP servers; default 1 for local servers, "
                   "whose one slot queues the rest in silence; unbounded for OpenAI)",
}
"""Spec options and what they mean (``?timeout=600&context=8192``)."""
_CHOICES = {"structured": ("json_schema", "json_object", "none"), "tools": ("native", "json")}
_NO_OPTIONS = ("replay", "replay-task", "python")
_ROLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """A parsed model spec; ``base_url`` is set for ollama and openai-compatible."""

    provider: Provider
    model: str
    base_url: str | None = None
    options: tuple[tuple[str, str], ...] = ()
    """``(name, value)`` pairs from after ``?``, each checked against :data:`OPTIONS`."""

    def __str__(self) -> str:
        """The spec as shown and recorded: a password in the URL appears as ``***``."""
        query = "?" + "&".join(f"{k}={v}" for k, v in self.options) if self.options else ""
        if self.provider == "openai-compatible":
            return f"openai-compatible:{mask_url(self.base_url or '')}#{self.model}{query}"
        return f"{self.provider}:{self.model}{query}"

    def option(self, name: str) -> str | None:
        return dict(self.options).get(name)

    def number(self, name: str) -> float | None:
        value = self.option(name)
        return None if value is None else float(value)


def _bad(spec: str, problem: str) -> UserError:
    forms = "\n  ".join(SPEC_FORMS)
    return UserError(f"model spec {_shown(spec)!r}: {problem}. Accepted forms:\n  {forms}")


def _shown(spec: str) -> str:
    """``spec`` as it may be printed: a password in its URL masked."""
    url = spec.partition(":")[2].partition("#")[0]
    return spec.replace(url, mask_url(url)) if "://" in url else spec


def _http_url(spec: str, url: str) -> str:
    shown = mask_url(url)
    if not re.match(r"^https?://[^/\s]+", url):
        raise _bad(spec, f"base URL {shown!r} must start with http:// or https://")
    if MASK in url_secrets(url):
        raise _bad(spec, "its credentials were masked when the run was recorded (orchestra "
                         "never stores them); pass the model again with --model")
    return url.rstrip("/")


def ollama_base_url(environ: Mapping[str, str] | None = None) -> str:
    """Ollama's OpenAI-compatible URL: ``OLLAMA_BASE_URL`` (``/v1`` added if missing)."""
    url = (os.environ if environ is None else environ).get("OLLAMA_BASE_URL") or OLLAMA_BASE_URL
    url = url.rstrip("/")
    if "://" not in url:
        url = f"http://{url}"
    return url if url.endswith("/v1") else f"{url}/v1"


def _split_options(spec: str, text: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    """``text`` without its ``?k=v&...`` tail, and the checked options of that tail."""
    head, mark, tail = text.rpartition("?")
    if not mark or not re.fullmatch(r"[A-Za-z_]+=[^&=]*(&[A-Za-z_]+=[^&=]*)*", tail):
        return text, ()  # no options ('?' may belong to a path)
    options: list[tuple[str, str]] = []
    for pair in tail.split("&"):
        name, _, value = pair.partition("=")
        if name not in OPTIONS:
            raise _bad(spec, f"unknown option {name!r} (options: {', '.join(OPTIONS)})")
        if name in dict(options):
            raise _bad(spec, f"option {name!r} given twice")
        if name in ("timeout", "context", "n_ctx", "concurrency"):
            try:
                ok = float(value) > 0 and (name == "timeout" or float(value).is_integer())
            except ValueError:
                ok = False
            if not ok:
                raise _bad(spec, f"option {name}={value!r} must be a positive "
                           f"{'number' if name == 'timeout' else 'whole number'}")
        elif value not in _CHOICES[name]:
            raise _bad(spec, f"option {name}={value!r} must be one of "
                       f"{', '.join(_CHOICES[name])}")
        options.append((name, value))
    return head, tuple(options)


def parse_model_spec(spec: str) -> ModelSpec:
    """Parse ``provider:model[?options]``; a bad spec raises ``UserError`` listing the forms."""
    parsed = _parse_base(spec)
    if parsed.provider in _NO_OPTIONS:
        return parsed
    model, options = _split_options(spec, parsed.model)
    if not model:
        raise _bad(spec, "missing the model before the options")
    if "n_ctx" in dict(options) and parsed.provider != "gguf":
        raise _bad(spec, "option 'n_ctx' is for gguf models; use 'context' to say how large "
                   "a served model's context is")
    return ModelSpec(parsed.provider, model, parsed.base_url, options)


def _parse_base(spec: str) -> ModelSpec:
    text = spec.strip()
    provider, sep, rest = text.partition(":")
    provider = provider.lower()
    if not sep:
        raise _bad(spec, "missing the provider prefix")
    if not rest:
        raise _bad(spec, "missing the model after the provider")
    if provider == "openai":
        return ModelSpec("openai", rest)
    if provider == "anthropic":
        return ModelSpec("anthropic", rest)
    if provider == "ollama":
        return ModelSpec("ollama", rest, ollama_base_url())
    if provider == "openai-compatible":
        url, hash_sign, model = rest.partition("#")  # a base URL has no fragment
        if not hash_sign or not url or not model:
            raise _bad(spec, "openai-compatible needs '<base_url>#<model>'")
        return ModelSpec("openai-compatible", model, _http_url(spec, url))
    if provider == "gguf":
        return ModelSpec("gguf", rest)
    if provider in ("replay", "replay-task"):
        return ModelSpec("replay" if provider == "replay" else "replay-task", rest)
    if provider == "python":
        module, colon, attr = rest.partition(":")
        if not colon or not module or not attr:
            raise _bad(spec, "python needs '<module>:<factory>', e.g. python:mypkg.models:build")
        return ModelSpec("python", rest)
    raise _bad(spec, f"unknown provider {provider!r}")


JSON_TOOLS_BY_DEFAULT: frozenset[Provider] = frozenset({"ollama", "openai-compatible", "gguf"})
"""Providers whose models get the JSON tool protocol unless the spec says ``tools=native``:
the small local models they serve write tool calls as text more often than natively."""


def load_model(spec: str) -> Model:
    """Build the adapter a spec names (importing its SDK only now), options applied."""
    parsed = parse_model_spec(spec)
    model = _adapter(spec, parsed)
    tools = parsed.option("tools") or (
        "json" if parsed.provider in JSON_TOOLS_BY_DEFAULT else "native")
    if tools == "json":
        from orchestra.models.json_tools import JSONToolModel

        return JSONToolModel(model)
    return model


def _adapter(spec: str, parsed: ModelSpec) -> Model:
    name = str(parsed)
    timeout = parsed.number("timeout")
    context = parsed.number("context")
    http: dict[str, Any] = {"name": name}
    if timeout is not None:
        http["timeout"] = timeout
    if context is not None:
        http["context_tokens"] = int(context)
    if parsed.provider in ("openai", "ollama", "openai-compatible"):
        from orchestra.models.openai import OpenAIModel

        structured = parsed.option("structured")
        if structured is not None:
            http["json_schema_mode"] = structured
        concurrency = parsed.number("concurrency")
        if concurrency is not None:
            http["concurrency"] = int(concurrency)
        return OpenAIModel(parsed.model, base_url=parsed.base_url, **http)
    if parsed.provider == "anthropic":
        from orchestra.models.anthropic import AnthropicModel

        if parsed.option("concurrency") is not None:
            raise _bad(spec, "option 'concurrency' is for OpenAI-compatible servers")
        if parsed.option("structured") not in (None, "json_schema"):
            raise _bad(spec, "Anthropic structured output is always a forced tool whose input "
                       "schema is the answer; drop the 'structured' option")
        return AnthropicModel(parsed.model, **http)
    if parsed.provider == "python":
        return _python_model(spec, parsed.model)
    if parsed.provider in ("replay", "replay-task"):
        from orchestra.models.record import ReplayModel

        if not os.path.isfile(parsed.model):
            raise _bad(spec, f"recording {parsed.model!r} does not exist")
        return ReplayModel(parsed.model, name=name,
                           key="task" if parsed.provider == "replay-task" else "request")
    from orchestra.models.gguf import GGUFModel

    if timeout is not None:
        raise _bad(spec, "option 'timeout' is for served models; an in-process gguf model "
                   "has no request timeout")
    n_ctx = int(parsed.number("n_ctx") or context or 4096)
    return GGUFModel(parsed.model, name=name, n_ctx=n_ctx,
                     structured=parsed.option("structured") or "auto")


def _python_model(spec: str, ref: str) -> Model:
    """``module:factory``: the model a user's code builds (any process rebuilds it)."""
    import importlib

    module_name, _, attr = ref.partition(":")
    try:
        factory = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise _bad(spec, f"cannot load {ref!r}: {exc}") from None
    model = factory() if callable(factory) and not hasattr(factory, "request") else factory
    if not callable(getattr(model, "request", None)):
        raise _bad(spec, f"{ref!r} gave {type(model).__name__}, not a Model")
    return model  # type: ignore[no-any-return]


def resolve_model_specs(default: str | None, overrides: Iterable[str], *,
                        environ: Mapping[str, str] | None = None,
                        ) -> tuple[str | None, dict[str, str]]:
    """The default spec and per-role specs from ``--model`` values.

    Each override is ``role=spec`` (``--model coder=openai:gpt-4.1``) or a bare spec,
    which sets the default. Without a default, ``ORCHESTRA_MODEL`` is used. Every
    spec is parsed here, so a typo fails before any run starts.
    """
    env = os.environ if environ is None else environ
    bare: list[str] = []
    roles: dict[str, str] = {}
    for entry in overrides:
        role, eq, spec = entry.partition("=")
        if eq and ":" not in role:  # a spec's own '=' (e.g. in a URL) comes after its ':'
            role, spec = role.strip(), spec.strip()
            if not _ROLE.match(role):
                raise UserError(f"--model {entry!r}: {role!r} is not a role name; "
                                "use role=provider:model")
            if role in roles:
                raise UserError(f"--model {entry!r}: role {role!r} already has model "
                                f"{roles[role]!r}; give each role one --model")
            parse_model_spec(spec)
            roles[role] = spec
        else:
            bare.append(entry.strip())
    if default is not None:
        bare.insert(0, default.strip())
    if len(set(bare)) > 1:
        raise UserError(f"several default models given ({', '.join(map(repr, bare))}); "
                        "give one, and role=spec for the others")
    chosen = bare[0] if bare else (env.get("ORCHESTRA_MODEL") or None)
    if chosen is not None:
        parse_model_spec(chosen)
    return chosen, roles
