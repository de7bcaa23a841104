"""A synthetic JavaScript/TypeScript repository for the load benchmark (``slackzilla bench --load``).

    questions = write_repository(Path("/tmp/repo"), files=2000)    # files on disk, seeded

The benchmark needs a repository of a given size whose full reindex costs what a
real one costs: every file has relative imports (ES modules, ``require`` and, in
TypeScript, typed imports), functions and a class with methods, ``process.env``
reads, and one file in ten an Express router with routes, so walking, chunking,
tree-sitter parsing and the code graph all have real work to do. Areas get a
``README.md`` each. Generation is deterministic for a given ``seed``; the
questions returned name symbols that exist in the files, the way people ask
about a codebase ("How does createInvoice in billing/invoiceStore work?").

It is a benchmark fixture, not a corpus: retrieval quality is never measured on it.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

__all__ = ["DEFAULT_FILES", "DEFAULT_SEED", "write_repository"]

DEFAULT_FILES = 2000
"""Files written by default (the issue's "2,000-file repository")."""
DEFAULT_SEED = 13

_AREAS = ("billing", "auth", "orders", "users", "inventory", "shipping", "search", "reports", "notifications",
          "payments", "catalog", "checkout", "accounts", "audit", "sessions", "webhooks", "metrics", "exports",
          "imports", "pricing", "tax", "returns", "reviews", "media", "uploads", "scheduler", "queue", "cache",
          "config", "gateway", "tenants", "teams", "roles", "billingPlans", "invoices", "ledger", "wallet",
          "coupons", "loyalty", "support")
_NOUNS = ("invoice", "order", "user", "token", "session", "item", "cart", "price", "report", "event", "job",
          "record", "account", "plan", "refund", "receipt", "batch", "entry", "message", "profile", "address",
          "quota", "limit", "policy", "rule", "filter", "page", "cursor", "snapshot", "export")
_ROLES = ("store", "service", "validator", "mapper", "client", "handler", "repository", "formatter", "parser",
          "builder", "cache", "router", "controller", "worker", "policy", "resolver", "loader", "encoder")
_VERBS = ("create", "update", "find", "remove", "validate", "format", "parse", "load", "save", "merge", "apply",
          "compute", "resolve", "refresh", "archive", "schedule", "notify", "export", "import", "sync")


def _camel(*parts: str) -> str:
    return parts[0] + "".join(p[:1].upper() + p[1:] for p in parts[1:])


def _pascal(*parts: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in parts)


@dataclass(frozen=True)
class _Module:
    area: str
    name: str
    ext: str

    @property
    def path(self) -> str:
        return f"src/{self.area}/{self.name}{self.ext}"


def _function(rng: random.Random, name: str, noun: str, env: str, typed: bool) -> list[str]:
    arg = f"{noun}: Record<string, any>" if typed else noun
    opts = "options: { limit?: number; strict?: boolean } = {}" if typed else "options = {}"
    ret = ": Promise<Record<string, any>>" if typed else ""
    body_kind = rng.randrange(3)
    lines = [f"export async function {name}({arg}, {opts}){ret} {{",
             f"  if (!{noun}) {{",
             f"    throw new Error('{name}: a {noun} is required');",
             "  }",
             f"  const limit = options.limit ?? Number(process.env.{env} || {rng.randrange(10, 500)});"]
    if body_kind == 0:
        lines += [f"  const items = ({noun}.items || []).slice(0, limit);",
                  "  const total = items.reduce((sum, item) => sum + (item.amount || 0) * (item.quantity || 1), 0);",
                  f"  return {{ ...{noun}, items, total, updatedAt: Date.now() }};"]
    elif body_kind == 1:
        lines += [f"  const keys = Object.keys({noun}).filter((key) => !key.startsWith('_'));",
                  "  if (options.strict && keys.length > limit) {",
                  f"    throw new RangeError(`{name}: too many fields (${{keys.length}} > ${{limit}})`);",
                  "  }",
                  f"  return Object.fromEntries(keys.map((key) => [key, {noun}[key]]));"]
    else:
        lines += ["  let attempts = 0;",
                  "  while (attempts < 3) {",
                  "    attempts += 1;",
                  f"    const result = await Promise.resolve({{ ok: attempts > 1, {noun} }});",
                  "    if (result.ok) {",
                  "      return { ...result, attempts, limit };",
                  "    }",
                  "  }",
                  f"  return {{ ok: false, {noun}, attempts }};"]
    return lines + ["}", ""]


def _class(rng: random.Random, name: str, noun: str, typed: bool) -> list[str]:
    field = "  private cache = new Map<string, any>();" if typed else ""
    ctor = "  constructor(db: any, logger: any = console) {" if typed else "  constructor(db, logger = console) {"
    lines = [f"export class {name} {{"] + ([field] if field else []) + [
        ctor, "    this.db = db;", "    this.logger = logger;", "  }", "",
        f"  async get{_pascal(noun)}(id{': string' if typed else ''}) {{",
        f"    const row = await this.db.query('SELECT * FROM {noun}s WHERE id = ?', [id]);",
        "    if (!row) {",
        f"      this.logger.warn('{noun} not found', {{ id }});",
        "      return null;",
        "    }",
        "    return row;",
        "  }", "",
        f"  async save{_pascal(noun)}({noun}{': any' if typed else ''}) {{",
        f"    const saved = await this.db.insert('{noun}s', {noun});",
        f"    this.logger.info('{noun} saved', {{ id: saved.id, size: JSON.stringify({noun}).length }});",
        "    return saved;",
        "  }", ""]
    if rng.random() < 0.5:
        lines += [f"  count{_pascal(noun)}s() {{", f"    return this.db.count('{noun}s');", "  }", ""]
    return lines + ["}", ""]


def _router(module: _Module, noun: str, handler: str) -> list[str]:
    base = f"/{module.area.lower()}/{noun}s"
    return ["", "const express = require('express');", "", "const router = express.Router();", "",
            f"router.get('{base}', async (req, res) => {{",
            f"  res.json(await {handler}(req.query));", "});", "",
            f"router.get('{base}/:id', async (req, res) => {{",
            f"  res.json(await {handler}({{ id: req.params.id }}));", "});", "",
            f"router.post('{base}', async (req, res) => {{",
            "  if (!req.body) {", "    return res.status(400).json({ error: 'body required' });", "  }",
            f"  res.status(201).json(await {handler}(req.body));", "});", "",
            "module.exports = router;", ""]


def _relative(src: _Module, dst: _Module) -> str:
    target = dst.name + (".js" if dst.ext == ".js" else "")
    return f"./{target}" if src.area == dst.area else f"../{dst.area}/{target}"


def _module_text(rng: random.Random, module: _Module, others: list[_Module],
                 exported: dict[str, list[str]]) -> tuple[str, list[str]]:
    typed = module.ext == ".ts"
    noun = rng.choice(_NOUNS)
    env = f"{module.area.upper()}_{noun.upper()}_LIMIT"
    names = list(dict.fromkeys(_camel(rng.choice(_VERBS), noun + suffix)
                               for suffix in rng.sample(("", "s", "Batch", "Entry", "Record", "Async"), 5)))
    lines = [f"// {module.path}: the {noun} {module.name} of the {module.area} area.", ""]
    for dep in rng.sample(others, min(len(others), rng.randrange(2, 5))):
        symbol = rng.choice(exported.get(dep.path) or ["default"])
        if typed or rng.random() < 0.5:
            lines.append(f"import {{ {symbol} }} from '{_relative(module, dep)}';")
        else:
            lines.append(f"const {{ {symbol} }} = require('{_relative(module, dep)}');")
    lines += ["", f"const FEATURE_FLAG = process.env.{module.area.upper()}_FEATURE === 'on';", ""]
    for name in names:
        lines += _function(rng, name, noun, env, typed)
    class_name = _pascal(module.name)
    lines += _class(rng, class_name, noun, typed)
    lines += [f"export const {_camel(module.name, 'defaults')} = {{ enabled: FEATURE_FLAG, limit: "
              f"{rng.randrange(5, 200)} }};", ""]
    if rng.random() < 0.1 and not typed:
        lines += _router(module, noun, names[0])
    return "\n".join(lines), names + [class_name]


def _readme(area: str, modules: list[_Module]) -> str:
    listed = "\n".join(f"- `{m.path}`: the {m.name} of {area}." for m in modules[:30])
    return (f"# The {area} area\n\nThe {area} modules keep their data in the shared database and read their "
            f"limits from `{area.upper()}_*` environment variables.\n\n## Modules\n\n{listed}\n")


def write_repository(root: Path, *, files: int = DEFAULT_FILES, seed: int = DEFAULT_SEED) -> list[str]:
    """Write a repository of exactly ``files`` files under ``root`` (created; must be empty or absent).

    Args:
        root: the folder to write.
        files: how many files (≥ 1): one ``README.md`` per area used, the rest
            ``.js`` (two in three) and ``.ts`` modules of about 100-130 lines.
        seed: the generator's seed (same seed, same files).

    Returns:
        Questions about symbols that exist in the files (one per module, shuffled).

    Raises:
        ValueError: ``files`` < 1, or ``root`` exists and is not an empty folder.
    """
    if files < 1:
        raise ValueError(f"files must be at least 1, got {files}")
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise ValueError(f"{root} exists and is not an empty folder")
    rng = random.Random(seed)
    areas = list(_AREAS[:max(1, min(len(_AREAS), files // 50))])
    readmes = len(areas) if files > len(areas) else 0
    modules: list[_Module] = []
    seen: set[str] = set()
    while len(modules) < files - readmes:
        area = areas[len(modules) % len(areas)]
        name = _camel(rng.choice(_NOUNS), rng.choice(_ROLES))
        module = _Module(area, name, ".ts" if rng.random() < 1 / 3 else ".js")
        if f"{area}/{name}" in seen:
            name = f"{name}{len(modules)}"
            module = _Module(area, name, module.ext)
        seen.add(f"{area}/{name}")
        modules.append(module)
    exported: dict[str, list[str]] = {}
    questions: list[str] = []
    for index, module in enumerate(modules):
        others = modules[max(0, index - 40):index] or modules[index + 1:index + 5]
        text, names = _module_text(rng, module, others, exported)
        exported[module.path] = names
        path = root / module.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        questions.append(f"How does {names[0]} in {module.area}/{module.name} work?")
    if readmes:
        for area in areas:
            (root / "src" / area / "README.md").write_text(_readme(area, [m for m in modules if m.area == area]),
                                                           encoding="utf-8")
    rng.shuffle(questions)
    return questions
