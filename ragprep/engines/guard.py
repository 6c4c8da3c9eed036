"""Privacy guard: document text may only go to loopback or to hosts the operator allowed.

Loopback is decided on the endpoint as written, never by resolving it: ``localhost`` and literal loopback
addresses (``127.0.0.0/8``, ``::1``, ``::ffff:127.x.x.x``) only. A name such as ``probe.localhost`` is not
trusted (a resolver may send it anywhere and asking one is itself a DNS query that leaves the machine): it
is refused like any other host unless it is listed in ``llm.allowed_hosts``.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from ragprep.errors import RagprepError


class PrivacyGuardError(RagprepError):
    """A provider endpoint outside loopback and the allow-list."""


def host_of(url: str) -> str:
    """The lower-cased host name of an endpoint URL (the scheme may be omitted); raise when there is none."""
    parts = urlsplit(url if "://" in url else f"//{url}")
    if not parts.hostname:
        raise PrivacyGuardError(f"cannot tell the host of endpoint {url!r}")
    return parts.hostname.lower()


def is_loopback(host: str) -> bool:
    """True for ``localhost`` or a literal loopback IP address (IPv4-mapped included); nothing is resolved."""
    if host == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host.split("%")[0])
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return address.is_loopback or bool(mapped and mapped.is_loopback)


def check_endpoint(url: str, allowed_hosts: list[str], provider: str) -> str:
    """Return the host when the endpoint may receive documents; raise otherwise."""
    host = host_of(url)
    allowed = {h.lower().strip() for h in allowed_hosts if h.strip()}
    if is_loopback(host) or host in allowed:
        return host
    raise PrivacyGuardError(
        f"privacy guard: provider {provider!r} would send document text to {host}, which is neither loopback "
        f"nor allowed. If that host is approved, add it to RAGPREP_LLM__ALLOWED_HOSTS "
        f"(e.g. RAGPREP_LLM__ALLOWED_HOSTS='[\"{host}\"]') or to allowed_hosts under [llm] in ragprep.toml "
        f"(allowed_hosts = [\"{host}\"])."
    )
