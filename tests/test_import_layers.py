"""No import circle in ``replay/`` and ``analysis/``, and no import back up the documented layers
(issue 27 item 2).

The graph is read from the source with ``ast`` (nothing is imported, so it takes well under a
second): one arrow per module an ``import`` or ``from … import`` statement names, wherever the
statement is — at module level, under ``if TYPE_CHECKING:`` and inside a function (a lazy import
is a dependency too, only a later one). ``from a.b import c`` names ``a.b``, and ``a.b.c`` too when
that is a module; relative imports are resolved. Not arrows: a package's ``__init__`` that Python
runs before one of its submodules (it is not named), and ``importlib`` calls (not statements).

The layers are read from ``docs/architecture.md`` (the ``text`` block under "## Import layers"),
so the documented layering is the one checked. Each line is ``name: pattern …``, top layer first;
``a.b`` is that module, ``a.b.*`` the package and everything under it; a module takes the layer of
its most specific pattern. An arrow may go to its own layer or one below, never above.

Every lazy import says why it is lazy: a ``#`` comment on its lines or directly above it.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("replay", "analysis")


@dataclass(frozen=True, slots=True)
class Arrow:
    """``source`` imports ``target`` at ``path:line``."""

    source: str
    target: str
    path: str
    line: int
    lazy: bool


def modules(root: Path) -> dict[str, Path]:
    """Module name → file, for every module of ``PACKAGES`` under ``root``."""
    out = {}
    for pkg in PACKAGES:
        for path in sorted((root / pkg).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def _named(node: ast.Import | ast.ImportFrom, module: str, is_package: bool,
           known: dict[str, Path]) -> Iterator[str]:
    """The project modules an import statement names."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        if node.level:
            base = module.split(".") if is_package else module.split(".")[:-1]
            base = base[:len(base) - node.level + 1]
            source = ".".join([*base, *([node.module] if node.module else [])])
        else:
            source = node.module or ""
        names = [source, *(f"{source}.{a.name}" for a in node.names
                           if f"{source}.{a.name}" in known)]
    for name in names:
        while name not in known and "." in name:
            name = name.rsplit(".", 1)[0]
        if name in known:
            yield name


def _lazy_imports(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    for func in ast.walk(tree):
        if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(func):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    yield node


def arrows(root: Path) -> tuple[list[Arrow], list[str]]:
    """Every arrow between project modules, and every lazy import without a comment."""
    known = modules(root)
    out: list[Arrow] = []
    unexplained: list[str] = []
    for module, path in known.items():
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text, filename=str(path))
        lazy = {id(n) for n in _lazy_imports(tree)}
        lines = text.splitlines()
        rel = path.relative_to(root).as_posix()
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            is_lazy = id(node) in lazy
            if is_lazy and not _explained(node, lines, tree):
                unexplained.append(f"{rel}:{node.lineno}: {lines[node.lineno - 1].strip()}")
            for target in _named(node, module, path.name == "__init__.py", known):
                if target != module:
                    out.append(Arrow(module, target, rel, node.lineno, is_lazy))
    return out, unexplained


def _explained(node: ast.stmt, lines: list[str], tree: ast.Module) -> bool:
    """A comment on the import's lines, or on the lines directly above it (through a run of
    consecutive import statements sharing one comment)."""
    starts = {n.lineno: n.end_lineno or n.lineno for n in ast.walk(tree)
              if isinstance(n, (ast.Import, ast.ImportFrom))}
    first, last = node.lineno, node.end_lineno or node.lineno
    if any("#" in lines[i - 1] for i in range(first, last + 1)):
        return True
    i = first - 1
    while i >= 1:
        line = lines[i - 1].strip()
        if line.startswith("#"):
            return True
        ends_here = [s for s, e in starts.items() if e == i]
        if not ends_here:
            return False
        block = range(min(ends_here), i + 1)
        if any("#" in lines[j - 1] for j in block):
            return True
        i = min(ends_here) - 1
    return False


def layers(doc: str) -> list[tuple[str, tuple[str, ...]]]:
    """(name, patterns) per layer, bottom first, from the architecture document."""
    m = re.search(r"^## Import layers\n.*?```text\n(.*?)```", doc, re.DOTALL | re.MULTILINE)
    assert m, "docs/architecture.md has no ```text block under '## Import layers'"
    out = []
    for line in m.group(1).splitlines():
        if line.strip():
            name, _, patterns = line.partition(":")
            out.append((name.strip(), tuple(patterns.split())))
    return out[::-1]


def layer_of(module: str, table: list[tuple[str, tuple[str, ...]]]) -> int | None:
    """The index of the layer whose most specific pattern matches ``module`` (None: none)."""
    best: tuple[int, int, int] | None = None  # (specificity, exact, layer)
    for index, (_, patterns) in enumerate(table):
        for pattern in patterns:
            if pattern.endswith(".*"):
                base = pattern[:-2]
                if module == base or module.startswith(base + "."):
                    key = (base.count(".") + 1, 0, index)
                    best = key if best is None or key[:2] > best[:2] else best
            elif module == pattern:
                key = (pattern.count(".") + 1, 1, index)
                best = key if best is None or key[:2] > best[:2] else best
    return None if best is None else best[2]


def cycles(graph: list[Arrow]) -> list[list[Arrow]]:
    """One circle per strongly connected component of more than one module (Tarjan's SCCs,
    iterative), as the arrows that go round it."""
    succ: dict[str, dict[str, Arrow]] = {}
    for a in graph:
        succ.setdefault(a.source, {}).setdefault(a.target, a)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []
    for start in sorted(succ):
        if start in index:
            continue
        work = [(start, iter(sorted(succ.get(start, {}))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(succ.get(w, {})))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = set()
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.add(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    components.append(comp)
    return [_circle(comp, succ) for comp in components]


def _circle(comp: set[str], succ: dict[str, dict[str, Arrow]]) -> list[Arrow]:
    """A shortest circle through the component's first module (breadth first)."""
    start = min(comp)
    came: dict[str, Arrow] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w, arrow in sorted(succ.get(v, {}).items()):
                if w == start:
                    path = [arrow]
                    while path[0].source != start:
                        path.insert(0, came[path[0].source])
                    return path
                if w in comp and w not in came:
                    came[w] = arrow
                    nxt.append(w)
        frontier = nxt
    raise AssertionError(f"no circle in {comp}")


def _chain(path: list[Arrow]) -> str:
    return path[0].source + "".join(
        f"\n    → {a.target}  ({a.path}:{a.line}{', lazy' if a.lazy else ''})" for a in path)


def problems(root: Path) -> list[str]:
    """Every circle, arrow back up, module in no layer and unexplained lazy import."""
    graph, unexplained = arrows(root)
    table = layers((root / "docs" / "architecture.md").read_text(encoding="utf-8"))
    out = [f"import circle: {_chain(c)}" for c in cycles(graph)]
    placed = {m: layer_of(m, table) for m in modules(root)}
    out += [f"{m} is in no layer of docs/architecture.md (## Import layers)"
            for m, layer in placed.items() if layer is None]
    for a in graph:
        src, dst = placed[a.source], placed[a.target]
        if src is not None and dst is not None and dst > src:
            out.append(f"import back up the layers: {a.source} ({table[src][0]}) → {a.target} "
                       f"({table[dst][0]})  ({a.path}:{a.line}{', lazy' if a.lazy else ''})")
    out += [f"lazy import without a comment saying why: {u}" for u in unexplained]
    return out


def test_no_import_circle_and_no_import_back_up_the_layers() -> None:
    found = problems(REPO)
    assert not found, "\n".join(found)


def _tree(root: Path, files: dict[str, str], layers_text: str) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (root / "analysis").mkdir(exist_ok=True)
    (root / "analysis" / "__init__.py").write_text("")
    (root / "docs").mkdir()
    (root / "docs" / "architecture.md").write_text(
        f"# x\n\n## Import layers\n\nTop first.\n\n```text\n{layers_text}```\n")
    return root


LAYERS = "cli: replay.cli.*\nengine: replay.engine.*\nbase: replay analysis.*\n"


def test_the_check_names_an_arrow_back_up_and_a_circle_with_their_chain(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "replay/__init__.py": "",
        "replay/engine/__init__.py": "",
        "replay/engine/fold.py": "def f():\n    from replay.cli import app\n    return app\n",
        "replay/engine/a.py": "from replay.engine import b\n",
        "replay/engine/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                              "    from replay.engine.a import X\n",
        "replay/cli/__init__.py": "from replay.engine.fold import f\napp = f\n",
    }, LAYERS)
    found = problems(root)
    assert ("import back up the layers: replay.engine.fold (engine) → replay.cli (cli)  "
            "(replay/engine/fold.py:2, lazy)") in found
    assert ("import circle: replay.cli\n    → replay.engine.fold  (replay/cli/__init__.py:1)\n"
            "    → replay.cli  (replay/engine/fold.py:2, lazy)") in found
    assert ("import circle: replay.engine.a\n    → replay.engine.b  (replay/engine/a.py:1)\n"
            "    → replay.engine.a  (replay/engine/b.py:3)") in found
    assert ("lazy import without a comment saying why: replay/engine/fold.py:2: "
            "from replay.cli import app") in found
    assert len(found) == 4, found


def test_a_commented_lazy_import_down_the_layers_is_fine(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "replay/__init__.py": "",
        "replay/cli/__init__.py": "def f():\n    # pandas is slow to import: only this command\n"
                                  "    from replay.engine import fold\n"
                                  "    from replay.engine.fold import g\n    return fold, g\n",
        "replay/engine/__init__.py": "",
        "replay/engine/fold.py": "from . import __name__ as n\ng = n\n",
    }, LAYERS)
    assert problems(root) == []


def test_a_module_in_no_layer_is_named(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"replay/__init__.py": "", "replay/new.py": ""},
                 "engine: replay.engine.*\nbase: replay analysis\n")
    assert problems(root) == [
        "replay.new is in no layer of docs/architecture.md (## Import layers)"]


@pytest.mark.parametrize(("module", "layer"), [
    ("replay.ingest", "run model"), ("replay.ingest.schema", "run model"),
    ("replay.ingest.batch", "ingest"), ("replay.ingest.parsers.codex", "parsers"),
    ("replay.engine.tiers.trim", "engine"), ("replay.cli.app", "cli"),
    ("analysis.sweep.core", "sweep"), ("analysis.metric_spec", "declarations"),
])
def test_the_documented_layers_place_modules_by_their_most_specific_pattern(
        module: str, layer: str) -> None:
    table = layers((REPO / "docs" / "architecture.md").read_text(encoding="utf-8"))
    index = layer_of(module, table)
    assert index is not None and table[index][0] == layer
