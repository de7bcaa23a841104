"""Secret redaction in file content: planted secrets vanish, everything else stays byte-for-byte."""
from __future__ import annotations

import logging
from pathlib import Path

import pytest
from detect_secrets.plugins.private_key import PrivateKeyDetector

from rag.secrets import REDACTED, redact_secrets

ESLINT_LIB = Path.home() / ".cache" / "sz-eval" / "eslint" / "lib"

# Fake values, assembled so the source file itself holds no token-shaped literal.
SLACK_BOT = "xoxb-" + "123456789012-1234567890123-" + "AbCdEfGhIjKlMnOpQrStUvWx"
SLACK_USER = "xoxp-" + "1234567890-1234567890-1234567890123-" + "0123456789abcdef0123456789abcdef"
SLACK_APP = "xapp-" + "1-A0123456789-1234567890123-" + "0123456789abcdef0123456789abcdef"
SLACK_HOOK = "https://hooks.slack.com/services/" + "T01234567/B01234567/AbCdEfGhIjKlMnOpQrStUvWx"
OPENAI_PROJ = "sk-" + "proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789_abcDEF-ghiJKL"
OPENAI_OLD = "sk-" + "AbCdEfGhIjKlMnOpQrSt" + "T3BlbkFJ" + "UvWxYz0123456789AbCd"
GITHUB_PAT = "ghp_" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
GITHUB_OAUTH = "gho_" + "0123456789AbCdEfGhIjKlMnOpQrStUvWxYz"
GITHUB_FINE = "github_pat_" + "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWX"
AWS_ID = "AKIA" + "IOSFODNN7QWERTYU"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYzzzzKEY0123"
STRIPE = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"
STRIPE_RK = "rk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"
GOOGLE = "AIza" + "SyA1234567890abcdefghijklmnopqrstuv"
JWT = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9" + ".eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ"
       + ".dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U")
BEARER = "abcDEF0123456789" + "ghiJKL"

# (line containing a secret, the secret value that must disappear)
PLANTED: list[tuple[str, str]] = [
    (f"SLACK_BOT_TOKEN={SLACK_BOT}", SLACK_BOT),
    (f"const t = '{SLACK_USER}';", SLACK_USER),
    (f"  appToken: process.env.X || '{SLACK_APP}',", SLACK_APP),
    (f"webhook_url: {SLACK_HOOK}", SLACK_HOOK),
    (f"OPENAI_API_KEY={OPENAI_PROJ}", OPENAI_PROJ),
    (f"openai.api_key = '{OPENAI_OLD}'", OPENAI_OLD),
    (f"git clone with {GITHUB_PAT} here", GITHUB_PAT),
    (f'"auth": "{GITHUB_OAUTH}"', GITHUB_OAUTH),
    (f"GH={GITHUB_FINE}", GITHUB_FINE),
    (f"aws_access_key_id = {AWS_ID}", AWS_ID),
    (f'const awsConfig = {{ secretAccessKey: "{AWS_SECRET}" }};', AWS_SECRET),
    (f"stripe.key({STRIPE})", STRIPE),
    (f"restricted = {STRIPE_RK}", STRIPE_RK),
    (f"const maps = '{GOOGLE}';", GOOGLE),
    (f"cookie: {JWT}", JWT),
    ("DATABASE_URL=postgres://app:S3cretPw0rd@db.internal:5432/app", "S3cretPw0rd"),
    (f"curl -H 'Authorization: Bearer {BEARER}' https://api", BEARER),
    ("const config = { password: 'hunter2' };", "hunter2"),
    ('const apiKey = "f3a9c2d1e8b7a6c5";', "f3a9c2d1e8b7a6c5"),
    ('{"password": "correct-horse-42"}', "correct-horse-42"),
    ('  "client_secret": "Zq8xW3vR7tY2uP9o",', "Zq8xW3vR7tY2uP9o"),
    ("password: swordfish", "swordfish"),
    ("db:\n  password: 'tr0ub4dor&3'", "tr0ub4dor&3"),
    ("SECRET=kj4h5kj3h45", "kj4h5kj3h45"),
    ("export DB_PASSWORD=letmein99", "letmein99"),
    ("private_key = 'a8f5f167f44f4964e6c998dee827110c'", "a8f5f167f44f4964e6c998dee827110c"),
    ("API_KEY: str = 'Ab12Cd34Ef56Gh78'", "Ab12Cd34Ef56Gh78"),
    ('token := "tok_1234567890abcdef"', "tok_1234567890abcdef"),
    ("'secret' => 'Shh-its-42-secret'", "Shh-its-42-secret"),
    ("self.secret_key = 'django-insecure-9x!k2'", "django-insecure-9x!k2"),
    ("jwtSecret: `mYj3wtS3cr3t`,", "mYj3wtS3cr3t"),
    ("[db]\npasswd = Pa55w0rd", "Pa55w0rd"),
]


@pytest.mark.parametrize(("text", "secret"), PLANTED, ids=[p[1][:12] for p in PLANTED])
def test_each_planted_secret_is_redacted(text: str, secret: str) -> None:
    out, count = redact_secrets(text + "\n")
    assert secret not in out
    assert REDACTED in out
    assert count == 1
    assert out.count("\n") == text.count("\n") + 1


def test_only_the_value_is_replaced() -> None:
    assert redact_secrets("const config = { password: 'hunter2' };") == (
        f"const config = {{ password: '{REDACTED}' }};", 1)
    assert redact_secrets('{"password": "correct-horse-42", "user": "bob"}') == (
        f'{{"password": "{REDACTED}", "user": "bob"}}', 1)
    assert redact_secrets("DATABASE_URL=postgres://app:S3cretPw0rd@db:5432/app") == (
        f"DATABASE_URL=postgres://app:{REDACTED}@db:5432/app", 1)
    assert redact_secrets("SECRET=kj4h5kj3h45  # rotate monthly\n") == (f"SECRET={REDACTED}  # rotate monthly\n", 1)


def test_whole_file_with_every_kind_counts_and_keeps_lines() -> None:
    filler = ["function add(a, b) {", "  return a + b;", "}", "// tokens: see docs", ""]
    lines: list[str] = []
    for text, _ in PLANTED:
        lines.extend(filler)
        lines.append(text)
    source = "\n".join(lines) + "\n"
    out, count = redact_secrets(source)
    assert count == len(PLANTED)
    assert out.count("\n") == source.count("\n")
    for secret in (s for _, s in PLANTED):
        assert secret not in out
    for before, after in zip(source.splitlines(), out.splitlines()):
        if before in filler:
            assert after == before


NOT_SECRETS = [
    "password: req.body.password",
    "const password = req.body.password;",
    "token = getToken()",
    "secret: process.env.SECRET,",
    "secret: process.env.SECRET",
    "const { token } = options;",
    'password: ""',
    "password: ''",
    'password: "xxx"',
    'password: "********"',
    'password: "changeme"',
    'token: "<your-token>"',
    'token: "${TOKEN}"',
    "token: `${prefix}-${id}`",
    "SECRET=${SECRET}",
    "PASSWORD=$DB_PASSWORD",
    "API_KEY=",
    "api_key: YOUR_API_KEY_HERE",
    'apiKey: "your-api-key"',
    'tokenType: "Punctuator"',
    'token: "Punctuator"',
    'if (token.type === "Punctuator" && token.value === "(") {}',
    'if (token === "=>") return;',
    'const key = "value";',
    'cacheKey: "users-list-2"',
    'publicKey: "ssh-ed25519"',
    "credentials: 'include'",
    'messages: { missingSecret: "Secret is missing from {{name}}." }',
    'password: "Enter your password"',
    '"pbkdf2-password": "1.2.1",',
    'secret: "JWT_SECRET",',
    'password_file: "/run/secrets/db_password"',
    "password: !vault |",
    "password: *default_password",
    "secretName: my-k8s-secret",
    'const passwordHash = "5f4dcc3b5aa765d61d8327deb882cf99";',
    "token = next",
    "password = newPassword",
    "type: password",
    '<input type="password" name="password">',
    "https://user@example.com/path and https://example.com:8080/x",
    "mongodb://user:password@localhost/db",
    "Bearer authentication is described below.",
    "sk-fading-circle-container-spinner { }",
    "task-runner-options-with-many-parts",
    "-----BEGIN RSA PRIVATE KEY----- is what the file starts with.",
    "ÄÖÜ İstanbul password: req.body.password",
]


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_non_secrets_are_untouched(text: str) -> None:
    assert redact_secrets(text) == (text, 0)


def test_unquoted_values_count_only_outside_code() -> None:
    text = "password: hunter2x\n"
    assert redact_secrets(text, file_type="yml") == (f"password: {REDACTED}\n", 1)
    assert redact_secrets(text, file_type="env") == (f"password: {REDACTED}\n", 1)
    assert redact_secrets(text) == (f"password: {REDACTED}\n", 1)
    assert redact_secrets(text, file_type="js") == (text, 0)      # an identifier in JS
    assert redact_secrets("  x = { password: hunter2x }\n") == ("  x = { password: hunter2x }\n", 0)


def test_a_key_named_pass_is_a_password_in_configuration_only() -> None:
    assert redact_secrets("db:\n  pass: hunter2x\n", file_type="yml") == (f"db:\n  pass: {REDACTED}\n", 1)
    assert redact_secrets("pass = hunter2x\n", file_type="ini") == (f"pass = {REDACTED}\n", 1)
    assert redact_secrets('pass: "hunter2x"\n', file_type="yaml") == (f'pass: "{REDACTED}"\n', 1)
    code = 'def f():\n    pass\nmode = {pass: "through"}\n'
    assert redact_secrets(code, file_type="py") == (code, 0)
    assert redact_secrets(code, file_type="js") == (code, 0)


PEM_BODY = [
    "MIIEowIBAAKCAQEAx8Vb3yH2k1p0aQ9zR3tY7uI8oP1aS2dF3gH4jK5lZ6xC7vB8",
    "nM9qW0eR1tY2uI3oP4aS5dF6gH7jK8lZ9xC0vB1nM2qW3eR4tY5uI6oP7aS8dF9g",
    "H0jK1lZ2xC3vB4nM5qW6eR7tY8uI9oP0aS1dF2gH3jK4lZ5xC6vB7nM8qW9eR0t==",
]


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_private_key_block_keeps_markers_and_line_numbers(newline: str) -> None:
    block = ["const x = 1;", "-----BEGIN RSA PRIVATE KEY-----", *PEM_BODY, "-----END RSA PRIVATE KEY-----", "end"]
    text = newline.join(block) + newline
    out, count = redact_secrets(text)
    assert count == 1
    assert out == newline.join(["const x = 1;", "-----BEGIN RSA PRIVATE KEY-----", *[REDACTED] * len(PEM_BODY),
                                "-----END RSA PRIVATE KEY-----", "end"]) + newline


@pytest.mark.parametrize("literal", [p.pattern for p in PrivateKeyDetector.denylist])
def test_every_detect_secrets_private_key_header_is_handled(literal: str) -> None:
    if literal.startswith("PuTTY"):
        text = ("PuTTY-User-Key-File-2: ssh-rsa\nEncryption: none\nComment: k\nPublic-Lines: 1\nAAAApub\n"
                f"Private-Lines: 2\n{PEM_BODY[0]}\n{PEM_BODY[1]}\nPrivate-MAC: 0a1b2c3d4e5f\nafter\n")
        out, count = redact_secrets(text)
        assert count == 1 and "0a1b2c3d4e5f" not in out and "AAAApub" in out and out.endswith("after\n")
    else:
        dashes = "----" if "SSH2" in literal else "-----"
        pad = " " if "SSH2" in literal else ""
        end = literal.replace("BEGIN", "END")
        text = f"{dashes}{pad}{literal}{pad}{dashes}\n" + "\n".join(PEM_BODY) + f"\n{dashes}{pad}{end}{pad}{dashes}\n"
        out, count = redact_secrets(text)
        assert count == 1
    assert out.count("\n") == text.count("\n")
    assert not any(line in out for line in PEM_BODY)


def test_private_key_in_json_string_and_truncated_block() -> None:
    one_line = '{"private_key": "-----BEGIN PRIVATE KEY-----\\n' + "\\n".join(PEM_BODY) + '\\n-----END PRIVATE KEY-----\\n"}'
    out, count = redact_secrets(one_line)
    assert count == 1 and PEM_BODY[0] not in out and "-----END PRIVATE KEY-----" in out

    truncated = "-----BEGIN EC PRIVATE KEY-----\n" + "\n".join(PEM_BODY) + "\nnext = 1\n"
    out, count = redact_secrets(truncated)
    assert count == 1 and out == "-----BEGIN EC PRIVATE KEY-----\n" + "\n".join([REDACTED] * 3) + "\nnext = 1\n"


def test_offsets_survive_characters_whose_lower_case_grows() -> None:
    text = "İİİ ünïcödé\npassword: 'hunter2'\n"
    assert redact_secrets(text) == (f"İİİ ünïcödé\npassword: '{REDACTED}'\n", 1)


def test_secret_values_are_never_logged(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    redact_secrets("\n".join(text for text, _ in PLANTED))
    for _, secret in PLANTED:
        assert secret not in caplog.text


def test_empty_text() -> None:
    assert redact_secrets("") == ("", 0)


@pytest.mark.skipif(not ESLINT_LIB.is_dir(), reason="eval corpus not fetched")
def test_no_false_positives_on_eslint_lib() -> None:
    redacted = {}
    for path in sorted(ESLINT_LIB.rglob("*.js")):
        text = path.read_text(encoding="utf-8")
        for file_type in ("js", None):
            out, count = redact_secrets(text, file_type=file_type)
            if count:
                redacted[str(path.relative_to(ESLINT_LIB))] = count
    assert redacted == {}


# -- variants that passed before (issue 14) ----------------------------------------------------

@pytest.mark.parametrize("text, secret", [
    ('fetch(u, { headers: { "Authorization": "Token 9f8e7d6c5b4a39281706f5e4d3c2b1a0" } })',
     "9f8e7d6c5b4a39281706f5e4d3c2b1a0"),
    ('req.set("Authorization", "Basic dXNlcjpodW50ZXIyaHVudGVyMg==")', "dXNlcjpodW50ZXIyaHVudGVyMg"),
    ('const key = process.env.STRIPE_KEY || "rk_live_51H8abcdEFGHijkl0123456789";', "0123456789"),
    ('const secret = process.env.JWT_SECRET ?? "s3cr3t-jwt-signing-value";', "s3cr3t-jwt-signing-value"),
    ("const t = process.env['API_TOKEN'] || 'AbCdEf0123456789xyzXYZ';", "AbCdEf0123456789xyzXYZ"),
    ('DB_PASSWORD = os.environ.get("DB_PASSWORD", "hunter2hunter2")', "hunter2hunter2"),
    ('token = os.getenv("GITHUB_TOKEN", default="AbCdEf0123456789GhIj")', "AbCdEf0123456789GhIj"),
    ("//registry.npmjs.org/:_authToken=npm_abcdefghijklmnopqrstuvwxyz0123456789", "npm_abcdefghij"),
    ('HF = "hf_abcdefghijklmnopqrstuvwxyzABCDEFGH"', "hf_abcdefghij"),
    ('SG = "SG.abcdefghijklmnopqrstuv.abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG"', "SG.abcdefghij"),
    ('sid = "SK0123456789abcdef0123456789abcdef"', "SK0123456789abcdef"),
    ('gl = "glpat-abcdefghij1234567890"', "glpat-abcdefghij"),
])
def test_more_secret_variants_are_redacted(text: str, secret: str) -> None:
    out, count = redact_secrets(text, file_type="js")
    assert secret not in out and count >= 1 and out.count("\n") == text.count("\n")


@pytest.mark.parametrize("text", [
    'const port = process.env.PORT || "8080";',
    'host = os.getenv("HOST", "localhost")',
    'const s = process.env.JWT_SECRET || "";',
    '"Authorization": "Basic <credentials>"',
    "headers: { Authorization: `Token ${token}` }",
    'level = os.environ.get("LOG_LEVEL", "info")',
])
def test_ordinary_env_defaults_and_header_templates_stay(text: str) -> None:
    assert redact_secrets(text, file_type="js") == (text, 0)


# -- the free-text redactor on prose (questions, the "asked:" line) ---------------------------------

@pytest.mark.parametrize("text", [
    "How does the token budget work?",
    "The token counter works and Basic authentication is used; see Token budget handling.",
    'SECRET_QUESTION = "why does it fail"',
    "token=xyz",
])
def test_redact_text_leaves_prose_alone(text: str) -> None:
    from rag.secrets import redact_text

    assert redact_text(text) == (text, 0)


@pytest.mark.parametrize("text, secret", [
    ("postgresql://:secretpw@host/db", "secretpw"),
    ("redis://:secretpw@cache:6379", "secretpw"),
    ("https://u:sec@ret@host/x", "sec@ret"),
    ("why does login fail with password=hunter2 on staging?", "hunter2"),
    ("Authorization: Bearer eyJhbGciOi.x.y", "eyJhbGciOi"),
    ("SESSION_KEY=prod-secret-123 in logs", "prod-secret-123"),
])
def test_redact_text_removes_credentials_in_prose(text: str, secret: str) -> None:
    from rag.secrets import redact_text

    out, count = redact_text(text)
    assert secret not in out and "ret@host" not in out.replace("[REDACTED]@host", "") and count >= 1


def test_the_copied_denylists_equal_the_installed_detect_secrets_plugins() -> None:
    # rag.secrets keeps the plugins' patterns so that indexing never imports detect-secrets' scanner;
    # an upgrade that changes a plugin's denylist fails here until the copy follows it.
    import importlib

    from rag.secrets import DETECT_SECRETS_DENYLISTS

    modules = {"SlackDetector": "slack", "OpenAIDetector": "openai", "GitHubTokenDetector": "github_token",
               "AWSKeyDetector": "aws", "StripeDetector": "stripe", "BasicAuthDetector": "basic_auth"}
    assert set(DETECT_SECRETS_DENYLISTS) == set(modules)
    for name, module in modules.items():
        plugin = getattr(importlib.import_module(f"detect_secrets.plugins.{module}"), name)
        assert [(p.pattern, p.flags) for p in DETECT_SECRETS_DENYLISTS[name]] == \
            [(p.pattern, p.flags) for p in plugin.denylist], name


JWT_SAMPLES = [
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOi.abc", "eyJhbGciOiJIUzI1NiJ9.e.abc", "eyJub3QganNvbg.eyJhIjoxfQ.x",
    "eyJhIjoxfQ.eyJhIjoxfQ.!!", "eyJhIjoxfQ", "eyJhIjoxfQ.eyJhIjoxfQ.abcde", "eyJ\u00e9.eyJhIjoxfQ.x",
    "eyJhIjoxfQ.eyJhIjoxfQ.eyJhIjoxfQ.extra", "eyJhIjoxfQ.eyJhIjoxfQ.abc", "eyJhIjoxfQ.eyJhIjoxfQ.a-_",
    "eyJhIjoxfQ.eyJhIjoxfQ.a", "eyJhIjoxfQ.eyJhIjoxfQ.ab", "eyJhIjoxfQ.eyJhIjoxfQ.a%c",
]


@pytest.mark.parametrize("token", JWT_SAMPLES)
def test_the_copied_jwt_check_agrees_with_detect_secrets(token: str) -> None:
    from detect_secrets.plugins.jwt import JwtTokenDetector

    from rag.secrets import jwt_formally_valid

    assert jwt_formally_valid(token) == JwtTokenDetector.is_formally_valid(token)


def test_a_jwt_nested_past_the_json_decoders_limit_is_redacted_without_recursion_error() -> None:
    import base64

    def part(raw: str) -> str:
        return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")

    token = part('{"a":' + "[" * 5000 + "1" + "]" * 5000 + "}") + "." + part('{"sub":"x"}') + ".c2ln"
    text, count = redact_secrets(f"const t = '{token}';\n", file_type="js")
    assert (text, count) == (f"const t = '{REDACTED}';\n", 1)


def test_redacting_imports_no_detect_secrets() -> None:
    import subprocess
    import sys

    jwt = JWT_SAMPLES[0]
    code = ("import sys; from rag.secrets import redact_secrets; "
            f"redact_secrets('password = \"hunter2hunter2\"\\nkey = \"AKIAIOSFODNN7EXAMPLE\"\\nt = \"{jwt}\"\\n'); "
            "print('detect_secrets' in sys.modules, 'requests' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split() == ["False", "False"]


# -- bare values inside a line of a non-code file (found by a new user's check) ----------------------
# Before: only a value alone on its line after a key starting it counted, so a secret in prose, after
# Dockerfile's ENV, as a command's env prefix or inside a quoted header reached the index verbatim.

@pytest.mark.parametrize("text, file_type, secret", [
    ("Before deploying, set AWS_SECRET_ACCESS_KEY=Zq8vN2rT5yW1xK4mP7sL0aB3cD6eF9gH2jK5nQ8t in your shell.", "md",
     "Zq8vN2rT5yW1xK4mP7sL0aB3cD6eF9gH2jK5nQ8t"),
    ("FROM node:20\nENV DB_PASSWORD=DockerfilePassw0rd2\n", "dockerfile", "DockerfilePassw0rd2"),
    ("ARG NPM_TOKEN=npmtok3nValue99\n", "dockerfile", "npmtok3nValue99"),
    ("#!/bin/sh\nUPLOADER_TOKEN=abc123def456ghi789 node uploader.js\n", "sh", "abc123def456ghi789"),
    ('curl -H "X-Api-Key: 9f8e7d6c5b4a39281706f5e4d3c2b1a0" https://api.example.com/upload\n', "sh",
     "9f8e7d6c5b4a39281706f5e4d3c2b1a0"),
    ("Use `password: Tr0ub4dor3xyzW` for the staging box.\n", "md", "Tr0ub4dor3xyzW"),
    ("The staging secret=Kq2w8Zr5, rotated monthly.\n", "md", "Kq2w8Zr5"),
    ('{"auths": {"registry.example.com": {"auth": "Ym9iOkRvY2tlclBhc3N3MHJkNQ=="}}}\n', "json",
     "Ym9iOkRvY2tlclBhc3N3MHJkNQ"),
    ("mysql -u root -pS3cr3tPassw0rd app\n", "sh", "S3cr3tPassw0rd"),
    ("mysqldump -h db -u app -phunter2 shop > dump.sql\n", "md", "hunter2"),
])
def test_secret_values_inside_a_line_are_redacted(text: str, file_type: str, secret: str) -> None:
    out, count = redact_secrets(text, file_type=file_type)
    assert secret not in out and count == 1
    assert out.count("\n") == text.count("\n")


@pytest.mark.parametrize("text", [
    "Set `apiKey: process.env.API_KEY` in the config.",
    "The session token: see below for how it is refreshed.",
    "Pass a token=YOUR_TOKEN_HERE argument, e.g. token=<token>.",
    "export GITHUB_TOKEN=$(gh auth token) && npm publish",
    "The cacheKey=abc12345 entry is derived from the path.",
    "A password: 12345678 is rejected by the validator.",
    "Set SECRET_KEY=changeme123 only in development.",
    '"auth": "basic"',
    '"auth": "dXNlcm5hbWU="',
    "Run mysql -u root -p to be asked for the password.",
    "mysql -u root -p$MYSQL_PASSWORD app",
])
def test_secret_words_in_prose_without_a_credential_stay(text: str) -> None:
    assert redact_secrets(text, file_type="md") == (text, 0)


# -- the free-text redactor: forms a new user's check found (questions, answers, documents) ----------

AWS_LIKE = "Zq8vN2rT5yW1xK4mP7sL0aB3cD6eF9gH2jK5nQ8t"


@pytest.mark.parametrize("text, secret", [
    (f"aws configure set aws_secret_access_key {AWS_LIKE}", AWS_LIKE),
    (f"deploy --secret-key {AWS_LIKE} --region eu-west-1", AWS_LIKE),
    (f"Narwhal secret key: {AWS_LIKE}", AWS_LIKE),
    (f"set AWS_SECRET_ACCESS_KEY to {AWS_LIKE} first", AWS_LIKE),
    ("my password is Hunter2Hunter2xyz, how do I configure routing?", "Hunter2Hunter2xyz"),
    (f"and the aws secret key {AWS_LIKE} how does it work", AWS_LIKE),
    (f"| narwhal AWS secret | {AWS_LIKE} |", AWS_LIKE),
    ("| staging password | `Hunter2Hunter2xyz` | rotated monthly |", "Hunter2Hunter2xyz"),
    ("my password is 'Hunter2Hunter2xyz' for now", "Hunter2Hunter2xyz"),
    ("curl -u admin:hunter2hunter2 https://x.example/api", "hunter2hunter2"),
    ("curl --user deploy:S3cr3tPassw0rd -X POST https://x.example", "S3cr3tPassw0rd"),
])
def test_redact_text_finds_secrets_written_after_their_name_without_an_equals_sign(text, secret):
    from rag.secrets import redact_text

    out, count = redact_text(text)
    assert secret not in out and count == 1, out


@pytest.mark.parametrize("text", [
    "See config/secrets.py:12-30 and src/auth/password.ts:40-55.",
    "The token is refreshed every hour by the scheduler.",
    "Pass the api key to the constructor; the password is hashed with bcrypt.",
    "curl -u $USER:$PASSWORD https://x.example",
    "the secret key is stored in process.env.SECRET_KEY",
    "| `token` | string | The token sent with every request |",
    "| password | `<your-password>` | required |",
    "Pass the token to http2SessionHandler, which checks it.",
    "The api key is validatedBySchema2 before use.",
])
def test_redact_text_leaves_citations_and_prose_about_secrets_alone(text):
    from rag.secrets import redact_text

    assert redact_text(text) == (text, 0)


@pytest.mark.parametrize(("text", "file_type", "secret"), [
    # PHP's configuration constants (WordPress wp-config.php) and setters taking the name and the value
    ("define( 'DB_PASSWORD', 'Xk9mP2vLq8zzW' );\n", "php", "Xk9mP2vLq8zzW"),
    ("define('AUTH_KEY', 'q7#Lp2@Vx9!mK4$zT1&rB8^nC3*');\n", "php", "q7#Lp2@Vx9!mK4$zT1&rB8^nC3*"),
    ('props.setProperty("db.password", "Xk9mP2vLq8zzW");\n', "java", "Xk9mP2vLq8zzW"),
    ('val client = Client(apiKey = "sk_live_4eC39HqLyjWDarjtT1zdp7dc")\n', "kt", "sk_live_4eC39HqLyjWDarjtT1zdp7dc"),
    ("spring.datasource.password=Xk9mP2vLq8zzW\n", "properties", "Xk9mP2vLq8zzW"),
    ('  password = "Xk9mP2vLq8zzW"\n', "tf", "Xk9mP2vLq8zzW"),
])
def test_secrets_in_the_text_only_languages_are_redacted(text: str, file_type: str, secret: str) -> None:
    """Files of C, PHP, Kotlin, Terraform, properties … are indexed as text (rag.ingest.walk): their secrets
    are redacted like any other file's."""
    redacted, count = redact_secrets(text, file_type=file_type)
    assert secret not in redacted and count == 1 and redacted.count("\n") == text.count("\n")


@pytest.mark.parametrize("text", [
    "define( 'AUTH_KEY', 'put your unique phrase here' );\n",        # WordPress's placeholder
    "$hash = hash_hmac(password, 'sha256');\n",                          # a name, then an argument
    "define('DB_PASSWORD', getenv('DB_PASSWORD'));\n",
    't("password", "Password")\n',
    '@pytest.mark.parametrize(("username", "password", "message"), [])\n',   # lists of names
    '"password": {"title": "Password", "type": "string"},\n',
    "redact: ['password', 'creditCard', 'ssn']\n",
])
def test_a_secret_name_followed_by_an_argument_that_is_no_secret_stays(text: str) -> None:
    assert redact_secrets(text, file_type="php") == (text, 0)


@pytest.mark.parametrize(("text", "file_type", "secret"), [
    # a break-it review of the text-only languages found these left in place
    ("db.password=MyPassword123!\n", "properties", "MyPassword123!"),
    ("jwt.secret=mySecretSigningKey2024\n", "properties", "mySecretSigningKey2024"),
    ("keystore.pass=Kst0reP4ssw0rd\n", "properties", "Kst0reP4ssw0rd"),
    ("define('DB_PASSWORD', 'correcthorsebattery');\n", "php", "correcthorsebattery"),
    ("$pass = getenv('DB_PASSWORD') ?: 'Fallb4ckPassw0rd';\n", "php", "Fallb4ckPassw0rd"),
    ('val props = mapOf("user" to "svc", "password" to "KtMapPw_12345a")\n', "kt", "KtMapPw_12345a"),
    ('#define JWT_SECRET "mySecretSigningKey2024"\n', "c", "mySecretSigningKey2024"),
    ('const char api_token[] = "ctok_9a8b7c6d5e4f3a2b1c";\n', "c", "ctok_9a8b7c6d5e4f3a2b1c"),
    ("CREATE USER 'bob'@'localhost' IDENTIFIED BY 'MysqlBobPw77';\n", "sql", "MysqlBobPw77"),
    ("ALTER USER app WITH PASSWORD 'pgS3cretPass';\n", "sql", "pgS3cretPass"),
    ('config :app, AppWeb.Endpoint, secret_key_base: "ExSecretKeyBase_aabbccddeeff00112233"\n', "exs",
     "ExSecretKeyBase_aabbccddeeff00112233"),
])
def test_secrets_the_text_only_languages_write_their_own_way_are_redacted(text, file_type, secret):
    redacted, count = redact_secrets(text, file_type=file_type)
    assert secret not in redacted and count >= 1 and redacted.count("\n") == text.count("\n")


@pytest.mark.parametrize(("text", "file_type"), [
    ("password: passwordField\n", "yml"),                 # an identifier, not a credential
    ('<input type="password" name="password">\n', "html"),
    ("spring.security.user.password-encoder=bcrypt\n", "properties"),
    ("CREATE TABLE users (id int, password_hash text);\n", "sql"),
    ('#define PASSWORD_FIELD "password"\n', "c"),
])
def test_secret_words_in_those_languages_that_hold_no_credential_stay(text, file_type):
    assert redact_secrets(text, file_type=file_type) == (text, 0)
