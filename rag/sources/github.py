"""Fetching a repository's GitHub issues and pull requests into its index, incrementally.

    fetcher = GitHubFetcher(GitHubConfig(repository="acme/api", token=…))
    report = fetcher.refresh(engine)         # a GitHubReport; never raises for API failures
    report.to_json()                          # {"repository", "ok", "error", "issues", "pull_requests", …}

**When.** As a step of the repository's index update: :class:`rag.ingest.reindexer.Reindexer` calls
:meth:`GitHubFetcher.refresh` after the files' update has committed and before the embedding pass
(so new issue chunks get vectors in the same run), under the same index lock. A failure (the API
down, a 404 for a repository the token cannot see, a rate limit) leaves the code index and the
items already stored untouched; it is reported in the run record (``sources.github``) and in
``/sz-status``.

**What.** The ``GITHUB_ITEMS`` most recently updated issues (``GET /repos/{o}/{r}/issues`` with
``state=all&sort=updated&direction=desc``; that endpoint lists pull requests too, recognised by
their ``pull_request`` key and skipped there) and as many pull requests (``GET /repos/{o}/{r}/pulls``,
same order), a pull request's changed paths (``GET …/pulls/{n}/files``, at most
:data:`MAX_CHANGED_FILES`) and, with ``GITHUB_COMMENTS=n``, each item's first ``n`` comments
(``GET …/issues/{n}/comments``). Stored by :class:`rag.sources.items.ItemStore`.

**Incremental.** The index keeps, per kind, the newest ``updated_at`` seen (``meta``
``github:issue:since``, ``github:pull_request:since``): the issue listing asks ``since=`` it, the pull
request listing (which has no ``since``) stops at the first older one, and only the items returned
are re-read (files, comments). A listing that did not change since the last run has the same URL, so
githubkit's HTTP cache (hishel: ETag / ``If-None-Match``) revalidates it and GitHub answers 304, which
does not count against the rate limit. The cache lives as long as the fetcher (the bot keeps one per
repository; a CLI ``slackzilla index`` starts with an empty one and relies on ``since``). Everything is
written in one transaction per kind, and the watermark only moves when the whole fetch succeeded.

**Rate limits** (https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api): the
client is githubkit's ``GitHub(auto_retry=…, http_cache=True)``; its retry loop waits out a secondary
limit (403/429 with ``Retry-After``) or a primary one (``X-RateLimit-Remaining: 0`` until
``X-RateLimit-Reset``) and retries 5xx with back-off, and :class:`BoundedRetry` refuses any wait longer
than ``max_wait_s`` (the update must not sleep for an hour): the fetch then fails as rate-limited. The
``X-RateLimit-Remaining`` of every answer is read; below ``reserve`` the fetch stops rather than use up
the quota other tools of the same token need.

The token goes only into githubkit's ``Authorization`` header: never into a log line, an error, the
report or ``repr``.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from rag.config import GitHubConfig
from rag.secrets import redact_secrets
from rag.sources.items import Comment, Item, ItemStore

__all__ = ["GitHubFetcher", "GitHubReport", "BoundedRetry", "MAX_CHANGED_FILES", "DEFAULT_MAX_WAIT_S",
           "DEFAULT_RESERVE", "SOURCE_NAME", "github_status"]

log = logging.getLogger(__name__)

SOURCE_NAME = "github"
"""The key of this source in a run record's ``sources``."""
MAX_CHANGED_FILES = 300
"""Changed paths read per pull request (three pages of 100; GitHub lists at most 3,000)."""
DEFAULT_MAX_WAIT_S = 60.0
"""Longest rate-limit wait accepted inside one update (seconds); a longer ``Retry-After`` fails the fetch."""
DEFAULT_RESERVE = 10
"""Requests left in the hour (``X-RateLimit-Remaining``) below which the fetch stops."""
DEFAULT_TIMEOUT_S = 20.0
"""Per-request timeout (seconds)."""
DEFAULT_SERVER_RETRIES = 2
"""Retries of a 5xx answer (githubkit waits 1 s, then 4 s)."""
MAX_LISTING_PAGES = 10
"""Pages of a listing read per run (100 items a page)."""
_META = "github:"


@dataclass(slots=True)
class GitHubReport:
    """What one refresh did (times in seconds; JSON in the run record's ``sources.github``).

    Attributes:
        repository: ``owner/name``.
        ok: the fetch succeeded (``False``: nothing was changed, ``error`` says why).
        error: one line, no token (``HTTP 500 from GET /repos/…``, ``rate limited …``).
        issues, pull_requests: items stored after the refresh.
        chunks: chunks stored per kind after the refresh.
        fetched: items the listings returned in this refresh (``since`` is inclusive: the newest stored ones too).
        changed: of those, new or updated ones (re-stored).
        skipped_pulls_in_issues: pull requests the issue listing returned (kept as pull requests only).
        requests: HTTP answers received; not_modified: of those, 304 revalidations (ETag).
        rate_limit_remaining, rate_limit_reset_at: GitHub's last ``X-RateLimit-*`` values (epoch s).
        seconds: wall time; redactions: secrets replaced in the fetched text.
    """

    repository: str
    ok: bool = True
    error: str | None = None
    issues: int = 0
    pull_requests: int = 0
    chunks: dict[str, int] = field(default_factory=dict)
    fetched: int = 0
    changed: int = 0
    skipped_pulls_in_issues: int = 0
    requests: int = 0
    not_modified: int = 0
    rate_limit_remaining: int | None = None
    rate_limit_reset_at: float | None = None
    seconds: float = 0.0
    redactions: int = 0

    def to_json(self) -> dict:
        return {"repository": self.repository, "ok": self.ok, "error": self.error, "issues": self.issues,
                "pull_requests": self.pull_requests, "chunks": dict(self.chunks), "fetched": self.fetched,
                "changed": self.changed,
                "skipped_pulls_in_issues": self.skipped_pulls_in_issues, "requests": self.requests,
                "not_modified": self.not_modified, "rate_limit_remaining": self.rate_limit_remaining,
                "rate_limit_reset_at": self.rate_limit_reset_at, "seconds": round(self.seconds, 3),
                "redactions": self.redactions}


def github_status(report: dict | None) -> str | None:
    """One line for ``/sz-status``: ``acme/api: 100 issues, 100 pull requests (2 updated)`` or
    ``acme/api: not refreshed: HTTP 500 …``; ``None`` without a report."""
    if not report:
        return None
    stored = f"{report.get('issues', 0)} issues, {report.get('pull_requests', 0)} pull requests"
    if report.get("ok"):
        return f"{report.get('repository')}: {stored} ({report.get('changed', 0)} updated)"
    return f"{report.get('repository')}: not refreshed ({report.get('error')}); {stored} kept"


class _Stop(Exception):
    """The fetch stops early (rate-limit reserve reached, shutdown); ``str`` is the reason."""


class BoundedRetry:
    """githubkit's retry decision (``auto_retry=``) with a ceiling on waits.

    Rate limits as githubkit's ``RetryRateLimit`` decides (wait ``Retry-After``, or until
    ``X-RateLimit-Reset``; at most ``rate_retries`` times), refused when the wait is over
    ``max_wait_s``; server errors as its ``RetryServerError`` (``server_retries`` times, waits
    1 s, 4 s, 9 s …). Source: githubkit/retry.py, after octokit's plugin-retry/plugin-throttling.
    """

    def __init__(self, *, max_wait_s: float = DEFAULT_MAX_WAIT_S, rate_retries: int = 2,
                 server_retries: int = DEFAULT_SERVER_RETRIES) -> None:
        from githubkit.retry import RetryRateLimit, RetryServerError

        self.max_wait_s = max_wait_s
        self._rate = RetryRateLimit(max_retry=rate_retries)
        self._server = RetryServerError(max_retry=server_retries)
        self.refused_wait_s: float | None = None

    def __call__(self, exc, retry_count: int):
        from githubkit.typing import RetryOption

        option = self._rate(exc, retry_count)
        if option.do_retry:
            wait = option.retry_after.total_seconds() if option.retry_after is not None else 60.0
            if wait > self.max_wait_s:
                self.refused_wait_s = wait
                return RetryOption(False)
            return option
        return self._server(exc, retry_count)


class GitHubFetcher:
    """Fetches one repository's issues and pull requests into its index (module docstring).

    Args:
        config: the repository (``owner/name``), token, API URL, item and comment counts.
        max_wait_s: longest rate-limit wait accepted (:class:`BoundedRetry`).
        server_retries: retries of a 5xx answer.
        reserve: stop when ``X-RateLimit-Remaining`` falls below this.
        timeout_s: per-request timeout.
        clock: epoch-seconds clock (reports).

    One fetcher per repository; :meth:`refresh` calls are serialised by the reindexer's lock.
    """

    name = SOURCE_NAME

    def __init__(self, config: GitHubConfig, *, max_wait_s: float = DEFAULT_MAX_WAIT_S,
                 server_retries: int = DEFAULT_SERVER_RETRIES, reserve: int = DEFAULT_RESERVE,
                 timeout_s: float = DEFAULT_TIMEOUT_S, clock: Callable[[], float] = time.time) -> None:
        if not config.repository:
            raise ValueError("GitHubFetcher needs config.repository (owner/name)")
        self.config = config
        self.owner, self.repo = config.repository.split("/", 1)
        self.reserve = reserve
        self.clock = clock
        self.retry = BoundedRetry(max_wait_s=max_wait_s, server_retries=server_retries)
        self._timeout_s = timeout_s
        self._github = None
        self._report: GitHubReport | None = None

    def __repr__(self) -> str:
        return f"GitHubFetcher({self.config!r})"

    def _client(self):
        """The githubkit client, built once (its HTTP cache keeps ETags from one refresh to the next)."""
        if self._github is None:
            from githubkit import GitHub
            from githubkit.cache import MemCacheStrategy

            self._github = GitHub(self.config.token or None, base_url=self.config.api_url.rstrip("/") + "/",
                                  timeout=self._timeout_s, auto_retry=self.retry, http_cache=True,
                                  cache_strategy=MemCacheStrategy(), user_agent="slackzilla",
                                  event_hooks={"response": [self._on_response]})
        return self._github

    def _on_response(self, response) -> None:
        report = self._report
        if report is None:
            return
        report.requests += 1
        if response.extensions.get("hishel_from_cache") and response.extensions.get("hishel_revalidated"):
            report.not_modified += 1
        remaining, reset = response.headers.get("x-ratelimit-remaining"), response.headers.get("x-ratelimit-reset")
        if remaining is not None and remaining.strip().isdigit():
            report.rate_limit_remaining = int(remaining)
        if reset is not None and reset.strip().isdigit():
            report.rate_limit_reset_at = float(reset)

    # -- the refresh ---------------------------------------------------------------------------------

    def refresh(self, engine, *, should_stop: Callable[[], bool] | None = None) -> GitHubReport:
        """Fetch what changed and store it (module docstring); returns the :class:`GitHubReport`.

        Args:
            engine: the repository's :class:`rag.engine.Engine` (its ``index`` and ``secret_redactor()``).
            should_stop: polled between requests; true stops the fetch (nothing written).

        Never raises for the API's failures (they are in the report); programming errors propagate.
        """
        started = time.perf_counter()
        report = GitHubReport(repository=self.config.repository)
        self._report = report
        store = ItemStore(engine.index, literals=engine.secret_redactor())
        try:
            if engine.index.meta(_META + "repository") not in (None, self.config.repository):
                store.clear(meta_prefix=_META)  # another repository was configured: its items go
            self._refresh(store, report, should_stop)
        except _Stop as stop:
            report.ok, report.error = False, str(stop)
        except Exception as exc:  # noqa: BLE001 - githubkit/httpx/validation failures: enrichment omitted
            if not _is_api_failure(exc):
                raise
            report.ok, report.error = False, self._describe(exc)
        finally:
            self._report = None
            counts, chunks = store.counts(), store.chunk_counts()
            report.issues, report.pull_requests, report.chunks = counts["issue"], counts["pull_request"], chunks
            report.seconds = time.perf_counter() - started
        level = logging.INFO if report.ok else logging.WARNING
        log.log(level, "github refresh repository=%s ok=%s fetched=%d requests=%d not_modified=%d error=%s",
                report.repository, report.ok, report.fetched, report.requests, report.not_modified, report.error)
        return report

    def _refresh(self, store: ItemStore, report: GitHubReport, should_stop) -> None:
        github = self._client()
        with github:
            issues = self._issues(github, store, report, should_stop)
            pulls = self._pulls(github, store, report, should_stop)
            updated = {"issue": self._details(github, issues, report, should_stop, files=False),
                       "pull_request": self._details(github, pulls, report, should_stop, files=True)}
        for kind, fetched in updated.items():
            report.fetched += len(fetched)
            self._merge(store, kind, fetched, report)

    def _check(self, should_stop) -> None:
        if should_stop is not None and should_stop():
            raise _Stop("stopped before it finished (shutdown or the update's deadline)")
        remaining = self._report.rate_limit_remaining if self._report is not None else None
        if remaining is not None and remaining < self.reserve:
            raise _Stop(f"GitHub rate limit nearly used up ({remaining} requests left); "
                        "the rest is fetched at a later update")

    def _listing(self, github, request, should_stop, **params):
        self._check(should_stop)
        pages = github.rest.paginate(request, map_func=lambda response: response.json(), owner=self.owner,
                                     repo=self.repo, **params)
        per_page = params.get("per_page", 100)
        for number, raw in enumerate(pages):
            if number and number % per_page == 0:
                if number // per_page >= MAX_LISTING_PAGES:
                    return
                self._check(should_stop)
            if isinstance(raw, dict):
                yield raw

    def _issues(self, github, store: ItemStore, report: GitHubReport, should_stop) -> list[dict]:
        since = store.index.meta(_META + "issue:since")
        params: dict[str, Any] = {"state": "all", "sort": "updated", "direction": "desc",
                                  "per_page": min(100, max(1, self.config.items))}
        if since:
            params["since"] = _iso(_parse_time(since))  # GitHub's own form, 2024-01-02T03:04:05Z
        found: list[dict] = []
        for raw in self._listing(github, github.rest.issues.list_for_repo, should_stop, **params):
            if "pull_request" in raw:  # the issues endpoint lists pull requests too
                report.skipped_pulls_in_issues += 1
                continue
            found.append(raw)
            if len(found) >= self.config.items:
                break
        return found

    def _pulls(self, github, store: ItemStore, report: GitHubReport, should_stop) -> list[dict]:
        since = store.index.meta(_META + "pull_request:since")
        params = {"state": "all", "sort": "updated", "direction": "desc",
                  "per_page": min(100, max(1, self.config.items))}
        found: list[dict] = []
        for raw in self._listing(github, github.rest.pulls.list, should_stop, **params):
            if since and str(raw.get("updated_at") or "") < since:
                break  # sorted by updated_at, newest first: the rest is already stored
            found.append(raw)
            if len(found) >= self.config.items:
                break
        return found

    def _details(self, github, raws: list[dict], report: GitHubReport, should_stop, *, files: bool) -> list[Item]:
        items = []
        for raw in raws:
            number = int(raw["number"])
            changed: tuple[str, ...] = ()
            if files:
                self._check(should_stop)
                paths = []
                for entry in github.rest.paginate(github.rest.pulls.list_files, map_func=lambda r: r.json(),
                                                  owner=self.owner, repo=self.repo, pull_number=number,
                                                  per_page=100):
                    if isinstance(entry, dict) and isinstance(entry.get("filename"), str):
                        paths.append(entry["filename"])
                    if len(paths) >= MAX_CHANGED_FILES:
                        break
                changed = tuple(paths)
            comments: tuple[Comment, ...] = ()
            if self.config.comments and int(raw.get("comments") or 0) > 0:
                self._check(should_stop)
                answer = github.rest.issues.list_comments(self.owner, self.repo, number, per_page=self.config.comments)
                comments = tuple(Comment(_login(c), str(c.get("created_at") or ""), str(c.get("body") or ""))
                                 for c in answer.json()[: self.config.comments] if isinstance(c, dict))
            items.append(_item("pull_request" if files else "issue", raw, files=changed, comments=comments))
        return items

    def _merge(self, store: ItemStore, kind: str, fetched: list[Item], report: GitHubReport) -> None:
        stored = {item.number: item for item in store.items(kind)}
        changed = False
        for item in fetched:
            old = stored.get(item.number)
            if old is not None and old.updated_at == item.updated_at and old.files == item.files \
                    and len(old.comments) == len(item.comments):
                continue
            clean = store.clean(item)
            report.redactions += clean.redactions
            report.changed += 1
            stored[item.number] = clean
            changed = True
        kept = sorted(stored.values(), key=lambda i: (i.updated_at, i.number), reverse=True)[: self.config.items]
        if len(kept) != len(stored):
            changed = True
        if not changed and store.index.meta(_META + "repository") == self.config.repository:
            return
        since = max((i.updated_at for i in kept), default="")
        store.write_kind(kind, kept, meta={_META + "repository": self.config.repository,
                                           _META + f"{kind}:since": since,
                                           _META + f"{kind}:fetched_at": repr(self.clock())})

    def _describe(self, exc: BaseException) -> str:
        """One line for the report: the status and the request (path only), never a header or the token."""
        from githubkit.exception import RateLimitExceeded, RequestFailed, RequestTimeout

        if isinstance(exc, RateLimitExceeded):
            wait = self.retry.refused_wait_s or exc.retry_after.total_seconds()
            text = f"rate limited by GitHub (HTTP {exc.response.status_code}; retry after {wait:.0f} s)"
        elif isinstance(exc, RequestFailed):
            status = exc.response.status_code
            hint = {401: "the token was refused", 403: "no access (token scope?)",
                    404: f"{self.config.repository} not found or not visible to the token"}.get(status)
            text = f"HTTP {status} from {exc.request.method} {exc.request.url.path}" + (f": {hint}" if hint else "")
        elif isinstance(exc, RequestTimeout):
            text = f"GitHub did not answer in time ({exc.request.method} {exc.request.url.path})"
        else:
            text = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}".rstrip(": ")
        text, _ = redact_secrets(text)
        if self.config.token:
            text = text.replace(self.config.token, "[REDACTED]")
        return text[:300]


def _is_api_failure(exc: BaseException) -> bool:
    """Whether ``exc`` comes from talking to GitHub (network, HTTP status, an answer of the wrong shape)."""
    import httpx
    from githubkit.exception import GitHubException

    return isinstance(exc, (GitHubException, httpx.HTTPError, OSError, ValueError, KeyError, TypeError))


def _parse_time(stamp: str) -> datetime:
    """GitHub's ``2024-01-02T03:04:05Z`` as an aware datetime (raises ``ValueError``)."""
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def _iso(moment: datetime) -> str:
    """``2024-01-02T03:04:05Z`` (what the API documents for ``since``; githubkit would send ``str(datetime)``)."""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _login(raw: dict) -> str | None:
    user = raw.get("user")
    login = user.get("login") if isinstance(user, dict) else None
    return login if isinstance(login, str) else None


def _url(raw: dict) -> str:
    url = raw.get("html_url")
    return url if isinstance(url, str) and url.startswith(("https://", "http://")) else ""


def _item(kind: str, raw: dict, *, files: tuple[str, ...], comments: tuple[Comment, ...]) -> Item:
    """An :class:`Item` (not yet redacted) from an issue or pull request of GitHub's REST API.

    Raises:
        KeyError, ValueError, TypeError: the answer lacks ``number``, ``title`` or ``updated_at``.
    """
    merged_at = raw.get("merged_at") or (raw.get("pull_request") or {}).get("merged_at")
    state = str(raw.get("state") or "open")
    if kind == "pull_request" and merged_at:
        state = "merged"
    labels = tuple(str(label.get("name")) if isinstance(label, dict) else str(label)
                   for label in raw.get("labels") or () if label)
    return Item(kind=kind, number=int(raw["number"]), title=str(raw["title"]), state=state, url=_url(raw),
                created_at=str(raw.get("created_at") or raw["updated_at"]), updated_at=str(raw["updated_at"]),
                author=_login(raw), labels=labels, closed_at=raw.get("closed_at") or None,
                merged_at=merged_at or None, body=str(raw.get("body") or ""), comments=comments, files=files)

