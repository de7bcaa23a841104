"""Helpers shared by the engine, index, retrieval and CLI tests.

``make_sample_repo(dest)`` copies ``tests/fixtures/sample-repo`` and adds the
files that git must not carry (they are ignored by the fixture's own
``.gitignore`` or are secret files), so every walker rule the tests rely on is
exercised on a real tree:

* ``tmp/scratch.js`` and ``src/settings.local.js``: ignored by ``.gitignore``;
* ``src/generated/bundle.js`` (in the fixture): ignored by ``src/.szignore``;
* ``node_modules/leftpad/index.js`` (in the fixture): a skipped directory;
* ``.env``: a secret file, never read;
* ``src/config.js`` and ``config.example``: planted secrets inside allowed files.
"""
from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

__all__ = [
    "SAMPLE_REPO",
    "PLANTED_SECRETS",
    "SECRET_FRAGMENTS",
    "EXCLUDED_MARKERS",
    "make_sample_repo",
    "index_dump",
    "raw_index_bytes",
]

SAMPLE_REPO = Path(__file__).parent / "fixtures" / "sample-repo"

# Secret values planted in files the walker accepts (they must be redacted) and
# in the secret file .env (which must never be read at all).
PLANTED_SECRETS: tuple[str, ...] = (
    "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e",                       # src/config.js  const apiKey = "…"
    "xoxb-2048602951-7302649201-Zq8TfakeR3dacT3dXyZ9w",       # config.example SLACK_BOT_TOKEN=…
    "xoxb-9999999999-8888888888-EnvFileSecretValue1",         # .env (secret file)
)
# Distinctive pieces of those values as they would look after tokenisation
# (the FTS body is lower-cased and split on punctuation and camelCase).
SECRET_FRAGMENTS: tuple[str, ...] = (
    "4f9a8b7c6d5e4f3a2b1c0d9e",
    "2048602951", "7302649201", "zq8tfaker3dact3dxyz9w", "r3dac",
    "9999999999", "8888888888", "envfilesecretvalue1",
)
# Unique words that live only in files the walker must skip.
EXCLUDED_MARKERS: dict[str, str] = {
    "quokkanator": "src/generated/bundle.js",      # .szignore in src/
    "leftpadzilla": "node_modules/leftpad/index.js",
    "scratchwombat": "tmp/scratch.js",             # .gitignore: tmp/
    "localnarwhal": "src/settings.local.js",       # .gitignore: *.local.js
    "envfilesecretvalue1": ".env",
}


def make_sample_repo(dest: Path) -> Path:
    """Copy the sample repository to ``dest`` (must not exist) plus the git-ignored extras."""
    shutil.copytree(SAMPLE_REPO, dest)
    (dest / "tmp").mkdir()
    (dest / "tmp" / "scratch.js").write_text("var scratchwombat = 1;\n", encoding="utf-8")
    (dest / "src" / "settings.local.js").write_text("module.exports = { localnarwhal: true };\n", encoding="utf-8")
    (dest / ".env").write_text(f"SLACK_BOT_TOKEN={PLANTED_SECRETS[2]}\n", encoding="utf-8")
    return dest


def index_dump(index_path: Path) -> dict:
    """Everything a reader can see in an index file, through a separate connection."""
    conn = sqlite3.connect(index_path)
    try:
        return {
            "generation": conn.execute("SELECT value FROM meta WHERE key='generation'").fetchone()[0],
            "files": conn.execute("SELECT path, size, mtime_ns, hash FROM files ORDER BY path").fetchall(),
            "chunks": conn.execute("SELECT id, path, start, end, text FROM chunks ORDER BY id").fetchall(),
            "fts": conn.execute("SELECT rowid, body FROM chunks_fts ORDER BY rowid").fetchall(),
            "images": conn.execute("SELECT path FROM images ORDER BY path").fetchall(),
        }
    finally:
        conn.close()


def raw_index_bytes(index_path: Path) -> bytes:
    """The bytes of the index file and its WAL/SHM companions (free pages included)."""
    data = b""
    for suffix in ("", "-wal", "-shm", "-journal"):
        p = Path(str(index_path) + suffix)
        if p.exists():
            data += p.read_bytes()
    return data
