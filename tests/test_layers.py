"""The package's layering (README "Architecture"): no import circles, and no module imports
from a layer above its own. Every import counts, those inside functions too (a lazy import
is still a dependency); only ``if TYPE_CHECKING:`` imports are left out.

A new module must be placed in ``LAYERS``: the test fails for a module it does not know.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "archive"

# lowest first; a module may import from its own layer and the layers below it
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("foundation", ("archive", "archive.errors", "archive.model", "archive.lines", "archive.readonly",
                    "archive.coverage", "archive.data", "archive.pg.schema",
                    "archive.web", "archive.web.hosts", "archive.web.markup", "archive.web.datasette_import", "archive.hidden_imports", "archive.vendors*")),
    ("core", ("archive.db", "archive.migrations", "archive.migration_set", "archive.migrations_1", "archive.migrations_2", "archive.secrets", "archive.secret_rules", "archive.rows", "archive.sql_dialect", "archive.filters", "archive.query_core", "archive.pricing", "archive.projection", "archive.flush_plan", "archive.identity",
              "archive.unread", "archive.records", "archive.masking", "archive.side_files", "archive.project_roots", "archive.derived", "archive.file_index", "archive.signals", "archive.marks", "archive.semantic",
              "archive.saved_copies")),
    ("ingest", ("archive.ingest*",)),
    ("read and write operations", ("archive.companions", "archive.queries", "archive.thread_view", "archive.render", "archive.emit",
                                   "archive.forget", "archive.stats", "archive.file_touches", "archive.agent_tools",
                                   "archive.store", "archive.push", "archive.pg", "archive.pg.queries", "archive.export",
                                   # the conversation page's reading and blocks: the web page and export draw them
                                   "archive.web.conversation",
                                   "archive.pg.store", "archive.push_marks", "archive.push_side", "archive.semantic_search", "archive.watch")),
    ("surfaces", ("archive.web.*", "archive.datasette_plugin", "archive.serve", "archive.mcp_server")),
    ("command line", ("archive.cli*", "archive.__main__")),
]


def _modules() -> dict[str, tuple[Path, list[str]]]:
    out = {}
    for p in sorted(ROOT.rglob("*.py")):
        parts = list(p.relative_to(ROOT.parent).with_suffix("").parts)
        package = parts[:-1]
        if parts[-1] == "__init__":
            parts = package = parts[:-1]
        out[".".join(parts)] = (p, package)
    return out


def _resolve(name: str, modules: dict) -> str | None:
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _imports(path: Path, package: list[str], modules: dict) -> set[str]:
    tree = ast.parse(path.read_text())
    typing_only = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            typing_only |= {id(n) for n in ast.walk(node)}
    found = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom):
            base = ".".join(package[: len(package) - node.level + 1]) if node.level else ""
            target = ".".join(x for x in (base, node.module or "") if x)
            if not target.startswith("archive"):
                continue
            for alias in node.names:
                full = f"{target}.{alias.name}"
                found.add(_resolve(full if full in modules else target, modules))
        elif isinstance(node, ast.Import):
            found |= {_resolve(a.name, modules) for a in node.names if a.name.startswith("archive")}
    return {m for m in found if m}


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {m: _imports(p, pkg, modules) - {m} for m, (p, pkg) in modules.items()}


def _layer(module: str) -> int | None:
    for n, (_name, patterns) in enumerate(LAYERS):
        for pat in patterns:
            if pat.endswith("*") and (module == pat[:-1].rstrip(".") or module.startswith(pat[:-1])):
                return n
            if module == pat:
                return n
    return None


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_circles():
    assert _cycles(_graph()) == []


def test_every_module_has_a_layer():
    assert [m for m in _graph() if _layer(m) is None] == []


def test_no_module_imports_from_a_layer_above_its_own():
    upward = [
        f"{m} ({LAYERS[_layer(m)][0]}) imports {t} ({LAYERS[_layer(t)][0]})"
        for m, targets in _graph().items() for t in sorted(targets)
        if _layer(m) is not None and _layer(t) is not None and _layer(t) > _layer(m)
    ]  # fmt: skip
    assert upward == []


def test_vendors_import_only_the_model_and_each_other():
    """Adapters are the bottom of the house: they never reach into the archive's machinery
    (they never import sqlite3, sqlite_utils or click either: tests/test_contract.py)."""
    allowed = ("archive.vendors", "archive.model", "archive.errors")
    bad = [f"{m} imports {t}" for m, ts in _graph().items() if m.startswith("archive.vendors")
           for t in ts if not t.startswith(allowed)]  # fmt: skip
    assert bad == []


def test_the_checks_can_fail():
    """The graph sees lazy imports and the cycle finder finds a circle."""
    graph = _graph()
    assert "archive.ingest" in graph["archive.cli"]
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == [["a", "b", "c"]]
    assert _layer("archive.cli_mcp") == len(LAYERS) - 1 and _layer("archive.vendors.pi.parse") == 0
