"""``orchestra serve``: the HTTP API with background runs and resumable event streams
(needs the ``server`` extra: ``pip install -e '.[server]'``, or
``pip install 'orchestra-agents[server]'``)."""

from orchestra.server.app import create_app
from orchestra.server.services import ServerSettings

__all__ = ["ServerSettings", "create_app"]
