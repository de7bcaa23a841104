"""CodeGraph.find_symbols scores distinct names through one joined text: the same hits, in the same
order, as scoring every token against every symbol (the seed's definition, kept here as the reference)."""
from __future__ import annotations

import random

from repo_helpers import code_repo_graph

from rag.context.codegraph import FULL_NAME_SCORE, TOKEN_SCORE, CodeGraph, _mentions, question_tokens
from rag.parse.records import Definition, FileStructure


def reference_find_symbols(graph: CodeGraph, question: str, limit: int = 20):
    tokens = question_tokens(question)
    lowered = question.lower()
    hits = []
    for symbol in graph.symbols():
        bare = symbol.name.lstrip("#").lower()
        score = TOKEN_SCORE * sum(1 for token in tokens if token in bare)
        if bare in lowered and _mentions(question, bare):
            score += FULL_NAME_SCORE
        if score > 0:
            hits.append((symbol.path, symbol.name, symbol.line, score))
    hits.sort(key=lambda h: (-h[3], h[0], h[2]))
    return hits[:limit]


def as_tuples(hits):
    return [(h.path, h.name, h.line, h.score) for h in hits]


def synthetic_graph(seed: int = 5) -> CodeGraph:
    rng = random.Random(seed)
    parts = ["get", "user", "users", "store", "create", "invoice", "token", "session", "#private", "load", "pool"]
    structures = {}
    for f in range(60):
        path = f"src/m{f % 7}/file{f}.js"
        definitions = []
        for d in range(rng.randrange(1, 12)):
            name = "".join(p.capitalize() if i else p for i, p in enumerate(rng.sample(parts, rng.randrange(1, 4))))
            definitions.append(Definition(name=name, kind="function", start=d * 3 + 1, end=d * 3 + 2))
        structures[path] = FileStructure(path=path, language="javascript", definitions=definitions)
    return CodeGraph(structures)


QUESTIONS = [
    "where is getUser defined?", "how does the session token store work", "createInvoice", "users users users",
    "Where is #privateLoad?", "pool", "nothing here matches at all", "GET user store create invoice token pool load",
    "tokenSession and getUserStore", "", "a b c",
]


def test_find_symbols_matches_the_reference_on_synthetic_and_fixture_graphs():
    for graph in (synthetic_graph(), synthetic_graph(9), code_repo_graph()):
        for question in QUESTIONS + [" ".join(h.name for h in graph.symbols()[:3])]:
            for limit in (1, 5, 20, 1000):
                assert as_tuples(graph.find_symbols(question, limit=limit)) == \
                    reference_find_symbols(graph, question, limit), (question, limit)


def test_a_token_counts_once_per_name_even_when_it_appears_twice_in_it():
    graph = CodeGraph({"a.js": FileStructure(path="a.js", language="javascript", definitions=[
        Definition(name="userUser", kind="function", start=1, end=2)])})
    [hit] = graph.find_symbols("the user")
    assert hit.score == TOKEN_SCORE
