"""Where a webhook may deliver: an http(s) URL whose host resolves only to public addresses.

A webhook URL is chosen by a tenant's owner and fetched by the server, so without a check it
reaches what the server can reach and the owner cannot: the cloud metadata service
(169.254.169.254), the database, the loopback interface. Every address the host resolves to
must be global (not loopback, link-local, private, shared, reserved, multicast or
unspecified, in IPv4 or IPv6, an IPv4-mapped IPv6 address judged as its IPv4 one). The check
runs at registration and again before each delivery, so a name that resolves elsewhere
later (DNS rebinding) is caught at the send. ``STRATA_WEBHOOKS_ALLOW_PRIVATE=true`` lifts it
for a local setup (``strata dev`` delivering to a receiver on 127.0.0.1).
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from strata.errors import InvalidInput

__all__ = ["check_url"]

MAX_URL_LEN = 2048


def _public(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


def check_url(url: str, *, allow_private: bool, resolve=socket.getaddrinfo) -> str:
    """``url`` if a webhook may deliver there; else :class:`InvalidInput` naming ``url``."""
    if not isinstance(url, str) or len(url) > MAX_URL_LEN:
        raise InvalidInput(f"url must be a string of at most {MAX_URL_LEN} characters",
                           field="url")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidInput("url must be an http or https URL with a host", field="url")
    if parts.username or parts.password:
        raise InvalidInput("url must not carry credentials", field="url")
    try:
        port = parts.port
    except ValueError:
        raise InvalidInput("url has an invalid port", field="url") from None
    if allow_private:
        return url
    try:
        found = resolve(parts.hostname, port or (443 if parts.scheme == "https" else 80),
                        type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise InvalidInput("url's host does not resolve", field="url") from None
    addresses = {info[4][0] for info in found}
    if not addresses or not all(_public(a) for a in addresses):
        raise InvalidInput("url must resolve to public addresses only (not loopback, "
                           "link-local or private ranges)", field="url")
    return url
