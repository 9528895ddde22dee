"""The model interface, test doubles and (lazily imported) provider adapters."""

from orchestra.models._guard import check_allowed
from orchestra.models.base import (
    DeltaSink,
    Model,
    ModelRequest,
    ModelResponse,
    ModelSettings,
    OutputSchema,
    StreamingModel,
    ToolCall,
    ToolSchema,
    Usage,
)
from orchestra.models.testing import Chunks, FunctionModel, ScriptedModel, reply, tool_call

__all__ = [
    "Chunks",
    "DeltaSink",
    "FunctionModel",
    "Model",
    "ModelRequest",
    "ModelResponse",
    "ModelSettings",
    "OutputSchema",
    "ScriptedModel",
    "StreamingModel",
    "ToolCall",
    "ToolSchema",
    "Usage",
    "check_allowed",
    "reply",
    "tool_call",
]
