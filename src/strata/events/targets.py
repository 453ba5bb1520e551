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
import re
import socket
from urllib.parse import urlsplit

from strata.foundation.errors import InvalidInput

__all__ = ["URL_PATTERN", "check_url"]

MAX_URL_LEN = 2048
# What the API's schema states of a webhook URL (strata.events.webhook_models), checked here
# too so the server refuses exactly what the schema does: http(s), a host name or IPv4
# address (ASCII: an IDN in its xn-- form; no IPv6 literal), an optional port, then
# printable ASCII.
_PORT = r"(6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[0-9]{1,4})"
URL_PATTERN = rf"^https?://[A-Za-z0-9.-]+(:{_PORT})?([/?#][!-~]*)?$"
_URL = re.compile(URL_PATTERN)


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
    if not _URL.fullmatch(url):
        raise InvalidInput("url must be an http or https URL with a host name or IPv4 "
                           "address (no credentials), in printable ASCII", field="url")
    parts = urlsplit(url)
    port = parts.port
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
