"""rag.providers.base: the one retry/deadline loop and the one-line reasons of both HTTP providers."""
from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from rag.errors import ProviderError
from rag.providers.base import (
    RetryPolicy,
    Retryable,
    call_with_retries,
    connect_reason,
    error_detail,
    status_reason,
    timeout_reason,
)
from rag.providers.rerank import HttpReranker

POLICY = RetryPolicy(max_retries=2, backoff_s=0.01, max_backoff_s=0.05)


def run(attempt, *, policy=POLICY, budget_s=5.0, request_timeout_s=1.0, **kwargs):
    return call_with_retries(attempt, policy=policy, deadline=time.monotonic() + budget_s, budget_s=budget_s,
                             request_timeout_s=request_timeout_s, failed="thing", deadline_name="thing", **kwargs)


def test_policy_statuses_backoff_and_retry_after():
    assert [POLICY.retryable(code) for code in (400, 401, 404, 408, 409, 429, 500, 503)] == [
        False, False, False, True, True, True, True, True]
    assert [POLICY.delay_s(n) for n in range(4)] == [0.01, 0.02, 0.04, 0.05]
    assert POLICY.delay_s(0, retry_after_s=0.03) == 0.03
    assert [POLICY.retry_after_s(v) for v in ("0", "0.02", "60", "-1", "soon", None, "nan")] == [
        0.0, 0.02, 0.05, 0.0, None, None, None]


def test_retryable_failures_are_retried_then_the_last_reason_is_reported():
    calls, failures = [], []

    def attempt(timeout):
        calls.append(timeout)
        raise Retryable(f"HTTP 503 #{len(calls)}")

    with pytest.raises(ProviderError, match=r"^thing failed after 3 attempts: HTTP 503 #3$"):
        run(attempt, on_failure=lambda n, reason: failures.append((n, reason)))
    assert len(calls) == 3 and all(t <= 1.0 for t in calls)
    assert failures == [(1, "HTTP 503 #1"), (2, "HTTP 503 #2"), (3, "HTTP 503 #3")]


def test_success_after_a_retry_and_a_final_error_is_not_retried():
    outcomes = iter([Retryable("timed out"), "ok"])
    successes = []

    def attempt(timeout):
        outcome = next(outcomes)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    assert run(attempt, on_success=lambda n, ms: successes.append(n)) == "ok" and successes == [2]
    calls = []

    def refused(timeout):
        calls.append(timeout)
        raise ProviderError("thing refused the request: HTTP 401")

    with pytest.raises(ProviderError, match="refused"):
        run(refused)
    assert len(calls) == 1


def test_the_deadline_bounds_the_whole_call():
    def slow(timeout):
        time.sleep(timeout)
        raise Retryable(timeout_reason(timeout))

    policy = RetryPolicy(max_retries=50, backoff_s=0.0, max_backoff_s=0.0)
    started = time.monotonic()
    with pytest.raises(ProviderError, match=r"thing deadline of 0.3 s exceeded \(request timed out after"):
        run(slow, policy=policy, budget_s=0.3, request_timeout_s=0.1)
    assert time.monotonic() - started < 1.0


def test_reasons_are_one_line_bounded_and_scrubbed():
    assert error_detail({"error": {"message": "overloaded"}}) == "overloaded"
    assert error_detail({"error": "plain"}) == "plain" and error_detail("text body") == "text body"
    assert error_detail({"detail": [{"loc": ["body", "query"], "msg": "field required", "input": "secret q"}]}) == (
        "body.query: field required")
    assert error_detail(b"<html>oops</html>") == "" and error_detail(b"not json") == "not json"
    assert error_detail(b'"a json string"') == "" and error_detail([1, 2]) == ""
    reason = status_reason(401, "bad key sk-123 for\nquery 'my question' " + "x" * 300, ["sk-123", "my question"])
    assert reason.startswith("HTTP 401: bad key [hidden] for query '[hidden]'") and "\n" not in reason
    assert len(reason) <= len("HTTP 401: ") + 120
    assert status_reason(500, "") == "HTTP 500"
    assert connect_reason("http://h/v1", "refused sk-123", ["sk-123"]) == "cannot connect to http://h/v1 (refused [hidden])"


def test_the_reranker_refuses_redirects_and_never_forwards_its_key():
    seen: list[tuple[str, str | None]] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:  # noqa: N802 (http.server API)
            self.rfile.read(int(self.headers["Content-Length"]))
            seen.append((self.path, self.headers.get("Authorization")))
            if self.path == "/v1/rerank":
                self.send_response(307)
                self.send_header("Location", "/elsewhere/rerank")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            body = b'{"results": [{"index": 0, "relevance_score": 1.0}]}'
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        reranker = HttpReranker(base_url=f"http://127.0.0.1:{httpd.server_address[1]}/v1", api_key="sk-redirect-key")
        with pytest.raises(ProviderError, match="reranker refused the request: HTTP 307") as info:
            reranker.rerank("q", ["a"])
        assert "sk-redirect-key" not in str(info.value)
        assert [path for path, _auth in seen] == ["/v1/rerank"]
    finally:
        httpd.shutdown()
        httpd.server_close()
