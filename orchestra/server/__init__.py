"""``orchestra serve``: the HTTP API with background runs and resumable event streams
(needs the ``server`` extra: ``pip install -e '.[server]'``, or
``pip install 'orchestra-agents[server]'``)."""

from orchestra.server.app import ServerSettings, create_app

__all__ = ["ServerSettings", "create_app"]
