"""A deterministic, OpenAI-shaped ``POST /v1/embeddings`` server for tests (real HTTP on 127.0.0.1:0).

Point :class:`rag.providers.embeddings.OpenAIEmbeddings` at ``server.url``; the SDK's own
HTTP client runs unchanged, only the model is fake. Every request body is kept
in ``server.requests``; :meth:`EmbeddingsServer.texts` lists every input text
received, so tests can count what was (re-)embedded.

Vectors come from ``embed_fn(text, dim)``:

* :func:`hash_vector` (default): a pseudo-random vector per text (SHA-256),
  deliberately un-normalised; equal texts give equal vectors, nothing else is similar.
* :class:`BagOfWords`: signed feature hashing of the text's words
  (Weinberger et al. 2009, "Feature hashing for large scale multitask
  learning"), so texts sharing words are similar, plus a synonym map that
  sends several words to one feature, so a paraphrase can be close to a text
  that shares no word with it — a stand-in for what a sentence-embedding
  model does, with similarities that can be reasoned about by hand.

``script`` holds one action per coming request; ``default_action`` answers
when the script is empty:

``ok``            vectors for every input (data returned in reverse order: ``index`` counts)
``hang``          no answer until ``close()`` (or 10 s), then the connection drops
``wait``          wait for ``gate`` to be set (≤ 10 s), then answer ``ok``
``status:<N>``    HTTP N with an OpenAI-shaped error body and ``Retry-After: 0``
``garbage``       200 with a non-JSON body
``short``         one vector fewer than inputs
``ragged``        the first vector one element short

Usage::

    with EmbeddingsServer(embed_fn=BagOfWords({"refuse": "reject"}), dim=256) as server:
        provider = OpenAIEmbeddings(base_url=server.url, model="bow")
"""
from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
from collections import deque
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np

__all__ = ["DIM", "BagOfWords", "EmbeddingsServer", "hash_vector"]

DIM = 8
"""Vector dimension of the default :func:`hash_vector` server."""

EmbedFn = Callable[[str, int], np.ndarray]


def hash_vector(text: str, dim: int = DIM) -> np.ndarray:
    """The server's deterministic, deliberately un-normalised vector for ``text`` (dim ≤ 32)."""
    raw = np.frombuffer(hashlib.sha256(text.encode()).digest()[:dim], dtype=np.uint8)
    return (raw.astype(np.float32) - 127.5) / 10.0


_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_STOP = frozenset(
    "a an and are as at be by do does for from how if in is it of on or that the this to too what when where "
    "which why with".split()
)


class BagOfWords:
    """Deterministic bag-of-words embedding with a synonym map.

    Words are split on non-letters and camelCase, lower-cased, English stop
    words dropped, then mapped through ``synonyms`` (word → shared feature
    name). Each feature adds ±1 at ``blake2b(feature) mod dim`` (sign from
    another hash bit). A small text-specific pseudo-random component
    (``noise`` × the bag's norm) keeps the similarities of unrelated texts
    distinct yet near 0.

    Args:
        synonyms: word → feature; words absent from it are their own feature.
        noise: relative size of the text-specific component (0 disables it).
    """

    def __init__(self, synonyms: Mapping[str, str] | None = None, *, noise: float = 0.05) -> None:
        self.synonyms = {k.lower(): v.lower() for k, v in (synonyms or {}).items()}
        self.noise = noise

    def features(self, text: str) -> list[str]:
        """The features of ``text``, in order, with repeats."""
        words = (w.lower() for w in _WORD.findall(text))
        return [self.synonyms.get(w, w) for w in words if len(w) > 1 and w not in _STOP]

    def __call__(self, text: str, dim: int) -> np.ndarray:
        vec = np.zeros(dim, dtype=np.float64)
        for feature in self.features(text):
            digest = int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "little")
            vec[digest % dim] += 1.0 if (digest >> 63) & 1 else -1.0
        norm = float(np.linalg.norm(vec))
        if self.noise > 0:
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
            extra = np.random.default_rng(seed).standard_normal(dim)
            vec += self.noise * max(norm, 1.0) * extra / np.linalg.norm(extra)
        return vec.astype(np.float32)


class EmbeddingsServer:
    """A tiny OpenAI-shaped /embeddings server (see the module docstring for ``script`` actions).

    Args:
        embed_fn: ``(text, dim) -> vector``; default :func:`hash_vector`.
        dim: vector dimension (may be changed between requests).

    Attributes:
        url: base URL (``http://127.0.0.1:<port>/v1``).
        requests: ``[{"path", "auth", "body"}]`` in arrival order.
        script, default_action: what the next requests get.
        gate: the event ``wait`` requests wait for.
        reject_if: when set, a request holding an input for which it returns true gets
            HTTP 400 (a provider refusing one input, e.g. over its token limit).
    """

    def __init__(self, *, embed_fn: EmbedFn = hash_vector, dim: int = DIM) -> None:
        self.requests: list[dict] = []
        self.script: deque[str] = deque()
        self.default_action = "ok"
        self.embed_fn = embed_fn
        self.dim = dim
        self.reject_if: Callable[[str], bool] | None = None
        self.release = threading.Event()
        self.gate = threading.Event()
        self.arrived = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # keep pytest output clean
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server API)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
                outer.arrived.set()
                action = outer.script.popleft() if outer.script else outer.default_action
                if action == "hang":
                    outer.release.wait(10)
                    return
                if action == "wait":
                    outer.gate.wait(10)
                    action = "ok"
                if action.startswith("status:"):
                    code = int(action.split(":")[1])
                    return self.reply(code, {"error": {"message": f"synthetic failure {code}", "type": "test"}},
                                      headers={"Retry-After": "0"})
                if action == "garbage":
                    return self.reply(200, raw=b"<html>not json</html>")
                inputs = body["input"]
                if outer.reject_if is not None and any(outer.reject_if(text) for text in inputs):
                    return self.reply(400, {"error": {"message": "This model's maximum context length is 8192 tokens",
                                                      "type": "invalid_request_error"}})
                vectors = [outer.embed_fn(text, outer.dim) for text in inputs]
                if action == "short":
                    vectors = vectors[:-1]
                if action == "ragged":
                    vectors[0] = vectors[0][:-1]
                data = [{"object": "embedding", "index": i,
                         "embedding": base64.b64encode(np.asarray(v, dtype="<f4").tobytes()).decode()
                         if body.get("encoding_format") == "base64" else [float(x) for x in v]}
                        for i, v in enumerate(vectors)]
                data.reverse()  # providers may answer out of order; "index" is what counts
                self.reply(200, {"object": "list", "data": data, "model": body["model"],
                                 "usage": {"prompt_tokens": 1, "total_tokens": 1}})

            def reply(self, code: int, payload: dict | None = None, *, raw: bytes | None = None,
                      headers: dict | None = None) -> None:
                data = raw if raw is not None else json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                       daemon=True)
        self.thread.start()
        self._closed = False

    def texts(self) -> list[str]:
        """Every input text received so far, in arrival order."""
        return [text for request in list(self.requests) for text in request["body"]["input"]]

    def close(self) -> None:
        """Stop serving (idempotent); the port then refuses connections."""
        if self._closed:
            return
        self._closed = True
        self.release.set()
        self.gate.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> EmbeddingsServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
