"""The top level holds what a program writes; worker internals live in named submodules."""

from __future__ import annotations

import importlib

import orchestra

INTERNALS = {
    "orchestra.store": ["Blackboard", "Lease", "StepResult", "Writes", "ClaimSpec"],
    "orchestra.types": ["Step", "Message", "Event", "Handoff", "Approval", "AgentInfo"],
    "orchestra.errors": ["DeterminismError", "LeaseLostError", "StoreError",
                         "PayloadTooLargeError", "NotAStoreError", "SchemaVersionError"],
    "orchestra.compaction": ["View", "SummaryRequest", "CompactionPolicy"],
    "orchestra.models": ["ToolCall", "Usage"],
    "orchestra.models.prices": ["PriceBook", "GenaiPrices", "Pricer"],
    "orchestra.tools": ["Tool"],
    "orchestra.coordinator.pipeline": ["load_pipeline"],
}


def test_top_level_is_the_user_api() -> None:
    assert set(orchestra.__all__) == {
        "Coordinator", "CoordinatorSettings", "FunctionModel", "KeepAll", "MCPServer", "Model",
        "ModelAPIError", "ModelBehaviorError", "ModelRequest", "ModelResponse", "ModelRetry",
        "ModelSettings", "NewHandoff", "NewNote", "NewTask", "NotFoundError", "OrchestraError",
        "Pipeline", "Price", "Prices", "Role", "RoleDefinitionError", "Run", "SQLiteBlackboard",
        "ScriptedModel", "SlidingWindow", "Summarize", "Task", "TaskWindow", "TokenBudget",
        "ToolContext",
        "UsageLimitExceeded", "UserError", "__version__", "fan_out", "handoff", "load_model",
        "reply", "tool", "tool_call",
        # the blackboard's coordination (issue 48): typed entries, their scopes, what a
        # role consumes, the board as a role sees it
        "BoardView", "Entry", "NewEntry", "On", "PRIVATE", "PUBLIC", "Scope", "Stall", "When",
        "entry"}
    for name in orchestra.__all__:
        assert hasattr(orchestra, name), name


def test_internals_live_in_named_submodules() -> None:
    for module, names in INTERNALS.items():
        mod = importlib.import_module(module)
        for name in names:
            assert hasattr(mod, name), f"{module}.{name}"
            assert name not in orchestra.__all__ and not hasattr(orchestra, name), name


def test_dead_names_are_gone() -> None:
    import orchestra._errors as errors
    import orchestra._types as types
    import orchestra.coordinator.pipeline as pipeline
    import orchestra.store.rows as rows

    for module, name in ((errors, "ToolTimeoutError"), (errors, "TaskFailedError"),
                         (rows, "as_rows"), (types, "TERMINAL_TASK_STATUSES"),
                         (pipeline, "PipelineFactory")):
        assert not hasattr(module, name), name
