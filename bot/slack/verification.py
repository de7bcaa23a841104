"""Slack's request signature, checked at the HTTP edge before Bolt sees the request.

    web_app.middlewares.append(slack_signature_edge(signing_secret, path=SLACK_EVENTS_PATH))

Slack signs every HTTP request: ``X-Slack-Signature: v0=<hex HMAC-SHA256 of
"v0:<X-Slack-Request-Timestamp>:<body>">`` (api.slack.com, "Verifying requests from
Slack"). Bolt verifies it too (``AsyncRequestVerification``), but slack_sdk's
``SignatureVerifier.is_valid`` calls ``int(timestamp)`` and ``hmac.compare_digest`` on
whatever arrived, so a non-numeric timestamp (``ValueError``), a non-ASCII signature
(``TypeError``) or a body that is not UTF-8 (``UnicodeDecodeError`` in the aiohttp
adapter) became an HTTP 500 with a traceback per request; and a refused request was
logged with its whole body (a user's question, were it a stale replay).

This aiohttp middleware, on ``POST <path>`` only, answers instead:

* 400 for a malformed ``X-Slack-Request-Timestamp`` (not a whole number) or
  ``X-Slack-Signature`` (not ``v0=`` and 64 hex digits), a body that is not UTF-8, or a
  correctly signed body that is not a Slack payload (:func:`check_payload`);
* 401 for a missing header, a timestamp more than :data:`MAX_CLOCK_SKEW_S` away from
  now (Slack's 5-minute replay window) or a signature that does not match;

each with a JSON ``{"error", "message"}`` body and one log line of metadata (reason,
body length, client address), never the body. Verified requests go on to Bolt, whose
own check then passes. Slack's ``ssl_check=1`` probes are Bolt's to answer
(``AsyncSslCheck``, which does nothing else) and are let through.
"""
from __future__ import annotations

import hmac
import json
import logging
import re
import time
from typing import Callable

from aiohttp import web
from slack_sdk.signature import SignatureVerifier

__all__ = ["MAX_CLOCK_SKEW_S", "SignatureProblem", "check_payload", "check_signature", "slack_signature_edge"]

log = logging.getLogger(__name__)

#: Slack's replay window: a request signed more than 5 minutes from now is refused.
MAX_CLOCK_SKEW_S = 300
_TIMESTAMP = re.compile(r"^[0-9]{1,12}$")
_SIGNATURE = re.compile(r"^v0=[0-9a-f]{64}$")


class SignatureProblem(Exception):
    """Why a request is refused: ``status`` (400 or 401), ``code`` and a sentence for the caller."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


def check_signature(verifier: SignatureVerifier, *, timestamp: str | None, signature: str | None, body: bytes,
                    now: float | None = None) -> None:
    """Check one request's signature headers and body.

    Args:
        verifier: slack_sdk's verifier holding the signing secret.
        timestamp, signature: the raw ``X-Slack-Request-Timestamp`` / ``X-Slack-Signature`` values.
        body: the raw body bytes.
        now: epoch seconds (default ``time.time()``).

    Raises:
        SignatureProblem: the request must be refused (see the module docstring).
    """
    if timestamp is None or signature is None:
        missing = "X-Slack-Request-Timestamp" if timestamp is None else "X-Slack-Signature"
        raise SignatureProblem(401, "unsigned", f"The {missing} header is missing.")
    if not _TIMESTAMP.match(timestamp):
        raise SignatureProblem(400, "malformed_timestamp",
                               "X-Slack-Request-Timestamp must be a whole number of seconds.")
    if not _SIGNATURE.match(signature):
        raise SignatureProblem(400, "malformed_signature", "X-Slack-Signature must be v0= and 64 hex digits.")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise SignatureProblem(400, "malformed_body", "The body is not UTF-8 text.") from None
    now = time.time() if now is None else now
    if abs(now - int(timestamp)) > MAX_CLOCK_SKEW_S:
        raise SignatureProblem(401, "stale", "The request timestamp is more than 5 minutes from now.")
    expected = verifier.generate_signature(timestamp=timestamp, body=text)
    if expected is None or not hmac.compare_digest(expected.encode("ascii"), signature.encode("ascii")):
        raise SignatureProblem(401, "bad_signature", "The request signature does not match.")


def check_payload(content_type: str, body: bytes) -> None:
    """Refuse a verified body that is not a Slack payload Bolt can read.

    Bolt parses ``application/json`` bodies and a form's ``payload`` field itself, and a body
    that is not a JSON object there (or an event that is not one) raised inside its middleware:
    an HTTP 500 and a traceback per request. Slack never sends such bodies; a client holding the
    signing secret could.

    Raises:
        SignatureProblem: 400 ``malformed_body``.
    """
    if content_type == "application/json":
        raw = body
    elif content_type == "application/x-www-form-urlencoded" and b"payload=" in body:
        from urllib.parse import parse_qs

        payload = parse_qs(body.decode("utf-8")).get("payload")
        if not payload:
            return  # "payload=" inside another field's name: a command's form, Bolt reads it
        raw = payload[0].encode("utf-8")
    else:
        return
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):  # RecursionError: nested deeper than the parser goes
        data = None
    if not isinstance(data, dict) or not isinstance(data.get("event", {}), dict):
        raise SignatureProblem(400, "malformed_body", "The body is not a Slack payload (a JSON object).")


def _is_ssl_check(request: web.Request, body: bytes) -> bool:
    return request.content_type == "application/x-www-form-urlencoded" and b"ssl_check=1" in body.split(b"&")


def slack_signature_edge(signing_secret: str, *, path: str,
                         clock: Callable[[], float] = time.time):
    """An aiohttp middleware refusing ``POST path`` requests whose Slack signature does not hold.

    Args:
        signing_secret: ``SLACK_SIGNING_SECRET`` (non-empty).
        path: Slack's endpoint (``/slack/events``); other paths pass untouched.
        clock: epoch seconds.

    Returns:
        The middleware, for ``web_app.middlewares.append(...)`` before the app starts.
    """
    verifier = SignatureVerifier(signing_secret)

    @web.middleware
    async def verify_slack_signature(request: web.Request, handler):
        if request.method != "POST" or request.path != path:
            return await handler(request)
        body = await request.read()  # cached: Bolt's adapter reads the same bytes
        if _is_ssl_check(request, body):
            return await handler(request)
        try:
            check_signature(verifier, timestamp=request.headers.get("X-Slack-Request-Timestamp"),
                            signature=request.headers.get("X-Slack-Signature"), body=body, now=clock())
            check_payload(request.content_type, body)
        except SignatureProblem as problem:
            log.warning("refused a request to %s: %s (%d bytes, from %s)", path, problem.code, len(body),
                        request.remote or "?")
            return web.json_response({"error": problem.code, "message": str(problem)}, status=problem.status)
        return await handler(request)

    return verify_slack_signature
