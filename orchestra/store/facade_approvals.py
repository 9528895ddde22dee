"""The approvals' methods, written once: a tool call waiting for a person (see ``facade``)."""

from __future__ import annotations

from orchestra._types import JSON, Approval
from orchestra.store.backend import C, X
from orchestra.store.facade import Facade
from orchestra.store.protocol import Lease


class ApprovalFacade(Facade[X, C]):
    """Mixed into each backend's store class."""

    async def request_approval(self, task_id: str, lease: Lease, *, retry: int, step: int,
                               tool: str, arguments: JSON) -> Approval:
        return await self._write(lambda tx: self._sql.approvals.request_approval(
            tx, task_id, lease, retry=retry, step=step, tool=tool, arguments=arguments))

    async def find_approval(self, task_id: str, retry: int, step: int) -> Approval | None:
        return await self._read(lambda c: self._sql.reads.find_approval(c, task_id, retry, step))

    async def get_approval(self, approval_id: str) -> Approval:
        return await self._read(lambda c: self._sql.reads.get_approval(c, approval_id))

    async def list_approvals(self, run_id: str, *, status: str | None = None) -> list[Approval]:
        return await self._read(lambda c: self._sql.reads.list_approvals(c, run_id, status))

    async def decide_approval(self, approval_id: str, *, approved: bool, by: str,
                              reason: str | None = None) -> Approval:
        return await self._write(lambda tx: self._sql.approvals.decide_approval(
            tx, approval_id, approved=approved, by=by, reason=reason))
