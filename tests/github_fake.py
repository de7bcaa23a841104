"""A local stand-in for GitHub's REST API: the issue and pull-request endpoints Slackzilla reads.

A stdlib ``http.server`` on 127.0.0.1, port 0, in a background thread (like tests/slack_fake.py).
Point ``GITHUB_API_URL`` (or ``GitHubConfig(api_url=fake.url)``) at it. It answers, as GitHub does
(https://docs.github.com/en/rest/issues/issues, …/pulls/pulls):

- ``GET /repos/{owner}/{repo}/issues?state=all&sort=updated&direction=desc&since=…&per_page=…&page=…``:
  issues *and* pull requests (a pull request carries a ``pull_request`` key), newest update first,
  ``since`` keeps those updated at or after it;
- ``GET /repos/{owner}/{repo}/pulls?…``: pull requests, newest update first;
- ``GET /repos/{owner}/{repo}/pulls/{n}/files``: the changed files (``filename``);
- ``GET /repos/{owner}/{repo}/issues/{n}/comments?per_page=…``: comments, oldest first.

Every list is paginated with a ``Link: <…&page=2>; rel="next"`` header; every answer has an ``ETag``
(a hash of its body), ``Cache-Control: private, max-age=60`` and ``X-RateLimit-Remaining``/``-Reset``
(``fake.remaining``), and a request whose ``If-None-Match`` matches gets ``304 Not Modified``.
An unknown repository is a 404.

``fake.script(path_part, Reply(403, retry_after=1, message="You have exceeded a secondary rate limit"))``
makes the next request whose path contains ``path_part`` answer that (then normally again);
``fake.down = 500`` makes every request answer that status. ``fake.requests`` records
:class:`Request` (method, path, query, headers, status).
"""
from __future__ import annotations

import hashlib
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlsplit

__all__ = ["GitHubFake", "Reply", "Request", "OWNER", "REPO", "iso"]

OWNER, REPO = "acme", "shop"
BASE_TIME = 1_700_000_000  # 2023-11-14T22:13:20Z


def iso(epoch: float) -> str:
    """``2023-11-14T22:13:20Z`` (GitHub's timestamp form)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


@dataclass
class Reply:
    """A scripted answer: ``status``, optional ``Retry-After`` seconds and ``message``."""

    status: int
    retry_after: int | None = None
    message: str = "scripted failure"


@dataclass
class Request:
    method: str
    path: str
    query: dict
    headers: dict
    status: int = 0


@dataclass
class _Item:
    number: int
    title: str
    body: str
    updated: float
    pull: bool = False
    state: str = "open"
    merged: bool = False
    labels: list = field(default_factory=list)
    author: str = "octocat"
    files: list = field(default_factory=list)
    comments: list = field(default_factory=list)  # (author, body)


class GitHubFake:
    """The fake API (module docstring). Use as a context manager; ``fake.url`` is its root."""

    def __init__(self, *, owner: str = OWNER, repo: str = REPO) -> None:
        self.owner, self.repo = owner, repo
        self.items: dict[int, _Item] = {}
        self.requests: list[Request] = []
        self.remaining = 4999
        self.down: int | None = None
        self._scripts: list[tuple[str, Reply]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    # -- data ------------------------------------------------------------------------------------

    def add(self, number: int, title: str, body: str = "", *, pull: bool = False, updated: float | None = None,
            **fields) -> _Item:
        """Add (or replace) issue or pull request ``number``; ``updated`` epoch seconds (default: ``number`` minutes
        after a fixed time). Other fields: ``state``, ``merged``, ``labels``, ``author``, ``files``, ``comments``."""
        item = _Item(number, title, body, BASE_TIME + number * 60 if updated is None else updated, pull, **fields)
        with self._lock:
            self.items[number] = item
        return item

    def touch(self, number: int, *, body: str | None = None, title: str | None = None, at: float | None = None) -> None:
        """Update an item (its ``updated_at`` becomes ``at``, default one hour after the newest)."""
        with self._lock:
            item = self.items[number]
            newest = max(i.updated for i in self.items.values())
            item.updated = at if at is not None else newest + 3600
            if body is not None:
                item.body = body
            if title is not None:
                item.title = title

    def populate(self, *, issues: int, pulls: int, files: int = 2) -> None:
        """``issues`` issues and ``pulls`` pull requests, interleaved (numbers 1…), each PR changing ``files`` paths."""
        number = 0
        for k in range(max(issues, pulls)):
            if k < issues:
                number += 1
                self.add(number, f"Issue {number}: router fails on path {k}", f"Steps to reproduce {k}.\n\n" * 3,
                         labels=["bug"] if k % 3 == 0 else [])
            if k < pulls:
                number += 1
                self.add(number, f"PR {number}: fix handler {k}", f"Fixes #{max(1, number - 1)}.\n\nDetails {k}.",
                         pull=True, merged=k % 2 == 0, state="closed" if k % 2 == 0 else "open",
                         files=[f"lib/module{k}.js", f"test/module{k}.test.js"][:files])

    def script(self, path_part: str, *replies: Reply) -> None:
        """The next requests whose path contains ``path_part`` answer ``replies``, in order."""
        with self._lock:
            self._scripts.extend((path_part, reply) for reply in replies)

    def served(self, status: int | None = None, path_part: str = "") -> list[Request]:
        """Recorded requests (with that status, whose path contains ``path_part``)."""
        return [r for r in self.requests if (status is None or r.status == status) and path_part in r.path]

    # -- JSON as GitHub shapes it ---------------------------------------------------------------------

    def _web(self, item: _Item) -> str:
        return f"https://github.com/{self.owner}/{self.repo}/{'pull' if item.pull else 'issues'}/{item.number}"

    def _common(self, item: _Item) -> dict:
        closed = item.state == "closed"
        return {"number": item.number, "title": item.title, "body": item.body, "state": item.state,
                "html_url": self._web(item), "user": {"login": item.author},
                "labels": [{"name": name} for name in item.labels],
                "created_at": iso(BASE_TIME - 86400 + item.number), "updated_at": iso(item.updated),
                "closed_at": iso(item.updated) if closed else None, "comments": len(item.comments)}

    def _issue_json(self, item: _Item) -> dict:
        data = self._common(item)
        if item.pull:
            data["pull_request"] = {"url": f"{self.url}repos/{self.owner}/{self.repo}/pulls/{item.number}",
                                    "html_url": self._web(item),
                                    "merged_at": iso(item.updated) if item.merged else None}
        return data

    def _pull_json(self, item: _Item) -> dict:
        data = self._common(item)
        data["merged_at"] = iso(item.updated) if item.merged else None
        data.pop("comments")
        return data

    # -- serving -----------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/"

    def __enter__(self) -> GitHubFake:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _answer(self, path: str, query: dict) -> tuple[int, object, dict]:
        """``(status, JSON body, extra headers)`` for one GET."""
        parts = [p for p in path.split("/") if p]
        if len(parts) < 4 or parts[0] != "repos" or parts[1:3] != [self.owner, self.repo]:
            return 404, {"message": "Not Found"}, {}
        with self._lock:
            items = sorted(self.items.values(), key=lambda i: (i.updated, i.number), reverse=True)
        rest = parts[3:]
        if rest == ["issues"]:
            since = query.get("since")
            if since:
                items = [i for i in items if iso(i.updated) >= since]
            rows = [self._issue_json(i) for i in items]
        elif rest == ["pulls"]:
            rows = [self._pull_json(i) for i in items if i.pull]
        elif len(rest) == 3 and rest[0] == "pulls" and rest[2] == "files" and rest[1].isdigit():
            item = self.items.get(int(rest[1]))
            if item is None or not item.pull:
                return 404, {"message": "Not Found"}, {}
            rows = [{"filename": name, "status": "modified"} for name in item.files]
        elif len(rest) == 3 and rest[0] == "issues" and rest[2] == "comments" and rest[1].isdigit():
            item = self.items.get(int(rest[1]))
            if item is None:
                return 404, {"message": "Not Found"}, {}
            rows = [{"user": {"login": who}, "body": text, "created_at": iso(item.updated)} for who, text in item.comments]
        else:
            return 404, {"message": "Not Found"}, {}
        per_page = max(1, min(100, int(query.get("per_page") or 30)))
        page = max(1, int(query.get("page") or 1))
        chunk = rows[(page - 1) * per_page: page * per_page]
        headers = {}
        if page * per_page < len(rows):
            following = urlencode({**query, "page": page + 1})
            headers["Link"] = f'<{self.url.rstrip("/")}{path}?{following}>; rel="next"'
        return 200, chunk, headers

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # quiet
                pass

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                split = urlsplit(self.path)
                query = {k: v[-1] for k, v in parse_qs(split.query).items()}
                record = Request("GET", split.path, query, {k.lower(): v for k, v in self.headers.items()})
                fake.requests.append(record)
                scripted = None
                with fake._lock:
                    for n, (part, reply) in enumerate(fake._scripts):
                        if part in split.path:
                            scripted = fake._scripts.pop(n)[1]
                            break
                status = fake.down or (scripted.status if scripted else None)
                if status:
                    extra = {"Retry-After": str(scripted.retry_after)} if scripted and scripted.retry_after else {}
                    self._send(record, status, {"message": scripted.message if scripted else "Server Error"}, extra)
                    return
                status, body, extra = fake._answer(split.path, query)
                self._send(record, status, body, extra)

            def _send(self, record: Request, status: int, body, extra: dict) -> None:
                payload = json.dumps(body).encode()
                etag = '"' + hashlib.sha1(payload).hexdigest() + '"'
                if status == 200 and self.headers.get("If-None-Match") == etag:
                    status, payload = 304, b""
                record.status = status
                self.send_response(status)
                if status != 304:
                    self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(payload)))
                self.send_header("ETag", etag)
                self.send_header("Cache-Control", "private, max-age=60, s-maxage=60")
                self.send_header("Vary", "Accept, Authorization, Cookie")
                self.send_header("X-RateLimit-Limit", "5000")
                self.send_header("X-RateLimit-Remaining", str(fake.remaining))
                self.send_header("X-RateLimit-Reset", str(int(time.time()) + 3600))
                for key, value in extra.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(payload)

        return Handler
