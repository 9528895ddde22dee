"""The model interface, test doubles and (lazily imported) provider adapters."""

from orchestra.models._guard import check_allowed
from orchestra.models.base import (
    Model,
    ModelRequest,
    ModelResponse,
    ModelSettings,
    OutputSchema,
    ToolCall,
    ToolSchema,
    Usage,
)
from orchestra.models.testing import FunctionModel, ScriptedModel, reply, tool_call

__all__ = [
    "FunctionModel",
    "Model",
    "ModelRequest",
    "ModelResponse",
    "ModelSettings",
    "OutputSchema",
    "ScriptedModel",
    "ToolCall",
    "ToolSchema",
    "Usage",
    "check_allowed",
    "reply",
    "tool_call",
]
