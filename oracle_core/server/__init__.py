"""``oracle serve``: the oracle as an HTTP service (needs ``pip install 'oracle-core[server]'``).

    from oracle_core.server import create_app
    app = create_app(Oracle(), tokens=["s3cret"])   # any ASGI server can run it

See docs/server.md for the endpoints, auth, limits, the SSE format and plugin routes.
"""

from oracle_core.server.app import create_app
from oracle_core.server.auth import BearerAuth, parse_tokens
from oracle_core.server.limits import Limits
from oracle_core.values.loopback import is_loopback_host as is_loopback

__all__ = ["BearerAuth", "Limits", "create_app", "is_loopback", "parse_tokens"]
