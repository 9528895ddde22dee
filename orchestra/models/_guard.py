"""A process-wide switch that stops real model adapters from sending requests.

Test suites set ``ALLOW_MODEL_REQUESTS = False`` (orchestra's own conftest does,
autouse) so no test reaches a real model by accident; a test that means to talk
to a real server opts in by setting it back. The test doubles ignore it.
"""

from __future__ import annotations

from orchestra._errors import UserError

ALLOW_MODEL_REQUESTS: bool = True


def check_allowed(model_name: str) -> None:
    """Raise if real model requests are switched off (as in tests)."""
    if not ALLOW_MODEL_REQUESTS:
        raise UserError(
            f"model {model_name!r}: real model requests are disabled "
            "(orchestra.models.ALLOW_MODEL_REQUESTS is False, as in tests). "
            "Use FunctionModel/ScriptedModel, or opt in explicitly."
        )
