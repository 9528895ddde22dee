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

from orchestra._entries import PRIVATE, PUBLIC, Entry, Scope
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
from orchestra.compaction import KeepAll, SlidingWindow, Summarize, TaskWindow, TokenBudget
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
from orchestra.store.entry_protocol import NewEntry
from orchestra.subscriptions import BoardView, On, Stall, When, entry
from orchestra.tools import ToolContext, tool

__all__ = [
    "PRIVATE",
    "PUBLIC",
    "BoardView",
    "Coordinator",
    "CoordinatorSettings",
    "Entry",
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
    "NewEntry",
    "NewHandoff",
    "NewNote",
    "NewTask",
    "NotFoundError",
    "On",
    "OrchestraError",
    "Pipeline",
    "Price",
    "Prices",
    "Role",
    "RoleDefinitionError",
    "Run",
    "SQLiteBlackboard",
    "Scope",
    "ScriptedModel",
    "SlidingWindow",
    "Stall",
    "Summarize",
    "Task",
    "TaskWindow",
    "TokenBudget",
    "ToolContext",
    "UsageLimitExceeded",
    "UserError",
    "When",
    "__version__",
    "entry",
    "fan_out",
    "handoff",
    "load_model",
    "reply",
    "tool",
    "tool_call",
]
