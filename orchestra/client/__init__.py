"""Python client of the ``orchestra serve`` HTTP API (needs the ``server``
extra: ``pip install -e '.[server]'``, or ``pip install 'orchestra-agents[server]'``)."""

from orchestra.client._async import AsyncApprovals, AsyncClient, AsyncRuns
from orchestra.client._client import Approvals, Client, Runs
from orchestra.client._wire import ApiError, StreamEvent

__all__ = ["ApiError", "Approvals", "AsyncApprovals", "AsyncClient", "AsyncRuns", "Client",
           "Runs", "StreamEvent"]
