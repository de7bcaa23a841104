"""A deterministic Cohere/Jina-style ``POST /v1/rerank`` server for tests (real HTTP on 127.0.0.1:0).

Point ``RERANK_URL`` (or :class:`rag.providers.rerank.HttpReranker`) at ``server.url``; the
reranker's own HTTP client runs unchanged, only the model is fake.
"""
from __future__ import annotations

import json
import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = ["RerankServer"]


class RerankServer:
    """A deterministic ``POST /v1/rerank`` server.

    ``score_fn(query, document) -> float`` scores each document; ``script`` holds one
    action per coming request (``default_action`` when empty): ``ok``, ``hang`` (no
    answer until ``close()``), ``status:<N>`` (an error body that echoes the key and
    the query, as careless servers do), ``garbage`` (200, not JSON), ``score`` (ok,
    but scores under the key ``score``). ``requests`` keeps ``{"path", "auth", "body"}``.
    """

    def __init__(self, score_fn=lambda query, document: 0.0) -> None:
        self.score_fn = score_fn
        self.script: deque[str] = deque()
        self.default_action = "ok"
        self.requests: list[dict] = []
        self.release = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server API)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                auth = self.headers.get("Authorization")
                outer.requests.append({"path": self.path, "auth": auth, "body": body})
                action = outer.script.popleft() if outer.script else outer.default_action
                if action == "hang":
                    outer.release.wait(10)
                    return
                if action.startswith("status:"):
                    echo = f"bad request from {auth} for query {body.get('query')!r}"
                    return self.reply(int(action.split(":")[1]), {"error": {"message": echo}}, retry_after="0")
                if action == "garbage":
                    return self.reply(200, raw=b"<html>oops</html>")
                key = "score" if action == "score" else "relevance_score"
                results = [{"index": i, key: outer.score_fn(body["query"], doc)}
                           for i, doc in enumerate(body["documents"])]
                results.sort(key=lambda r: -r[key])  # services answer best first; "index" is what counts
                self.reply(200, {"results": results[: body.get("top_n", len(results))]})

            def reply(self, code: int, payload: dict | None = None, *, raw: bytes | None = None,
                      retry_after: str | None = None) -> None:
                data = raw if raw is not None else json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if retry_after is not None:
                    self.send_header("Retry-After", retry_after)
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def documents(self, i: int = -1) -> list[str]:
        return self.requests[i]["body"]["documents"]

    def close(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()
