"""Slash commands sent the way Slack sends them, and the probe process of the load benchmark.

    body = slash_form("/sz-ask", "how is the index updated?", user_id="U1", channel_id="C1",
                      response_url=f"{standins}/response_url/ask-1", trigger_id="t-1")
    async with session.post(url, data=body, headers=signed_headers(secret, body)) as response: ...

Slack signs each request with ``v0=`` HMAC-SHA256 of ``v0:<timestamp>:<body>`` under the app's
signing secret (slack_sdk's ``SignatureVerifier.generate_signature`` computes it here), sends
the command as a form body and waits 3 s for the HTTP answer, the *ack*.

**The probe** (``python -m bot.bench.client``) sends one
cheap command (``/sz-help`` by default) every ``interval`` seconds on a fixed schedule, each on a
new connection, whether or not the previous one was answered, and measures each ack's latency.
It runs in its own process so that its timing is not skewed by the bot's GIL or event loop.
The signing secret comes from ``SLACK_SIGNING_SECRET`` in its environment (never the command
line). On SIGTERM it waits for the probes in flight (at most ``timeout``) and prints one JSON
document: ``{"probes": [[sent_at epoch s, latency ms, HTTP status (0: failed)], …]}``.
"""
from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import signal
import sys
import time
from urllib.parse import urlencode

import aiohttp
from slack_sdk.signature import SignatureVerifier

__all__ = ["PROBE_TIMEOUT_S", "probe", "signed_headers", "slash_form", "main"]

PROBE_TIMEOUT_S = 10.0
"""A probe not answered within this is recorded as failed (status 0) with the time it waited."""


def slash_form(command: str, text: str, *, user_id: str, channel_id: str, response_url: str, trigger_id: str,
               team_id: str = "T0BENCH") -> str:
    """The urlencoded form body of a slash command, with the fields Slack sends."""
    return urlencode({
        "token": "bench-verification-token", "team_id": team_id, "team_domain": "bench",
        "channel_id": channel_id, "channel_name": "bench", "user_id": user_id, "user_name": user_id.lower(),
        "command": command, "text": text, "api_app_id": "A0BENCH", "is_enterprise_install": "false",
        "response_url": response_url, "trigger_id": trigger_id,
    })


def signed_headers(secret: str, body: str, *, timestamp: int | None = None) -> dict[str, str]:
    """``Content-Type``, ``X-Slack-Request-Timestamp`` and ``X-Slack-Signature`` for ``body``."""
    ts = str(int(time.time()) if timestamp is None else timestamp)
    return {"Content-Type": "application/x-www-form-urlencoded", "X-Slack-Request-Timestamp": ts,
            "X-Slack-Signature": SignatureVerifier(secret).generate_signature(timestamp=ts, body=body)}


async def probe(url: str, *, secret: str, response_base: str, command: str = "/sz-help",
                interval_s: float = 0.1, stop: asyncio.Event, timeout_s: float = PROBE_TIMEOUT_S) -> list[list]:
    """Send ``command`` to ``url`` every ``interval_s`` until ``stop`` is set.

    Returns:
        ``[[sent_at epoch s, latency ms, HTTP status], …]`` in sending order; status 0 when the
        probe failed (connection error or no answer within ``timeout_s``).
    """
    results: list[list] = []
    tasks: list[asyncio.Task] = []
    counter = itertools.count(1)
    tag = f"{os.getpid()}-{int(time.time())}"
    connector = aiohttp.TCPConnector(force_close=True, limit=0)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=timeout_s)) as session:

        async def one(n: int) -> None:
            body = slash_form(command, "", user_id="UPROBE", channel_id="CPROBE", trigger_id=f"probe-{tag}-{n}",
                              response_url=f"{response_base}/response_url/probe-{n}")
            headers = signed_headers(secret, body)
            entry = [time.time(), 0.0, 0]
            results.append(entry)
            started = time.perf_counter()
            try:
                async with session.post(url, data=body, headers=headers) as response:
                    await response.read()
                    entry[2] = response.status
            except (aiohttp.ClientError, asyncio.TimeoutError):
                entry[2] = 0
            entry[1] = round((time.perf_counter() - started) * 1000, 3)

        loop = asyncio.get_running_loop()
        next_at = loop.time()
        while not stop.is_set():
            tasks.append(asyncio.create_task(one(next(counter))))
            next_at += interval_s
            try:
                await asyncio.wait_for(stop.wait(), max(0.0, next_at - loop.time()))
            except asyncio.TimeoutError:
                pass
        await asyncio.gather(*tasks)
    return results


async def _run(args: argparse.Namespace) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    secret = os.environ.get("SLACK_SIGNING_SECRET", "")
    if not secret:
        raise SystemExit("SLACK_SIGNING_SECRET is not set")
    print(json.dumps({"ready": True}), flush=True)
    results = await probe(args.url, secret=secret, response_base=args.response_base, command=args.command,
                          interval_s=args.interval_ms / 1000, stop=stop)
    print(json.dumps({"probes": results}), flush=True)


def main(argv: list[str] | None = None) -> None:
    """``python -m bot.bench.client URL --response-base URL [--interval-ms 100] [--command /sz-help]``."""
    parser = argparse.ArgumentParser(prog="python -m bot.bench.client", description="The load benchmark's probe.")
    parser.add_argument("url", help="the bot's /slack/events URL")
    parser.add_argument("--response-base", required=True, help="the stand-ins' base URL (response_url host)")
    parser.add_argument("--interval-ms", type=float, default=100.0)
    parser.add_argument("--command", default="/sz-help")
    asyncio.run(_run(parser.parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
