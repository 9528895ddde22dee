"""Model specs: the strings that name a model on the command line and in config.

``provider:model`` picks an adapter; adapter modules (and their SDKs) are imported
only when :func:`load_model` builds one, so ``import orchestra`` stays fast. The
test doubles have no spec: tests pass them as objects.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from orchestra._errors import UserError
from orchestra.models.base import Model

__all__ = ["ModelSpec", "load_model", "parse_model_spec", "resolve_model_specs"]

Provider = Literal["openai", "anthropic", "ollama", "openai-compatible", "gguf", "replay",
                   "replay-task"]

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
)
_ROLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """A parsed model spec; ``base_url`` is set for ollama and openai-compatible."""

    provider: Provider
    model: str
    base_url: str | None = None

    def __str__(self) -> str:
        if self.provider == "openai-compatible":
            return f"openai-compatible:{self.base_url}#{self.model}"
        return f"{self.provider}:{self.model}"


def _bad(spec: str, problem: str) -> UserError:
    forms = "\n  ".join(SPEC_FORMS)
    return UserError(f"model spec {spec!r}: {problem}. Accepted forms:\n  {forms}")


def _http_url(spec: str, url: str) -> str:
    if not re.match(r"^https?://[^/\s]+", url):
        raise _bad(spec, f"base URL {url!r} must start with http:// or https://")
    return url.rstrip("/")


def ollama_base_url(environ: Mapping[str, str] | None = None) -> str:
    """Ollama's OpenAI-compatible URL: ``OLLAMA_BASE_URL`` (``/v1`` added if missing)."""
    url = (os.environ if environ is None else environ).get("OLLAMA_BASE_URL") or OLLAMA_BASE_URL
    url = url.rstrip("/")
    if "://" not in url:
        url = f"http://{url}"
    return url if url.endswith("/v1") else f"{url}/v1"


def parse_model_spec(spec: str) -> ModelSpec:
    """Parse ``provider:model``; a bad spec raises ``UserError`` listing the forms."""
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
    raise _bad(spec, f"unknown provider {provider!r}")


def load_model(spec: str) -> Model:
    """Build the adapter a spec names (importing its SDK only now)."""
    parsed = parse_model_spec(spec)
    name = str(parsed)
    if parsed.provider == "openai":
        from orchestra.models.openai import OpenAIModel

        return OpenAIModel(parsed.model, name=name)
    if parsed.provider in ("ollama", "openai-compatible"):
        from orchestra.models.openai import OpenAIModel

        return OpenAIModel(parsed.model, base_url=parsed.base_url, name=name)
    if parsed.provider == "anthropic":
        from orchestra.models.anthropic import AnthropicModel

        return AnthropicModel(parsed.model, name=name)
    if parsed.provider in ("replay", "replay-task"):
        from orchestra.models.record import ReplayModel

        if not os.path.isfile(parsed.model):
            raise _bad(spec, f"recording {parsed.model!r} does not exist")
        return ReplayModel(parsed.model, name=name,
                           key="task" if parsed.provider == "replay-task" else "request")
    from orchestra.models.gguf import GGUFModel

    return GGUFModel(parsed.model, name=name)


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
