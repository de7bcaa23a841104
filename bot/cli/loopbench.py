"""Event-loop responsiveness while the index is rebuilt (``slackzilla bench --healthz``).

Serves ``GET /healthz`` from an aiohttp app on the same event loop that runs
:meth:`rag.ingest.reindexer.Reindexer.run_async` (a full reindex in a worker
thread, as the bot's scheduler and ``/sz-reindex`` do), and pings it every
10 ms from a *separate process* (so the client's timing is not skewed by the
server's GIL). Only requests sent while the reindex ran are counted.
"""
from __future__ import annotations

import asyncio
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from aiohttp import web

from rag.engine import Engine
from rag.ingest.reindexer import Reindexer

__all__ = ["healthz_during_reindex"]

PING_INTERVAL_S = 0.010

_CLIENT = textwrap.dedent("""
    import os, sys, time, urllib.request
    url, stop, interval = sys.argv[1], sys.argv[2], float(sys.argv[3])
    out = []
    while not os.path.exists(stop):
        sent = time.time(); t0 = time.perf_counter()
        urllib.request.urlopen(url, timeout=10).read()
        out.append(f"{sent:.4f}:{(time.perf_counter() - t0) * 1000:.3f}")
        time.sleep(interval)
    print(" ".join(out))
""")


def _percentile(values: list[float], q: float) -> float:
    return values[min(len(values) - 1, int(q * len(values)))] if values else 0.0


async def healthz_during_reindex(repo: Path, *, rounds: int = 3) -> dict:
    """``{"rounds", "requests", "reindex_s", "healthz_p50_ms", "healthz_p95_ms", "healthz_p99_ms", "healthz_max_ms"}``.

    Each round is a full reindex of ``repo`` into a scratch index (the
    repository is only read). Latencies are pooled over all rounds.
    """
    latencies: list[float] = []
    durations: list[float] = []
    with tempfile.TemporaryDirectory(prefix="sz-loop-") as tmp:
        engine = Engine.open(repo, index_path=Path(tmp) / "index.sqlite")
        reindexer = Reindexer(engine, embed=False)

        async def healthz(_request: web.Request) -> web.Response:
            return web.json_response({"ok": True, "reindex": reindexer.state.to_json()})

        app = web.Application()
        app.router.add_get("/healthz", healthz)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        try:
            for n in range(rounds):
                stop = Path(tmp) / f"stop-{n}"
                client = await asyncio.create_subprocess_exec(
                    sys.executable, "-c", _CLIENT, f"http://127.0.0.1:{port}/healthz", str(stop),
                    str(PING_INTERVAL_S), stdout=subprocess.PIPE)
                await asyncio.sleep(0.5)
                started_wall, t0 = time.time(), time.perf_counter()
                record = await reindexer.run_async(full=True, trigger="cli")
                durations.append(time.perf_counter() - t0)
                ended_wall = time.time()
                stop.touch()
                out, _ = await client.communicate()
                if not record.ok:
                    raise RuntimeError(f"reindex failed: {record.error}")
                for item in out.split():
                    sent, ms = map(float, item.split(b":"))
                    if started_wall <= sent <= ended_wall:
                        latencies.append(ms)
        finally:
            await runner.cleanup()
            engine.close()
    latencies.sort()
    return {
        "rounds": rounds,
        "requests": len(latencies),
        "reindex_s": round(sum(durations) / len(durations), 3) if durations else 0.0,
        "healthz_p50_ms": round(_percentile(latencies, 0.50), 2),
        "healthz_p95_ms": round(_percentile(latencies, 0.95), 2),
        "healthz_p99_ms": round(_percentile(latencies, 0.99), 2),
        "healthz_max_ms": round(latencies[-1], 2) if latencies else 0.0,
    }
