"""The connection to Slack: checked at start-up, watched while serving, reported by ``/healthz``.

    health = SlackHealth(socket_mode=settings.socket_mode)
    await check_credentials(client, app_token=settings.slack_app_token, health=health)  # SlackAuthError
    await watch_slack(health, client=client, socket_client=handler.client, exit_after_s=300)  # raises at the end

* **At start-up** :func:`check_credentials` calls ``auth.test`` with the bot token (and, in
  Socket Mode, ``apps.connections.open`` with the app token, whose URL the Socket Mode client
  then uses). A token Slack rejects (:data:`REJECTED_TOKEN_ERRORS`) raises
  :class:`SlackAuthError` at once: one clear line, a non-zero exit, instead of an HTTP 500 per
  slash command (Bolt's lazy ``auth.test``) or endless Socket Mode reconnect tracebacks. A
  network failure (Slack unreachable) is logged once and is not fatal: serving starts and
  :func:`watch_slack` keeps checking.
* **While serving** :func:`watch_slack` checks every ``every_s``: ``auth.test`` (the Web API
  answers; HTTP mode has no other connection to watch) and, in Socket Mode, slack_sdk's
  ``SocketModeClient.is_connected()`` (the WebSocket is open and its ping-pong answered). The
  result lands in :class:`SlackHealth`, which ``/healthz`` reports (HTTP 503 while Slack is not
  reachable). When Slack has not been reachable for ``exit_after_s`` (``SLACK_UNREACHABLE_EXIT_S``)
  it raises :class:`SlackUnreachableError`, and ``slackzilla serve`` exits non-zero so its
  supervisor (systemd, Docker, Kubernetes) restarts it; a token revoked meanwhile raises
  :class:`SlackAuthError`.

Reconnecting the WebSocket is slack_sdk's job (its client reconnects by itself); this module
only observes and decides when to give up.
"""
from __future__ import annotations

import asyncio
import logging
import math
import time
from dataclasses import dataclass, field
from typing import Callable

import aiohttp
from slack_sdk.errors import SlackApiError

from rag.errors import RagError

__all__ = [
    "DEFAULT_PROBE_EVERY_S",
    "REJECTED_TOKEN_ERRORS",
    "SlackAuthError",
    "SlackConnectionError",
    "SlackHealth",
    "SlackUnreachableError",
    "check_credentials",
    "probe_every_s",
    "watch_slack",
]

log = logging.getLogger(__name__)

#: Web API errors meaning the token itself is refused (api.slack.com/methods/auth.test, "Errors"):
#: retrying cannot help, the operator must fix the token.
REJECTED_TOKEN_ERRORS = frozenset({"invalid_auth", "not_authed", "account_inactive", "token_revoked",
                                   "token_expired", "not_allowed_token_type"})
#: Longest pause between two checks of the connection (seconds); shorter when the exit time is short.
DEFAULT_PROBE_EVERY_S = 30.0
#: Longest wait for one ``auth.test`` / ``apps.connections.open`` (slack_sdk's own timeout is 30 s).
DEFAULT_PROBE_TIMEOUT_S = 10.0
#: Errors that mean Slack could not be reached at all (no answer, refused, reset, timed out).
NETWORK_ERRORS = (aiohttp.ClientError, asyncio.TimeoutError, OSError)


class SlackConnectionError(RagError):
    """The bot cannot work with Slack; ``str(err)`` is one line for the operator (no token in it)."""


class SlackAuthError(SlackConnectionError):
    """Slack rejected a token (``invalid_auth``, ``token_revoked``, ``account_inactive`` …)."""


class SlackUnreachableError(SlackConnectionError):
    """Slack was not reachable for longer than ``SLACK_UNREACHABLE_EXIT_S``."""


def probe_every_s(exit_after_s: float) -> float:
    """The pause between two checks: :data:`DEFAULT_PROBE_EVERY_S`, or a fifth of ``exit_after_s``
    when that is shorter (so an outage is noticed well before the exit), at least 0.1 s."""
    if exit_after_s <= 0:
        return DEFAULT_PROBE_EVERY_S
    return max(0.1, min(DEFAULT_PROBE_EVERY_S, exit_after_s / 5))


@dataclass
class SlackHealth:
    """What is known about the connection to Slack (read by ``/healthz``; written by the checks).

    ``web_api`` is ``"unchecked"`` (nothing checked it yet: an app without
    :func:`watch_slack`, as in tests), ``"ok"``, ``"unreachable"`` (no answer) or
    ``"error"`` (Slack answered with an error other than a rejected token); ``socket`` is
    ``None`` in HTTP mode, else ``"connecting"``, ``"connected"`` or ``"disconnected"``.
    ``down_since`` is the monotonic time Slack stopped being reachable (``None`` while it is).
    """

    socket_mode: bool = False
    clock: Callable[[], float] = time.monotonic
    exit_after_s: float = 0.0
    web_api: str = "unchecked"
    socket: str | None = None
    error: str | None = None
    last_ok_at: float | None = None
    down_since: float | None = None
    checked_at: float | None = field(default=None, repr=False)
    _warned: bool = field(default=False, repr=False)
    _waiting_logged: bool = field(default=False, repr=False)

    def __post_init__(self) -> None:
        if self.socket_mode and self.socket is None:
            self.socket = "connecting"

    @property
    def ok(self) -> bool:
        """Whether Slack is reachable as far as is known (``"unchecked"`` counts as reachable)."""
        web_ok = self.web_api in ("ok", "unchecked")
        socket_ok = self.socket in (None, "connected") or (self.socket == "connecting" and self.web_api == "unchecked")
        return web_ok and socket_ok

    def down_for(self) -> float:
        """Seconds Slack has not been reachable (0 while it is)."""
        return 0.0 if self.down_since is None else max(0.0, self.clock() - self.down_since)

    def record(self, *, web_api: str, socket: str | None = None, error: str | None = None) -> None:
        """Store one check's result and log the transitions: one WARNING when Slack stops being
        reachable (or a different part of it fails), one INFO when it is back."""
        was_down_for = self.down_for()
        before = self.describe_problem() if self._warned else None
        self.web_api = web_api
        if self.socket_mode and socket is not None:
            self.socket = socket
        self.error = error
        now = self.clock()
        self.checked_at = now
        if self.ok:
            self.last_ok_at = now
            if self._warned:
                log.info("Slack is reachable again after %.0f s", was_down_for)
            elif self.down_since is not None and self.socket_mode:
                log.info("Socket Mode connected")
            self.down_since, self._warned = None, False
            return
        if self.down_since is None:
            self.down_since = now
        if self.web_api in ("ok", "unchecked") and self.socket == "connecting" and self.last_ok_at is None:
            if not self._waiting_logged:
                self._waiting_logged = True
                log.info("waiting for the Socket Mode connection")
            return
        problem = self.describe_problem()
        if not self._warned or _kind(problem) != _kind(before):
            self._warned = True
            exit_note = f"; exiting after {self.exit_after_s:g} s without Slack" if self.exit_after_s > 0 else ""
            log.warning("Slack is not reachable (%s)%s; /healthz reports it", problem, exit_note)

    def describe_problem(self) -> str:
        """A short reason: which part is down and why (``web API unreachable: ClientConnectorError …``)."""
        parts = []
        if self.web_api not in ("ok", "unchecked"):
            parts.append(f"web API {self.web_api}" + (f": {self.error}" if self.error else ""))
        if self.socket_mode and self.socket != "connected":
            parts.append("Socket Mode never connected" if self.socket == "connecting" else
                         f"Socket Mode {self.socket}")
        return "; ".join(parts) or "unknown"

    def to_json(self) -> dict:
        """``{"mode", "web_api", "socket"?, "error", "down_for_s", "exit_in_s"?}`` for ``/healthz``."""
        data: dict = {"mode": "socket" if self.socket_mode else "http", "web_api": self.web_api}
        if self.socket_mode:
            data["socket"] = self.socket
        data["error"] = self.error
        data["down_for_s"] = round(self.down_for(), 1)
        if self.exit_after_s > 0 and self.down_since is not None:
            data["exit_in_s"] = round(max(0.0, self.exit_after_s - self.down_for()), 1)
        return data


def _kind(problem: str | None) -> tuple[str, ...]:
    """Which parts a problem names (``("web API unreachable", "Socket Mode disconnected")``), not why."""
    if problem is None:
        return ()
    return tuple(part.split(":", 1)[0] for part in problem.split("; "))


def _rejected(what: str, error: str) -> SlackAuthError:
    return SlackAuthError(f"Slack rejected {what} ({error}): check the token in the app's settings at "
                          "https://api.slack.com/apps (reinstall the app if it was revoked) and restart")


async def probe_web_api(client, *, timeout_s: float = DEFAULT_PROBE_TIMEOUT_S) -> tuple[str, str | None]:
    """One ``auth.test`` through slack-sdk: ``("ok", None)``, ``("error", code)`` or ``("unreachable", reason)``.

    Raises:
        SlackAuthError: Slack rejected the bot token (:data:`REJECTED_TOKEN_ERRORS`).
    """
    try:
        await asyncio.wait_for(client.auth_test(), timeout_s)
        return "ok", None
    except SlackApiError as err:
        code = str(err.response.get("error") or f"HTTP {err.response.status_code}")
        if code in REJECTED_TOKEN_ERRORS:
            raise _rejected("SLACK_BOT_TOKEN", code) from None
        if code == "ratelimited":  # Slack answered: it is reachable
            return "ok", None
        return "error", code
    except asyncio.TimeoutError:
        return "unreachable", f"no answer within {timeout_s:g} s"
    except NETWORK_ERRORS as err:
        return "unreachable", _reason(err)


def _reason(err: BaseException) -> str:
    text = " ".join(str(err).split())[:160]
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


async def check_credentials(client, *, app_token: str | None = None, health: SlackHealth | None = None,
                            timeout_s: float = DEFAULT_PROBE_TIMEOUT_S) -> None:
    """The start-up check: ``auth.test`` with the bot token, ``apps.connections.open`` with the app token.

    Args:
        client: the bot's ``AsyncWebClient``.
        app_token: ``SLACK_APP_TOKEN`` (Socket Mode), else ``None``.
        health: where the result is recorded (optional).
        timeout_s: longest wait per call.

    The WebSocket URL ``apps.connections.open`` returns is not used: it expires within
    seconds, and slack_sdk's client would keep retrying an expired one; the client asks
    for its own.

    Raises:
        SlackAuthError: Slack rejected the bot token or the app token. A network failure is
            not raised: it is logged, recorded in ``health``, and the watch takes over.
    """
    state, error = await probe_web_api(client, timeout_s=timeout_s)
    if state == "ok":
        log.info("Slack accepted the bot token (auth.test)")
    if app_token and state != "unreachable":
        try:
            await asyncio.wait_for(client.apps_connections_open(app_token=app_token), timeout_s)
        except SlackApiError as err:
            code = str(err.response.get("error") or f"HTTP {err.response.status_code}")
            if code in REJECTED_TOKEN_ERRORS:
                raise _rejected("SLACK_APP_TOKEN", code) from None
            state, error = "error", f"apps.connections.open: {code}"
        except asyncio.TimeoutError:
            state, error = "unreachable", f"apps.connections.open: no answer within {timeout_s:g} s"
        except NETWORK_ERRORS as err:
            state, error = "unreachable", _reason(err)
    if health is not None:
        health.record(web_api=state, socket="connecting" if app_token else None, error=error)
    elif state != "ok":
        log.warning("Slack is not reachable at start-up (%s); serving anyway and checking again", error)


async def watch_slack(health: SlackHealth, *, client, socket_client=None, exit_after_s: float,
                      every_s: float | None = None, timeout_s: float | None = None) -> None:
    """Check the connection every ``every_s`` (default :func:`probe_every_s`) until cancelled.

    Args:
        health: updated after every check.
        client: the bot's ``AsyncWebClient`` (``auth.test``).
        socket_client: slack_sdk's Socket Mode client (``is_connected()``), ``None`` in HTTP mode.
        exit_after_s: give up after this long without Slack (0: never).
        every_s, timeout_s: pause between checks, longest wait for one ``auth.test``.

    Raises:
        SlackUnreachableError: Slack was not reachable for ``exit_after_s``.
        SlackAuthError: Slack rejected the bot token (revoked while serving).
    """
    every_s = probe_every_s(exit_after_s) if every_s is None else every_s
    timeout_s = min(DEFAULT_PROBE_TIMEOUT_S, max(0.5, every_s * 2)) if timeout_s is None else timeout_s
    health.exit_after_s = exit_after_s
    while True:
        web_api, error = await probe_web_api(client, timeout_s=timeout_s)
        socket = None
        if socket_client is not None:
            socket = "connected" if await socket_client.is_connected() else (
                "connecting" if health.socket == "connecting" and health.last_ok_at is None else "disconnected")
        health.record(web_api=web_api, socket=socket, error=error)
        if exit_after_s > 0 and not health.ok and health.down_for() >= exit_after_s:
            raise SlackUnreachableError(f"Slack has not been reachable for {math.floor(health.down_for())} s "
                                        f"(SLACK_UNREACHABLE_EXIT_S={exit_after_s:g}): {health.describe_problem()}; "
                                        "exiting so the supervisor restarts the bot")
        await asyncio.sleep(every_s)
