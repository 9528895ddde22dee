"""Python client of the ``orchestra serve`` HTTP API (needs ``pip install 'orchestra[server]'``)."""

from orchestra.client._client import ApiError, Approvals, Client, Runs, StreamEvent

__all__ = ["ApiError", "Approvals", "Client", "Runs", "StreamEvent"]
