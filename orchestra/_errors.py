"""One base exception and families that say whose fault a failure is.

* ``UserError`` — the caller misused orchestra (bad role declaration, bad CLI
  argument, unknown run id). Fix the code or the command.
* ``StoreError`` — the database file is unusable (not SQLite, corrupt, newer
  schema, cannot be created or written) or a write was refused (payload too
  large, lease lost).
* ``ServerError`` — ``orchestra serve`` at a URL cannot be reached or used.
* ``ModelBehaviorError`` — the model misbehaved (invalid JSON, unknown tool,
  wrong arguments) past its retry budget.
* ``ModelAPIError`` — the model provider failed (HTTP error, unreachable, auth);
  ``ContextOverflowError`` when the server refused a request as longer than its context.
* ``UsageLimitExceeded`` — a token/cost/turn cap stopped the task.
* ``DeterminismError`` — replay asked for a different step than the journal holds.
* ``ModelRetry`` — a control signal a tool raises to make the model fix its call.
"""

from __future__ import annotations


class OrchestraError(Exception):
    """Base class of every error orchestra raises on purpose."""


class UserError(OrchestraError):
    """The caller misused orchestra; the message says what to change."""


class RoleDefinitionError(UserError):
    """A role declaration is invalid; raised when the class is defined."""

    def __init__(self, role: str, field: str, problem: str) -> None:
        self.role = role
        self.field = field
        super().__init__(f"role {role!r}: {field}: {problem}")


class StoreError(OrchestraError):
    """The blackboard refused an operation or its file is unusable."""


class NotAStoreError(StoreError):
    """The file is not an SQLite database, is corrupt, or is not an orchestra store."""


class StoreAccessError(StoreError):
    """The store file cannot be created, opened or written: a missing directory, no
    permission, a read-only file system, or a write to a store opened read-only."""


class SchemaVersionError(StoreError):
    """The database was written by a newer orchestra (or needs a migration in verify mode)."""


class PayloadTooLargeError(StoreError):
    """A payload is over the store's configured size limit; nothing was written."""


class LeaseLostError(StoreError):
    """This worker no longer holds the task's lease; its write was refused."""


class NotFoundError(UserError):
    """A run, task or approval id does not exist."""


class ServerError(OrchestraError):
    """``--server URL`` failed: nothing answers there, the token was refused, or what
    answers is not an ``orchestra serve`` of this version. The message says which;
    ``status`` is the HTTP status the server answered, if it answered."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        self.status = status
        super().__init__(message)


class ModelBehaviorError(OrchestraError):
    """The model produced output orchestra cannot use, past its retry budget."""


class ModelAPIError(OrchestraError):
    """The model provider failed; ``retryable`` says whether retrying can help."""

    def __init__(self, message: str, *, model: str = "", retryable: bool = False,
                 status: int | None = None) -> None:
        self.model = model
        self.retryable = retryable
        self.status = status
        super().__init__(message)


class ContextOverflowError(ModelAPIError):
    """The server refused a request as longer than the model's context window.

    ``context_tokens`` is the window the server named (None when it named none),
    ``prompt_tokens`` what it counted for the request: the runtime refits the request
    to that window and sends it once more before giving up."""

    def __init__(self, message: str, *, model: str = "", status: int | None = None,
                 context_tokens: int | None = None, prompt_tokens: int | None = None) -> None:
        super().__init__(message, model=model, retryable=False, status=status)
        self.context_tokens = context_tokens
        self.prompt_tokens = prompt_tokens


class UsageLimitExceeded(OrchestraError):
    """A cap on tokens, cost or turns was reached; raise the cap and resume."""


class DeterminismError(OrchestraError):
    """Replay asked for a different step than the journal recorded."""

    def __init__(self, task_id: str, step: int, recorded: str, requested: str) -> None:
        self.task_id = task_id
        self.step = step
        self.recorded = recorded
        self.requested = requested
        super().__init__(
            f"task {task_id} step {step}: the journal recorded {recorded!r} but replay "
            f"asked for {requested!r}. The role's code or inputs changed since this task "
            "ran; restore them, or start a new run."
        )


class ModelRetry(OrchestraError):
    """Raised by a tool to tell the model what to fix; it is fed back as the tool result.

    Raised by a role's ``check_output``, it sends the answer back; ``data`` (JSON-able:
    a test score, the rejected files) is journaled with the rejection, and later checks
    of the same task attempt see it in ``ctx.rejections`` (to keep the best answer).
    ``fresh=True`` asks for a new sample instead of a revision: the model sees its task
    again with ``message`` only, not the exchange it answered in (best-of-n sampling;
    a small model revising in view of its own answer often repeats it); with no
    ``message``, the task alone, as first asked (an independent sample).
    """

    def __init__(self, message: str = "", *, data: object = None, fresh: bool = False) -> None:
        super().__init__(message)
        self.data = data
        self.fresh = fresh


class OutputError(ValueError):
    """The reply could not be turned into the role's output; the text is fed back.

    ``brief`` is the problem in one short line, without the schema the feedback may
    carry: what an error message or a fresh restart quotes. ``afresh``: the reply must
    leave the model's view (an echo or a loop: shown it, a model copies it).
    """

    def __init__(self, message: str, *, brief: str | None = None,
                 afresh: bool = False) -> None:
        super().__init__(message)
        self.brief = one_line(brief or message)
        self.afresh = afresh


def one_line(text: str, limit: int = 240) -> str:
    """``text`` on one line (whitespace collapsed), cut to ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."
