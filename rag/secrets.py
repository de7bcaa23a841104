"""Redact secrets inside otherwise-allowed file content before it is indexed.

Contract: :func:`redact_secrets` returns the text with every detected secret
*value* replaced by :data:`REDACTED` and the number of replacements. Line count
and line numbers never change: no replacement spans a newline, and a
private-key block keeps its BEGIN/END lines while each body line is replaced.
Values are never logged.

Detected:

* token-shaped secrets. Slack tokens and webhooks, OpenAI keys, GitHub tokens,
  AWS access key ids and ``aws ... key = "<40 chars>"`` secrets, Stripe live
  keys and basic-auth passwords in URLs reuse the ``denylist`` regexes of the
  maintained ``detect-secrets`` plugins (``detect_secrets.plugins.*``; copied, and checked against
  the installed plugins by the tests, so indexing never imports detect-secrets' scanner); JWTs use
  its pattern with a greedy signature and its ``is_formally_valid`` check (copied likewise).
  Slack app tokens (``xapp-``), current OpenAI key formats (``sk-proj-`` ...),
  fine-grained GitHub tokens (``github_pat_``), Google API keys (``AIza``),
  GitLab (``glpat-``), npm (``npm_``), Hugging Face (``hf_``), SendGrid and
  Twilio keys, whole Stripe keys longer than detect-secrets' 24 characters,
  ``Bearer`` credentials and the credential of an ``Authorization`` header
  literal (``"Authorization": "Basic …"``, ``"Token …"``), which those plugins
  miss, have patterns of their own;
* literal defaults of secret-named environment variables in code
  (``process.env.JWT_SECRET || "…"``, ``?? "…"``, ``os.getenv("DB_PASSWORD", "…")``);
* outside code, a credential-shaped value of 12 characters or more written after a secret's name and
  white space (``aws configure set aws_secret_access_key v``, ``--secret-key v``, ``password is v``,
  ``set API_KEY to v``, ``secret key: v``);
* a MySQL client's ``-p<password>``, curl's ``-u user:password`` and Docker ``config.json``'s
  ``"auth"`` (base64 of ``user:password``);
* private-key blocks (``-----BEGIN ... PRIVATE KEY-----``, the SSH2
  ``---- BEGIN ... ----`` form, PGP ``PRIVATE KEY BLOCK``: every header in
  detect-secrets' ``PrivateKeyDetector.denylist``) and PuTTY key files;
* literal values assigned to secret-sounding names (``password``, ``passwd``,
  ``pwd``, ``passphrase``, ``secret``, ``token``, ``credentials``, ``api_key``,
  ``private_key``, ``client_secret`` ...): ``password: 'x'``, ``const apiKey =
  "x"``, ``"password": "x"``, ``api_key: str = "x"``, ``token := "x"``,
  ``'secret' => 'x'``, ``define('DB_PASSWORD', 'x')`` and, outside code files, unquoted values of a key that
  starts its line (YAML ``password: x``, ``.env`` ``SECRET=x``, Dockerfile ``ENV DB_PASSWORD=x``)
  or, when credential-shaped, anywhere in a line (prose ``set API_KEY=x in …``, a shell
  command's ``TOKEN=x cmd``, ``"X-Api-Key: x"``). The name must
  *end* with the secret word (``tokenType`` is not one) and the value must be a
  literal that is not a placeholder (``""``, ``xxx``, ``changeme``,
  ``<your-token>``, ``${TOKEN}``, ``$SECRET``, ``ENV_VAR_NAME``, paths, text
  with spaces). Names ending in ``token`` or ``key`` also need a
  credential-shaped value (letters and digits, >= 8 characters; or >= 20), so
  ``token: "Punctuator"`` stays.

Why not detect-secrets' scanning loop: its ``scan_line`` API runs at
0.05-0.27 MB/s, its 46 plugin regexes applied to whole files at about 1 MB/s.
Here each pattern runs once over the whole text. Measured on eslint's ``lib/``
(2.7 MB): one alternation of all token patterns scans at ~36 MB/s in CPython's
``re`` (it has no multi-literal prefix search) while a single literal-prefixed
pattern scans at 0.8-3 GB/s, so token patterns stay one per plugin/prefix and
the slower ones are gated by a literal ``in`` check. Keyword assignments are
found by one case-sensitive alternation over ``text.lower()`` (~170 MB/s; the
same pattern with ``IGNORECASE`` measured 20 MB/s); each hit is then checked
in Python.
"""
from __future__ import annotations

import base64
import json
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass


__all__ = ["CODE_FILE_TYPES", "DETECT_SECRETS_DENYLISTS", "LiteralRedactor", "REDACTED", "REDACTION_VERSION",
           "redact_secrets", "redact_text", "secret_file_values"]

logger = logging.getLogger(__name__)

REDACTED = "[REDACTED]"
REDACTION_VERSION = 3
"""Bump when the redaction rules find more: an index redacted by other rules is rebuilt (the
engine compares it with the index's ``redaction`` meta value), so no stored chunk keeps a value
the current rules would remove. 2: credential-shaped values inside a line or after a name and
white space (``--secret-key v``, ``password is v``), ``mysql -p``, ``curl -u``, Docker's ``"auth"``. 3: a quoted
value after a quoted secret name and a comma (``define('DB_PASSWORD', 'v')``, ``setProperty("password", "v")``),
``getenv('X') ?: 'v'``, ``"password" to "v"``, ``name[] = "v"``, ``IDENTIFIED BY 'v'``, ``secret_key_base: "v"``,
a credential-shaped bare value holding a secret's word (``db.password=MyPassword123!``)."""

# File types whose literals are always quoted: unquoted values are code there.
CODE_FILE_TYPES: frozenset[str] = frozenset({
    "js", "jsx", "mjs", "cjs", "ts", "tsx", "mts", "cts", "py", "json", "css", "scss", "html", "htm",
})
MAX_PEM_BODY_CHARS = 20_000   # an RSA-8192 PEM body is ~6.3 kB
MAX_PEM_LOOSE_LINES = 200     # body lines redacted after a BEGIN line with no END

_Span = tuple[int, int, str]  # (start, end, replacement) in the current text
_Validator = Callable[[str, re.Match[str]], bool]  # (original text, match)


# --------------------------------------------------------------------------- values

_PLACEHOLDER_WORDS = frozenset({
    "password", "passwd", "pass", "pwd", "secret", "token", "apikey", "key", "none", "null", "nil",
    "undefined", "true", "false", "test", "testing", "string", "str", "required", "optional", "empty",
    "default", "unknown", "value", "foo", "bar", "baz", "foobar", "redacted", "hidden", "masked",
})
_PLACEHOLDER_MARKERS = (
    "your", "changeme", "change_me", "change-me", "changeit", "placeholder", "example", "sample",
    "dummy", "redacted", "xxxx", "replace", "insert", "_here", "-here", "fixme", "todo",
)
_PLACEHOLDER_RE = re.compile(
    r"(.)\1*"                                     # xxx, ****, ....
    r"|[\W_xX]+"                                  # x-x-x, *_*
    r"|\$.*|.*(?:\$\{|\{\{|\{%|#\{|%\(|%s).*"     # $VAR, ${VAR}, {{ var }}, #{...}, %(x)s
    r"|<.*>|%[A-Za-z_]+%|\[.*\]"                  # <your-token>, %VAR%, [REDACTED]
    r"|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+"             # ENV_VAR_NAME: a reference, not a value
    r"|(?:\.{1,2}|~)?/.*|[a-z][a-z0-9+.-]*://.*"  # paths and URLs (URL credentials: basic_auth)
    r"|[\^~<>=v]*\d+(?:\.[\dx*]+)+(?:[-+][\w.]+)?"  # versions: "pbkdf2-password": "1.2.1"
    , re.DOTALL)
_WS_RE = re.compile(r"\s")


def _is_placeholder(value: str, *, min_len: int = 4) -> bool:
    """Whether *value* is empty, too short, or a template/placeholder rather than a secret."""
    if len(value) < min_len or _WS_RE.search(value) or _PLACEHOLDER_RE.fullmatch(value):
        return True
    lower = value.lower()
    return lower in _PLACEHOLDER_WORDS or any(marker in lower for marker in _PLACEHOLDER_MARKERS)


def _credential_shaped(value: str) -> bool:
    """Letters and digits and >= 8 characters, or >= 20 characters of mixed case/digits."""
    has_digit = any(c.isdigit() for c in value)
    has_alpha = any(c.isalpha() for c in value)
    if len(value) >= 8 and has_digit and has_alpha:
        return True
    return len(value) >= 20 and has_alpha and (has_digit or not (value.islower() or value.isupper()))


# --------------------------------------------------------------------------- token patterns

DETECT_SECRETS_DENYLISTS: dict[str, tuple[re.Pattern[str], ...]] = {
    "SlackDetector": (
        re.compile(r"xox(?:a|b|p|o|s|r)-(?:\d+-)+[a-z0-9]+", re.IGNORECASE),
        re.compile(r"https://hooks\.slack\.com/services/T[a-zA-Z0-9_]+/B[a-zA-Z0-9_]+/[a-zA-Z0-9_]+",
                   re.IGNORECASE | re.VERBOSE),
    ),
    "OpenAIDetector": (re.compile(r"sk-[A-Za-z0-9-_]*[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}"),),
    "GitHubTokenDetector": (re.compile(r"(ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9_]{36}"),),
    "AWSKeyDetector": (
        re.compile(r"(?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA)[0-9A-Z]{16}"),
        re.compile(r"aws.{0,20}?(?:key|pwd|pw|password|pass|token).{0,20}?[\'\"]([0-9a-zA-Z/+]{40})[\'\"]",
                   re.IGNORECASE),
    ),
    "StripeDetector": (re.compile(r"(?:r|s)k_live_[0-9a-zA-Z]{24}"),),
    "BasicAuthDetector": (re.compile(r"://[^:/\?\#\[\]@!\$\&'\(\)\*\+,;=\s]+:([^:/\?\#\[\]@!\$\&'\(\)\*\+,;=\s]+)@"),),
}
"""The ``denylist`` regexes of the detect-secrets plugins reused here (``detect_secrets.plugins.*``,
detect-secrets 1.5.0), by plugin class, copied as they are: importing the plugins loads detect-secrets'
scanner and ``requests`` (~0.1 s, a fifth of a cold ``slackzilla index``) for nothing but these
patterns. ``tests/rag/test_secrets.py`` checks that they equal the installed plugins' patterns and flags."""

@dataclass(frozen=True)
class _TokenPattern:
    """One whole-text pattern; group *group* is the value to redact.

    ``on_lowered``: the pattern is case-insensitive and runs case-sensitively over
    the lower-cased text (same offsets), which keeps ``re``'s fast literal-prefix
    search. ``gate``: literals of which one must occur in the text before a slow
    pattern (one without a literal prefix) is run at all.
    """

    name: str
    pattern: re.Pattern[str]
    group: int = 0
    on_lowered: bool = False
    gate: tuple[str, ...] = ()
    validate: _Validator | None = None


def _value(text: str, m: re.Match[str], group: int) -> str:
    """The matched group taken from the original *text* (``m`` may come from the lowered copy)."""
    return text[m.start(group):m.end(group)]


def _bounded(text: str, m: re.Match[str]) -> bool:
    """The match is not glued to a preceding/following identifier character."""
    before = text[m.start() - 1] if m.start() else " "
    after = text[m.end()] if m.end() < len(text) else " "
    return not (before.isalnum() or before in "_-") and not (after.isalnum() or after == "_")


def _openai_modern(text: str, m: re.Match[str]) -> bool:
    body = _value(text, m, 0)[3:]
    return (_bounded(text, m) and any(c.isdigit() for c in body)
            and any(c.isupper() for c in body) and any(c.islower() for c in body))


def _jwt_valid(text: str, m: re.Match[str]) -> bool:
    return jwt_formally_valid(_value(text, m, 0).rstrip("."))


def jwt_formally_valid(token: str) -> bool:
    """Whether every ``.``-separated part of ``token`` is padded-able base64url and the first two decode to
    JSON: detect-secrets 1.5.0's ``JwtTokenDetector.is_formally_valid``, copied for the reason
    :data:`DETECT_SECRETS_DENYLISTS` is (``tests/rag/test_secrets.py`` compares the two). One
    difference: a part nested deeper than the JSON decoder's recursion limit (``[[[…]]]`` thousands
    deep, where detect-secrets raises ``RecursionError``) counts as JSON, so the token is redacted
    and the file still indexes."""
    for index, part in enumerate(token.split(".")):
        try:
            raw = part.encode("ascii")
            pad = len(raw) % 4
            if pad == 1:
                return False
            decoded = base64.urlsafe_b64decode(raw + (b"==" if pad == 2 else b"===" if pad == 3 else b""))
            if index < 2:
                json.loads(decoded.decode("utf-8"))
        except RecursionError:  # before ValueError's clause: not a reason to call the token invalid
            continue
        except (TypeError, ValueError, UnicodeDecodeError):
            return False
    return True


def _url_password(text: str, m: re.Match[str]) -> bool:
    return not _is_placeholder(_value(text, m, 1), min_len=3)


def _bearer_value(text: str, m: re.Match[str]) -> bool:
    value = _value(text, m, 1)
    return _credential_shaped(value) and not _is_placeholder(value)


def _ds(pattern: re.Pattern[str], name: str, **kwargs: object) -> _TokenPattern:
    """Reuse a detect-secrets denylist regex as is, or, when it is case-insensitive and
    has no upper-case escape (``\\S``, ``\\B``...), lower-cased for the lowered text."""
    if pattern.flags & re.IGNORECASE and not re.search(r"\\[A-Z]", pattern.pattern):
        return _TokenPattern(name, re.compile(pattern.pattern.lower()), on_lowered=True, **kwargs)  # type: ignore[arg-type]
    return _TokenPattern(name, pattern, **kwargs)  # type: ignore[arg-type]


_QUOTED_PLACEHOLDER = (r"""(?:"(?P<edq>[^"\\\n]*(?:\\.[^"\\\n]*)*)"|'(?P<esq>[^'\\\n]*(?:\\.[^'\\\n]*)*)'"""
                       r"""|`(?P<ebq>[^`\\$\n]*)`)""")


def _auth_header_value(text: str, m: re.Match[str]) -> bool:
    value = _value(text, m, 1)
    return _credential_shaped(value) and not _is_placeholder(value)


def _basic_auth_pair(text: str, m: re.Match[str]) -> bool:
    """The value is base64 of ``user:password`` (Docker's ``config.json`` ``"auth"``, Basic credentials)."""
    try:
        decoded = base64.b64decode(_value(text, m, 1), validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return False
    user, sep, password = decoded.partition(":")
    return bool(sep and user and password) and decoded.isprintable()


_TOKEN_PATTERNS: tuple[_TokenPattern, ...] = (
    *(_ds(p, "slack") for p in DETECT_SECRETS_DENYLISTS["SlackDetector"]),
    _TokenPattern("slack", re.compile(r"xapp-\d+-[A-Za-z0-9]+-\d+-[A-Za-z0-9]+")),
    *(_ds(p, "openai") for p in DETECT_SECRETS_DENYLISTS["OpenAIDetector"]),
    _TokenPattern("openai", re.compile(r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"),
                  validate=_openai_modern),
    *(_ds(p, "github") for p in DETECT_SECRETS_DENYLISTS["GitHubTokenDetector"]),
    _TokenPattern("github", re.compile(r"github_pat_[A-Za-z0-9_]{22,}")),
    _ds(DETECT_SECRETS_DENYLISTS["AWSKeyDetector"][0], "aws", validate=_bounded),
    _ds(DETECT_SECRETS_DENYLISTS["AWSKeyDetector"][1], "aws", group=1),
    # Stripe keys grew past detect-secrets' 24 characters; the whole value goes first.
    _TokenPattern("stripe", re.compile(r"[rsp]k_live_[0-9a-zA-Z]{24,}"), gate=("k_live_",), validate=_bounded),
    *(_ds(p, "stripe", gate=("k_live_",)) for p in DETECT_SECRETS_DENYLISTS["StripeDetector"]),
    _TokenPattern("gitlab", re.compile(r"glpat-[A-Za-z0-9_-]{20,}"), validate=_bounded),
    _TokenPattern("npm", re.compile(r"npm_[A-Za-z0-9]{36}"), validate=_bounded),
    _TokenPattern("huggingface", re.compile(r"hf_[A-Za-z]{34,}"), validate=_bounded),
    _TokenPattern("sendgrid", re.compile(r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}"), validate=_bounded),
    _TokenPattern("twilio", re.compile(r"SK[0-9a-f]{32}"), validate=_bounded),
    _TokenPattern("google", re.compile(r"AIza[0-9A-Za-z_-]{35}"), validate=_bounded),
    _TokenPattern("jwt", re.compile(r"eyJ[A-Za-z0-9_=-]+\.[A-Za-z0-9_=-]+(?:\.[A-Za-z0-9_=-]*)?"),
                  validate=_jwt_valid),
    *(_ds(p, "basic_auth", group=1, validate=_url_password) for p in DETECT_SECRETS_DENYLISTS["BasicAuthDetector"]),
    _TokenPattern("bearer", re.compile(r"bearer[ \t]+([a-z0-9._~+/-]{8,}=*)"), group=1,
                  on_lowered=True, validate=_bearer_value),
    # "Authorization": "Basic dXNl…" / "Token 9f8e…" / set("Authorization", "ApiKey …") in header literals.
    _TokenPattern("auth_header", re.compile(
        r"""authorization["'`]?[ \t]*[:,=][ \t]*["'`](?:basic|token|digest|apikey|api-key|key|sso-key)[ \t]+"""
        r"""([a-z0-9._~+/:=-]{8,})"""), group=1, on_lowered=True, validate=_auth_header_value),
    # MySQL clients take the password glued to -p: mysql -u root -pS3cret db.
    _TokenPattern("mysql_password", re.compile(r"""\bmysql(?:dump|admin|import|show|check|pump|sh)?\b[^\n]{0,200}?"""
                                               r"""[ \t]-p([^\s"'`]{4,})"""),
                  group=1, gate=("mysql",), validate=_url_password),
    # curl -u user:password / --user user:password.
    _TokenPattern("curl_user", re.compile(r"""\bcurl\b[^\n]{0,200}?[ \t](?:-u|--user)[ \t]*[^\s:'"`]+:([^\s'"`]+)"""),
                  group=1, gate=("curl",), validate=_url_password),
    # Docker's config.json: {"auths": {"<registry>": {"auth": "<base64 of user:password>"}}}.
    _TokenPattern("docker_auth", re.compile(r"""["']auth["'][ \t]*:[ \t]*["']([A-Za-z0-9+/]{8,}={0,2})["']"""),
                  group=1, gate=('"auth"', "'auth'"), validate=_basic_auth_pair),
)

# Default values of secret environment variables written in code:
# ``process.env.JWT_SECRET || "…"``, ``process.env["API_KEY"] ?? '…'``,
# ``os.getenv("DB_PASSWORD", "…")``, ``os.environ.get("TOKEN", "…")``.
_ENV_DEFAULT_GATES = ("process.env", "getenv(", "environ.get(", "env.get(")  # one per regex below: skip texts without it
_ENV_DEFAULT_RES = (
    re.compile(r"""process\.env(?:\.(?P<name>[A-Za-z_$][\w$]*)|\[[ \t]*["'`](?P<name2>[^"'`\n]{1,100})["'`][ \t]*\])"""
               r"""[ \t]*(?:\|\||\?\?)[ \t]*""" + _QUOTED_PLACEHOLDER),
    re.compile(r"""(?:environ\.get|getenv|env\.get)\([ \t]*["'](?P<name>[^"'\n]{1,100})["']"""
               r"""[ \t]*(?:,[ \t]*(?:default[ \t]*=[ \t]*)?|\)[ \t]*(?:\?:|\?\?|\|\||or\b)[ \t]*)""" + _QUOTED_PLACEHOLDER),
)


def _env_default_spans(text: str) -> list[_Span]:
    """Literal defaults of secret-named environment variables (see :data:`_ENV_DEFAULT_RES`)."""
    spans: list[_Span] = []
    for number, regex in enumerate(_ENV_DEFAULT_RES):
        gates = _ENV_DEFAULT_GATES[:1] if number == 0 else _ENV_DEFAULT_GATES[1:]
        if not any(gate in text for gate in gates):
            continue
        for m in regex.finditer(text):
            name = m.group("name") if m.group("name") is not None else m.groupdict().get("name2") or ""
            kind = _name_kind(name)
            group = next((g for g in ("edq", "esq", "ebq") if m.start(g) >= 0), None)
            if kind is None or group is None:
                continue
            value = m.group(group)
            if _is_placeholder(value) or (kind == "token" and not _credential_shaped(value)):
                continue
            spans.append((m.start(group), m.end(group), REDACTED))
    return sorted(spans)


def _token_spans(tp: _TokenPattern, text: str, lowered: str) -> list[_Span]:
    haystack = lowered if tp.on_lowered else text
    if tp.gate and not any(g in haystack for g in tp.gate):
        return []
    return [
        (m.start(tp.group), m.end(tp.group), REDACTED)
        for m in tp.pattern.finditer(haystack)
        if tp.validate is None or tp.validate(text, m)
    ]


# --------------------------------------------------------------------------- private keys

# Every literal of PrivateKeyDetector.denylist contains one of these (a test pins it).
_PK_GATES = ("PRIVATE KEY", "PuTTY-User-Key-File-")
_PK_BEGIN_RE = re.compile(r"-{4,5} ?BEGIN ((?:[A-Z0-9]+ )*)PRIVATE KEY( BLOCK)? ?-{4,5}")
_PEM_BASE64_RUN_RE = re.compile(r"[A-Za-z0-9+/]{40,}")
_PEM_LOOSE_LINE_RE = re.compile(r"[ \t\"'`]*(?:[A-Za-z0-9+/]{40,}|Proc-Type:|DEK-Info:)[^\n]*")
_PUTTY_LINES_RE = re.compile(r"^(Private-Lines:[ \t]*)(\d+)[ \t]*\r?$", re.MULTILINE)
_PUTTY_MAC_RE = re.compile(r"^Private-MAC:[ \t]*(\S+)", re.MULTILINE)


def _redact_lines(text: str, start: int, end: int) -> str:
    """``text[start:end]`` with every non-blank line replaced by REDACTED (newlines kept)."""
    out = []
    for seg in text[start:end].split("\n"):
        cr = "\r" if seg.endswith("\r") else ""
        out.append(REDACTED + cr if seg.strip() else seg)
    return "\n".join(out)


def _private_key_spans(text: str) -> tuple[list[_Span], int]:
    """Spans of PEM private-key bodies and PuTTY private lines; count = keys found."""
    spans: list[_Span] = []
    pos = 0
    while (m := _PK_BEGIN_RE.search(text, pos)) is not None:
        end_re = re.compile(rf"-{{4,5}} ?END {re.escape(m.group(1))}PRIVATE KEY{re.escape(m.group(2) or '')} ?-{{4,5}}")
        end_m = end_re.search(text, m.end(), m.end() + MAX_PEM_BODY_CHARS)
        if end_m is None:  # truncated block: the base64 (or PEM header) lines that follow
            end = m.end()
            nl = text.find("\n", end)
            line_end = len(text) if nl < 0 else nl
            if _PEM_BASE64_RUN_RE.search(text, end, line_end):
                end = line_end
            for _ in range(MAX_PEM_LOOSE_LINES):
                if nl < 0 or (line := _PEM_LOOSE_LINE_RE.match(text, nl + 1)) is None:
                    break
                end = line.end()
                nl = text.find("\n", end)
            next_pos = end
        else:
            end, next_pos = end_m.start(), end_m.end()
        if end > m.end():
            spans.append((m.end(), end, _redact_lines(text, m.end(), end)))
        pos = next_pos
    pem = list(spans)
    if "PuTTY-User-Key-File-" in text:
        for lm in _PUTTY_LINES_RE.finditer(text):
            start = end = lm.end()
            for _ in range(min(int(lm.group(2)), MAX_PEM_LOOSE_LINES)):
                nl = text.find("\n", end + 1)
                end = len(text) if nl < 0 else nl
            if end > start:
                spans.append((start, end, _redact_lines(text, start, end)))
        spans.extend((mm.start(1), mm.end(1), REDACTED) for mm in _PUTTY_MAC_RE.finditer(text))
        spans.sort()
        return spans, len(pem) + (1 if len(spans) > len(pem) else 0)
    return spans, len(spans)


# --------------------------------------------------------------------------- keyword assignments

# Matched on text.lower(): a secret word ending a name, optional closing quote/bracket,
# an assignment (``=``, ``:``, ``:=``, ``=>``, or a Python annotation ``: str =``) or, after a quoted
# name, a comma (``define('DB_PASSWORD', 'v')``, ``setProperty("db.password", "v")``: then the value
# must be quoted and credential-shaped, as a list of names is not), then a quoted literal or, outside
# code, one bare token (checked by _bare_value).
_QUOTED = r"""(?:"(?P<dq>[^"\\\n]*(?:\\.[^"\\\n]*)*)"|'(?P<sq>[^'\\\n]*(?:\\.[^'\\\n]*)*)'|`(?P<bq>[^`\\$\n]*)`)"""
_KEYWORD_HEAD = (
    r"(?P<kw>pass(?:word|wd|phrase)?|pwd|secret|token|key|credentials?)(?P<tail>(?:[_.-]?[a-z][a-z0-9]{1,11}){0,2})"
    r"""["'\[\]]{0,2}[ \t]*"""
    r"(?:(?P<sep>:=|=>|=(?!=)|:(?![:=])|,(?<=[\"'],))|(?P<ann>:[ \t]*[a-z_][\w.\[\], |]{0,40}?[ \t]*=(?!=)))[ \t]*"
)
_KEYWORD_QUOTED_RE = re.compile(_KEYWORD_HEAD + _QUOTED)
_KEYWORD_ANY_RE = re.compile(_KEYWORD_HEAD + r"(?:" + _QUOTED + r"""|(?P<bare>[^\s"'`]\S{0,255}))""")
_VALUE_LAST_WORDS = frozenset({"base", "value", "string", "str", "text", "b64", "hex", "bytes"})
"""Last words of a name that holds a secret's value when a secret's word comes before them."""
_PHP_DEFINE_RE = re.compile(r"""\bdefine[ \t]*\([ \t]*["']\Z""", re.I)
"""``define('`` just before a name: PHP's constant (``wp-config.php``), whose value is any literal."""
_REST_OF_LINE_RE = re.compile(r"[ \t]*(?:[#;][^\n]*)?\r?(?:\n|\Z)")  # blank or an ini/yaml/sh comment
MAX_NAME_CHARS = 100   # how far back a key name is read
MAX_KEY_INDENT = 200   # how far back the start of a line is looked for

_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$.-")
_NAME_WORD_RE = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_SECRET_LAST_WORDS = ("password", "passwd", "passphrase", "secret")
_KEY_PREFIXES = frozenset({
    "api", "secret", "private", "priv", "access", "auth", "client", "signing", "encryption", "master",
    "service", "account", "db", "database", "app", "consumer", "license", "webhook", "session",
})
_PASS_PREFIXES = frozenset({"db", "database", "key", "user", "admin", "root", "smtp", "mail", "redis", "keystore",
                            "truststore", "store"})
_LINE_START_PREFIX_RE = re.compile(r"""[ \t]*(?:export[ \t]+|-[ \t]+|(?:ENV|ARG)[ \t]+)?["']?""")
_INLINE_VALUE_RE = re.compile(r"""[^\s"'`,;)\]}>]+""")
"""A bare value inside a line runs to white space, a quote, a comma or a closing bracket."""
_BARE_CODE_RE = re.compile(r"[()\[\]{}<>]|[,;]$|^[&*!|>@]|^[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+$")
_BARE_IDENTIFIER_WORDS = ("password", "passwd", "secret", "token")


def _name_kind(name: str, *, config: bool = False) -> str | None:
    """``"token"`` (value must look random), ``"secret"`` (any literal) or None (not secret).

    ``config``: the text is configuration, not code, so a key named just ``pass`` (YAML
    ``pass: x``, INI ``pass = x``) is a password; in code ``pass`` alone is a keyword or a
    verb, so it counts only with a prefix (``db_pass``, ``smtpPass``).
    """
    words = [w.lower() for w in _NAME_WORD_RE.findall(name)]
    if not words:
        return None
    last = words[-1]
    prev = words[-2] if len(words) > 1 else ""
    if last.endswith(("token", "apikey", "privatekey", "secretkey", "accesskey", "credential", "credentials")):
        return "token"
    if last == "key":
        # API_KEY, SIGNING_KEY …; in SCREAMING_SNAKE env style (OPENAI_KEY) any *_KEY is a credential.
        return "token" if prev in _KEY_PREFIXES or (prev and name.isupper()) else None
    if last.endswith(_SECRET_LAST_WORDS) or last == "pwd" or (last == "pass" and (prev in _PASS_PREFIXES or (config and not prev))):
        return "secret"
    if last in _VALUE_LAST_WORDS and any(w in ("secret", "password", "passwd") for w in words[:-1]):
        return "token"  # secret_key_base, SecretString: the secret's value (not secretName, passwordHash)
    return None


def _bare_value(text: str, name_start: int, start: int, end: int) -> tuple[int, str] | None:
    """``(end, value)`` of an acceptable unquoted value, or ``None``.

    Any literal counts as ``key: value`` / ``KEY=value`` alone on its line (``export``, a YAML
    list dash or Dockerfile's ``ENV``/``ARG`` may come first). Inside a line (prose, ``KEY=v cmd``,
    ``"X-Api-Key: v"``, ``` `password: v` ```) only a credential-shaped value does
    (:func:`_credential_shaped`, and of mixed case below 12 characters): there a word after
    the key is usually prose or an identifier.
    """
    line_start = text.rfind("\n", max(0, name_start - MAX_KEY_INDENT), name_start) + 1
    if ((line_start == 0 and name_start > MAX_KEY_INDENT)
            or not _LINE_START_PREFIX_RE.fullmatch(text, line_start, name_start)
            or not _REST_OF_LINE_RE.match(text, end)):  # not the line's one key, or more after the value
        return _inline_bare_value(text, start)
    value = text[start:end]
    lower = value.lower()
    if _BARE_CODE_RE.search(value) or (any(w in lower for w in _BARE_IDENTIFIER_WORDS)
                                        and not _credential_shaped(value)):  # passwordField, not MyPassword123!
        return None
    return end, value


def _inline_bare_value(text: str, start: int, *, quoted_by: str | None = None) -> tuple[int, str] | None:
    """A credential-shaped unquoted value starting at ``start`` inside a line (see :func:`_bare_value`);
    ``quoted_by``: the quote opening it, when it is a literal (``#define JWT_SECRET "v"``): then a value
    holding a secret's name (``mySecretSigningKey2024``) is one too."""
    m = _INLINE_VALUE_RE.match(text, start)
    if m is None:
        return None
    value = m.group().rstrip(".:")  # a sentence's full stop
    lower = value.lower()
    # ``{ password: hunter2x }`` in a snippet is an identifier: inside a line, 8 characters of one
    # case are not enough.
    if (not _credential_shaped(value) or (len(value) < 12 and (value.islower() or value.isupper()))
            or _BARE_CODE_RE.search(value)
            or (any(w in lower for w in _BARE_IDENTIFIER_WORDS)
                and (quoted_by is None or not _credential_shaped(value)))):
        return None
    return start + len(value), value


# Matched on text.lower(): a secret's name (its last word: ``aws_secret_access_key`` from ``access_key``), then
# white space (``--secret-key v``, ``aws_secret_access_key v``, ``password is v``, ``set API_KEY to v``), a
# colon after a two-word name (``secret key: v``) or a Markdown table's next cell (``| AWS secret | v |``); the
# value may be quoted (``password is `v```).
_SPACED_RE = re.compile(
    r"(?<![a-z0-9])(?:(?:api|access|secret|private|auth)[ _-]?key|pass(?:word|wd|phrase)|secret|token|identified[ \t]+by)"
    r"""["']?(?:[ \t]+(?:(?:is|to|as)[ \t]+)?|[ \t]*[:=|][ \t]*)["'`]?(?=[^\s"'`|])""")
MIN_SPACED_VALUE_CHARS = 12
"""A value after a name and white space must be this long (and credential-shaped): there the next word is
most often prose ("the token is refreshed")."""


def _camel_identifier(value: str) -> bool:
    """``http2SessionHandler``, ``verifySignature1234``: lower-case first, a capital hump, every run of
    letters a word of 2 or more: a name in prose about code ("pass the token to http2SessionHandler")."""
    words = _NAME_WORD_RE.findall(value)
    return (value[:1].islower() and any(c.isupper() for c in value) and "".join(words) == value
            and all(len(w) >= 2 for w in words if w.isalpha()))


def _spaced_spans(text: str, lowered: str) -> list[_Span]:
    """Credential-shaped values written after a secret's name without an assignment (see :data:`_SPACED_RE`)."""
    spans: list[_Span] = []
    for m in _SPACED_RE.finditer(lowered):
        quote = text[m.end() - 1] if text[m.end() - 1] in "\"'`" else None  # a literal: never an identifier
        found = _inline_bare_value(text, m.end(), quoted_by=quote)
        if (found is None or len(found[1]) < MIN_SPACED_VALUE_CHARS or _is_placeholder(found[1])
                or (quote is None and _camel_identifier(found[1]))):
            continue
        spans.append((m.end(), found[0], REDACTED))
    return spans


def _keyword_spans(text: str, lowered: str, *, allow_bare: bool) -> list[_Span]:
    spans: list[_Span] = []
    regex = _KEYWORD_ANY_RE if allow_bare else _KEYWORD_QUOTED_RE
    pos = 0
    while (m := regex.search(lowered, pos)) is not None:
        pos = m.end()
        name_start = m.start()
        floor = max(0, name_start - MAX_NAME_CHARS)
        while name_start > floor and text[name_start - 1] in _NAME_CHARS:
            name_start -= 1
        name = text[name_start:m.end("tail")]  # secret_key_base: a secret's name with words after it
        kind = _name_kind(name, config=allow_bare)
        if kind is None:
            continue
        group = next(g for g in ("dq", "sq", "bq", "bare") if m.start(g) >= 0)
        if group == "bare" and (qm := _KEYWORD_QUOTED_RE.match(lowered, m.start())):
            m, group = qm, next(g for g in ("dq", "sq", "bq") if qm.start(g) >= 0)  # x: str = "v"
            pos = m.end()
        if group == "bare" and m.group("sep") == ",":  # a call's next argument: only a literal is a value
            pos = m.start(group)
            continue
        start, end = m.start(group), m.end(group)
        value = text[start:end]
        if group == "bare":
            bare = None if m.group("ann") is not None else _bare_value(text, name_start, start, end)
            if bare is None:
                pos = start  # the rejected token may hold the next key (``a:b,password:"x"``)
                continue
            end, value = bare
        if _is_placeholder(value) or (kind == "token" and not _credential_shaped(value)):
            continue
        if (m.group("sep") == "," and (not _credential_shaped(value) or _camel_identifier(value))
                and not _PHP_DEFINE_RE.search(text, max(0, name_start - 24), name_start)):
            continue  # ("username", "password", "message"): a list of names, not a name and its value
        if value.lower().replace("-", "_") == name.lower().replace("-", "_"):
            continue
        spans.append((start, end, REDACTED))
    return spans


# --------------------------------------------------------------------------- entry point

def _lower_aligned(text: str) -> str:
    """``text.lower()`` with the same length and offsets (U+0130 is the only char that grows)."""
    return (text.replace("\u0130", "I") if "\u0130" in text else text).lower()


def _apply(text: str, spans: list[_Span]) -> str:
    parts: list[str] = []
    pos = 0
    for start, end, replacement in spans:
        parts.append(text[pos:start])
        parts.append(replacement)
        pos = end
    parts.append(text[pos:])
    return "".join(parts)


def redact_secrets(text: str, *, file_type: str | None = None) -> tuple[str, int]:
    """Replace every secret value in *text* by ``[REDACTED]``.

    Args:
        text: whole-file text (any line endings).
        file_type: optional ``WalkedFile.file_type`` (``js``, ``yml``, ``env``...).
            For code types (:data:`CODE_FILE_TYPES`) only quoted literals count
            as values; otherwise (and when ``None``) the unquoted value of a key
            that starts its line (``password: x``, ``SECRET=x``) counts too.

    Returns:
        ``(redacted_text, count)``: *count* is the number of values (or
        private-key blocks) replaced. ``redacted_text`` has exactly the same
        lines as *text*; everything that is not a secret value is unchanged.

    Example::

        >>> redact_secrets('password: "hunter2"\\ntoken = getToken()\\n')
        ('password: "[REDACTED]"\\ntoken = getToken()\\n', 1)
    """
    count = 0
    lowered = _lower_aligned(text)
    if any(gate in text for gate in _PK_GATES):
        spans, keys = _private_key_spans(text)
        if spans:
            count += keys
            text = _apply(text, spans)
            lowered = _lower_aligned(text)
    for tp in _TOKEN_PATTERNS:
        spans = _token_spans(tp, text, lowered)
        if spans:
            count += len(spans)
            text = _apply(text, spans)
            lowered = _lower_aligned(text)
    spans = _env_default_spans(text)
    if spans:
        count += len(spans)
        text = _apply(text, spans)
        lowered = _lower_aligned(text)
    allow_bare = file_type is None or file_type.lower() not in CODE_FILE_TYPES
    spans = _keyword_spans(text, lowered, allow_bare=allow_bare)
    if spans:
        count += len(spans)
        text = _apply(text, spans)
        lowered = _lower_aligned(text)
    if allow_bare:
        spans = _spaced_spans(text, lowered)
        if spans:
            count += len(spans)
            text = _apply(text, spans)
    if count:
        logger.debug("redacted %d secret value(s)", count)
    return text, count


# --------------------------------------------------------------------------- values of secret files

_ENV_LINE_RE = re.compile(r"^[ \t]*(?:export[ \t]+)?[A-Za-z_][A-Za-z0-9_.-]*[ \t]*[=:][ \t]*(?P<value>.+?)[ \t]*$", re.M)
MIN_SECRET_VALUE_CHARS = 8   # shorter values ("true", "3000") would redact ordinary words


def secret_file_values(text: str) -> set[str]:
    """Values assigned in a secret file (``.env`` style ``KEY=value``, ``.npmrc`` ``key=value``).

    Quotes are stripped; values shorter than :data:`MIN_SECRET_VALUE_CHARS`,
    or without a letter or digit, are ignored.
    """
    values: set[str] = set()
    for m in _ENV_LINE_RE.finditer(text):
        value = m.group("value").strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'`":
            value = value[1:-1]
        if len(value) >= MIN_SECRET_VALUE_CHARS and any(ch.isalnum() for ch in value):
            values.add(value)
    return values


class LiteralRedactor:
    """Redacts known secret strings (e.g. values from ``.env``) wherever they appear.

    One compiled alternation of the escaped values, longest first; ``redact(text)``
    returns ``(text, count)`` like :func:`redact_secrets`. ``digest`` identifies
    the value set (to notice when it changes) without revealing it.
    """

    def __init__(self, values: set[str]) -> None:
        ordered = sorted(values, key=lambda v: (-len(v), v))
        self._pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None
        import hashlib

        self.digest = hashlib.blake2b("\0".join(sorted(values)).encode("utf-8", "surrogatepass"),
                                      digest_size=8).hexdigest()

    def redact(self, text: str) -> tuple[str, int]:
        """``(text with every known value replaced by [REDACTED], number of replacements)``."""
        if self._pattern is None:
            return text, 0
        return self._pattern.subn(REDACTED, text)


# --------------------------------------------------------------------------- free text

COUNT_KEY_RE = re.compile(r"tokens$|tokencount|tokensused|tokenizer|tokenbudget")
"""Key names (normalised by :func:`normalize_key`) that count tokens rather than hold one."""


def normalize_key(key: str) -> str:
    """``"X-Api-Key"`` → ``"xapikey"``: lower-case letters and digits only."""
    return re.sub(r"[^a-z0-9]", "", key.lower())


_KEY_WORDS = (
    r"[A-Za-z0-9_.-]*(?:authorization|cookie|passw(?:or)?d|passphrase|secret|token|api[_-]?key"
    r"|private[_-]?key|access[_-]?key|credentials?|session[_-]?id)[A-Za-z0-9_.-]*"
)
_AUTH_SCHEME_RE = re.compile(r"(?i)\b(bearer|basic|token)(\s+)(?!\[REDACTED\])([A-Za-z0-9._~+/=-]{6,})")
_INLINE_RE = re.compile(
    r"(?i)(?<![A-Za-z0-9])(" + _KEY_WORDS + r"|(?-i:[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*_KEY)" + r")(\"?\s*[:=]\s*)([\"']?)"
    r"(?!\[REDACTED\])(?!(?:bearer|basic)\s)([^\s\"',;&}]+)"
)
# user may be empty (``redis://:pw@host``); the password runs to the last ``@`` before the host.
_URL_USERINFO_RE = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^\s/:@]*:)([^\s/]+)(@)", re.I)


_CITED_FILE_RE = re.compile(r"\.[A-Za-z][A-Za-z0-9]{0,4}$")
_LINE_RANGE_RE = re.compile(r"L?\d+(?:[-–]L?\d+)?\.?")


def redact_text(text: str, *, literals: "LiteralRedactor | None" = None) -> tuple[str, int]:
    """Redact credentials inside free text: the one redactor for text that is not a file
    (tool output, questions, provider error details, what is posted to Slack).

    A citation of a file named like a secret (``config/secrets.py:12-30``) is not a value.

    Removes ``Bearer``/``Basic``/``Token`` credentials, inline ``key=value`` and
    ``password: value`` pairs whose key names a secret (``DB_PASSWORD=…``, ``api_key: …``,
    env-style ``SESSION_KEY=…``), URL user-info passwords, every token pattern of
    :func:`redact_secrets`, and, with ``literals``, the values found in the repository's
    secret files.

    Returns:
        ``(text, count)`` — the redacted text and the number of values replaced.
    """
    count = 0

    def scheme(match: re.Match) -> str:
        nonlocal count
        value = match.group(3)
        # "Token budget", "Basic authentication" are prose: after those words only a
        # credential-shaped value counts; "Bearer" is followed by a credential or nothing.
        prose_word = match.group(1).lower() != "bearer"
        if _is_placeholder(value) or (prose_word and not _credential_shaped(value)):
            return match.group(0)
        count += 1
        return f"{match.group(1)}{match.group(2)}{REDACTED}"

    def inline(match: re.Match) -> str:
        nonlocal count
        if COUNT_KEY_RE.search(normalize_key(match.group(1))):
            return match.group(0)
        value, quote = match.group(4), match.group(3)
        if _CITED_FILE_RE.search(match.group(1)) and _LINE_RANGE_RE.fullmatch(value):
            return match.group(0)  # a citation of a file named so (config/secrets.py:12-30), not a value
        if quote and match.end() < len(text) and text[match.end()] not in (quote, "\n"):
            return match.group(0)  # a quoted phrase (``SECRET_QUESTION = "why does it fail"``), not a value
        if len(value) < 4 or _is_placeholder(value, min_len=4) and not any(c.isdigit() for c in value):
            return match.group(0)
        count += 1
        return f"{match.group(1)}{match.group(2)}{match.group(3)}{REDACTED}"

    def userinfo(match: re.Match) -> str:
        nonlocal count
        count += 1
        return f"{match.group(1)}{REDACTED}{match.group(3)}"

    text = _AUTH_SCHEME_RE.sub(scheme, text)
    text = _INLINE_RE.sub(inline, text)
    text = _URL_USERINFO_RE.sub(userinfo, text)
    text, more = redact_secrets(text)
    count += more
    if literals is not None:
        text, more = literals.redact(text)
        count += more
    return text, count
