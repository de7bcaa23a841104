"""Who may call the HTTP API: the exposure rule, and the Host and Origin checks.

The rule (README, "HTTP API"):

* The server is **exposed** when ``HOST`` is not a loopback address (``0.0.0.0``, ``::``,
  a LAN address, a host name other than ``localhost``) or ``PUBLIC_HOSTS`` names the host
  names it is reached by (a reverse proxy in front of a loopback bind). Otherwise it is
  **local**: only this machine can connect.
* ``GET /healthz`` and ``POST /slack/events`` are always open (supervisors probe the one,
  Slack signs the other).
* Every other route (``/api/status /api/commands /api/release /api/logs /api/metrics
  /api/routes``, Prometheus ``/metrics``, ``POST /api/ask``) needs the bearer
  ``ADMIN_API_TOKEN`` on an exposed server (refused with 403 while the token is unset).
  On a local server they are open to this machine without a token, but a request
  whose ``Host`` is not a loopback name or address is refused: a web page whose DNS
  name was rebound to 127.0.0.1 sends its own name as ``Host``, so it cannot read the API.
* ``POST /api/ask`` also refuses, whatever the token: a ``Host`` that is neither a
  loopback name/address nor one of ``PUBLIC_HOSTS``; a browser request from another
  origin (an ``Origin`` header that is not this server's own — ``null`` included — or
  ``Sec-Fetch-Site: cross-site`` / ``same-site``, which a page on another port of
  ``localhost`` gets). Command-line clients send neither header.

Loopback names are ``localhost`` and ``*.localhost`` (RFC 6761 §6.3: they resolve to the
loopback interface), and the addresses 127.0.0.0/8 and ``::1``.
"""
from __future__ import annotations

import hmac
import ipaddress
from dataclasses import dataclass
from urllib.parse import urlsplit

__all__ = ["Refusal", "ask_refusal", "bearer_ok", "host_name", "is_exposed", "is_loopback_host", "read_refusal"]

#: ``Sec-Fetch-Site`` values a browser sends for a request made by another site's page.
FOREIGN_FETCH_SITES = frozenset({"cross-site", "same-site"})


@dataclass(frozen=True)
class Refusal:
    """Why a request is refused: HTTP ``status``, error ``code`` and a sentence for the caller."""

    status: int
    code: str
    message: str


def bearer_ok(headers, token: str) -> bool:
    """Whether ``headers`` carry ``Authorization: Bearer <token>`` (compared in constant time).

    A header that is not UTF-8 (aiohttp keeps its bytes as surrogates) is compared as the bytes sent,
    so it is a wrong token, not an error."""
    scheme, _, provided = headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not provided:
        return False
    return hmac.compare_digest(provided.strip().encode("utf-8", "surrogateescape"), token.encode())


def is_loopback_host(name: str | None) -> bool:
    """Whether ``name`` (a host name or IP address, no port) can only mean this machine."""
    if not name:
        return False
    name = name.strip().lower().rstrip(".").strip("[]")
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def is_exposed(settings) -> bool:
    """Whether the server is reachable from other machines: ``HOST`` is not loopback, or
    ``PUBLIC_HOSTS`` is set."""
    return bool(settings.public_hosts) or not is_loopback_host(settings.host)


def host_name(header: str | None) -> str | None:
    """The host name of a ``Host`` header (``bot.example.com:3000`` → ``bot.example.com``,
    ``[::1]:3000`` → ``::1``), lower-case; ``None`` when absent or unparseable."""
    return _authority(header)[0]


def _authority(header: str | None) -> tuple[str | None, int | None]:
    """``(host, port)`` of a ``Host`` header, lower-case (port ``None`` when not given);
    ``(None, None)`` when absent or unparseable."""
    header = (header or "").strip().lower()
    if header.startswith("["):
        end = header.find("]")
        name, rest = header[1:end], header[end + 1:]
        if end < 2 or (rest and not rest.startswith(":")):
            return None, None
        port = rest[1:]
    else:
        name, _, port = header.partition(":")
    if (port and not port.isdigit()) or not name:
        return None, None
    return name.rstrip("."), int(port) if port else None


def _same_origin(origin: str, host_header: str | None) -> bool:
    """Whether ``Origin`` names this server as the client reached it (``Host``); ``null`` never does."""
    try:
        parts = urlsplit(origin.strip())
        origin_host, origin_port = (parts.hostname or "").lower(), parts.port
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or not origin_host:
        return False
    origin_port = origin_port or (443 if parts.scheme == "https" else 80)
    host, port = _authority(host_header)
    if host is None or host != origin_host:
        return False
    return port == origin_port if port is not None else origin_port in (80, 443)


def read_refusal(settings, headers, *, bearer_ok: bool) -> Refusal | None:
    """Whether a read-only route (``/api/*``, ``/metrics``) refuses this request, and why.

    Args:
        settings: the bot's settings (``host``, ``public_hosts``, ``admin_api_token``).
        headers: the request headers (``Host``).
        bearer_ok: the request carries the valid ``ADMIN_API_TOKEN``.
    """
    if bearer_ok:
        return None
    if is_exposed(settings):
        if not settings.admin_api_token:
            return Refusal(403, "forbidden", "This server is reachable from other hosts (HOST or PUBLIC_HOSTS): "
                                             "its API needs ADMIN_API_TOKEN, which is not set.")
        return Refusal(401, "unauthorized", "A valid bearer token (ADMIN_API_TOKEN) is required.")
    host = headers.get("Host")
    if host is not None and not is_loopback_host(host_name(host)):
        return Refusal(403, "forbidden_host", "This server answers local clients only: the Host header must be "
                                              "localhost or a loopback address.")
    return None


def ask_refusal(settings, headers, *, bearer_ok: bool, from_loopback: bool) -> Refusal | None:
    """Whether ``POST /api/ask`` refuses this request, and why (the checks in the module docstring).

    Args:
        settings: the bot's settings.
        headers: the request headers (``Host``, ``Origin``, ``Sec-Fetch-Site``).
        bearer_ok: the request carries the valid ``ADMIN_API_TOKEN``.
        from_loopback: the client connected from this machine.
    """
    host = headers.get("Host")
    name = host_name(host)
    if host is not None and not (is_loopback_host(name) or name in settings.public_hosts):
        return Refusal(403, "forbidden_host", f"POST /api/ask does not answer to the host {name or host!r}: use "
                                              "localhost, a loopback address or a host listed in PUBLIC_HOSTS.")
    origin = headers.get("Origin")
    fetch_site = (headers.get("Sec-Fetch-Site") or "").strip().lower()
    if (origin is not None and not _same_origin(origin, host)) or fetch_site in FOREIGN_FETCH_SITES:
        return Refusal(403, "cross_site", "POST /api/ask refuses requests made by another site's web page.")
    if settings.admin_api_token:
        return None if bearer_ok else Refusal(401, "unauthorized",
                                              "A valid bearer token (ADMIN_API_TOKEN) is required.")
    if is_exposed(settings):
        return Refusal(403, "forbidden", "This server is reachable from other hosts (HOST or PUBLIC_HOSTS): "
                                         "POST /api/ask needs ADMIN_API_TOKEN, which is not set.")
    if not from_loopback:
        return Refusal(403, "forbidden", "POST /api/ask needs ADMIN_API_TOKEN when called from another host.")
    return None
