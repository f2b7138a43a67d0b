"""Whether an address stays on this machine (used by the server and the test guard)."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit


def is_loopback_host(host: str) -> bool:
    """Whether ``host`` (a name or an IP address, IPv6 optionally in brackets) is loopback."""
    host = host.strip().lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def is_loopback_url(url: str | None) -> bool:
    """Whether ``url`` (``http://127.0.0.1:8000/v1``, or a bare ``host:port``) is loopback."""
    if not url:
        return False
    host = urlsplit(url if "//" in url else f"//{url}").hostname or ""
    return is_loopback_host(host)
