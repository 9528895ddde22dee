"""orchestra: durable multi-agent pipelines on a SQLite blackboard.

What a program writes is importable from here: roles and tools, the pipeline and its
postings, the coordinator and the store, compaction policies, models and their test
doubles, and the errors worth catching. Everything else lives in named submodules:
``orchestra.store`` (store protocols, ``Writes``, ``Lease``, ``StepResult``),
``orchestra.types`` (the records a store returns), ``orchestra.errors`` (every error),
``orchestra.compaction`` (``View``, ``SummaryRequest`` for custom policies),
``orchestra.models`` (``ToolCall``, ``Usage``, adapters), ``orchestra.models.prices``
(``PriceBook``, the seam over genai-prices), ``orchestra.tools`` (``Tool``).
"""

from orchestra._errors import (
    ModelAPIError,
    ModelBehaviorError,
    ModelRetry,
    NotFoundError,
    OrchestraError,
    RoleDefinitionError,
    UsageLimitExceeded,
    UserError,
)
from orchestra._types import Run, Task
from orchestra._version import __version__
from orchestra.compaction import KeepAll, SlidingWindow, Summarize, TokenBudget
from orchestra.coordinator.coordinator import Coordinator, CoordinatorSettings
from orchestra.coordinator.pipeline import Pipeline, fan_out, handoff
from orchestra.mcp.declare import MCPServer
from orchestra.models import (
    FunctionModel,
    Model,
    ModelRequest,
    ModelResponse,
    ModelSettings,
    ScriptedModel,
    reply,
    tool_call,
)
from orchestra.models.prices import Price, Prices
from orchestra.models.spec import load_model
from orchestra.roles import Role
from orchestra.store import (
    NewHandoff,
    NewNote,
    NewTask,
    SQLiteBlackboard,
)
from orchestra.tools import ToolContext, tool

__all__ = [
    "Coordinator",
    "CoordinatorSettings",
    "FunctionModel",
    "KeepAll",
    "MCPServer",
    "Model",
    "ModelAPIError",
    "ModelBehaviorError",
    "ModelRequest",
    "ModelResponse",
    "ModelRetry",
    "ModelSettings",
    "NewHandoff",
    "NewNote",
    "NewTask",
    "NotFoundError",
    "OrchestraError",
    "Pipeline",
    "Price",
    "Prices",
    "Role",
    "RoleDefinitionError",
    "Run",
    "SQLiteBlackboard",
    "ScriptedModel",
    "SlidingWindow",
    "Summarize",
    "Task",
    "TokenBudget",
    "ToolContext",
    "UsageLimitExceeded",
    "UserError",
    "__version__",
    "fan_out",
    "handoff",
    "load_model",
    "reply",
    "tool",
    "tool_call",
]
