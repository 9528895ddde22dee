"""Every error orchestra raises (the common ones are also importable from ``orchestra``)."""

from orchestra._errors import (
    ContextOverflowError,
    DeterminismError,
    LeaseLostError,
    ModelAPIError,
    ModelBehaviorError,
    ModelRetry,
    NotAStoreError,
    NotFoundError,
    OrchestraError,
    PayloadTooLargeError,
    RoleDefinitionError,
    SchemaVersionError,
    StoreError,
    UsageLimitExceeded,
    UserError,
)

__all__ = [
    "ContextOverflowError",
    "DeterminismError",
    "LeaseLostError",
    "ModelAPIError",
    "ModelBehaviorError",
    "ModelRetry",
    "NotAStoreError",
    "NotFoundError",
    "OrchestraError",
    "PayloadTooLargeError",
    "RoleDefinitionError",
    "SchemaVersionError",
    "StoreError",
    "UsageLimitExceeded",
    "UserError",
]
