"""``orchestra serve``: the HTTP API with background runs and resumable event streams
(needs ``pip install 'orchestra[server]'``)."""

from orchestra.server.app import ServerSettings, create_app

__all__ = ["ServerSettings", "create_app"]
