"""The import graph of svpg/, read with ast (every import statement, also those inside functions and under
``if TYPE_CHECKING``): no circle between modules, the low modules never import a front end, no module
of a subpackage goes up through the top-level ``svpg`` package, the library never imports the studies
(``svpg/studies/``: they import the library), and no module imports a former module name kept for users
(a module that calls ``svpg.deprecation.moved``). ``make lint`` runs this file as a script.

    python tests/core/test_imports.py      # prints every finding, exit status 1 if there is one
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "svpg"
FRONT_ENDS = ("svpg.rl", "svpg.bandits", "svpg.supervised")
#: the modules below the front ends: they may import each other, never a front end or the top-level package
LOW = ("svpg.core", "svpg.envs", "svpg.io", "svpg.seeding", "svpg.stats", "svpg.comparing", "svpg.deprecation")
#: the studies (benchmark, paper grid, ablation, SB3 baselines): they import the library, never the other way
STUDIES = "svpg.studies"
#: the modules outside the studies that may import them: the ``svpg report`` command rebuilds the documents'
#: tables, the benchmark's with the benchmark's own table code and run-folder file names
STUDY_READERS = ("svpg.report", "svpg.report_tables", "svpg.report_quotes")

# Known import circles, as the import (importer, imported) that closes each one; the check ignores these
# imports. Each is owned by whoever works on those files: fix the circle, then delete its entry here (an
# entry whose import is gone fails the check, so the list only shrinks).
KNOWN_CYCLE_IMPORTS = {
    # the results report: its tables and quotes modules import the command's module back
    ("svpg.report_tables", "svpg.report"),
    ("svpg.report_quotes", "svpg.report"),
}
# Known upward imports (``import svpg`` / ``from svpg import envs`` in a subpackage), by module; import the
# submodule instead (``from svpg.envs import make_batched``, ``from svpg.rl import load``), then delete the entry.
KNOWN_UPWARD = {
    "svpg.rl.environments",  # from svpg import envs
    "svpg.rl.export",  # import svpg (svpg.load)
}


def modules(root: Path = PACKAGE) -> dict[str, Path]:
    """{dotted name: file} of every module of the package (a package is its __init__.py)."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imports(name: str, path: Path, known: dict[str, Path]) -> list[tuple[str, int, bool]]:
    """(imported module, line, whether the statement names the top-level package itself) of every svpg
    import in ``path``; ``from a.b import c`` is the module a.b.c when that is one, else a.b."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "svpg" or alias.name.startswith("svpg."):
                    found.append((_owner(alias.name, known), node.lineno, alias.name == "svpg"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            if source != "svpg" and not source.startswith("svpg."):
                continue
            for alias in node.names:
                full = f"{source}.{alias.name}"
                found.append((full if full in known else _owner(source, known), node.lineno, source == "svpg"))
    return found


def former_names(path: Path) -> dict[str, str]:
    """{former module: current module} of every ``moved("former", "current", …)`` call in ``path``."""
    found = {}
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if (
            isinstance(node, ast.Call)
            and getattr(node.func, "id", getattr(node.func, "attr", None)) == "moved"
            and len(node.args) >= 2
            and all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in node.args[:2])
        ):
            found[node.args[0].value] = node.args[1].value
    return found


def _owner(dotted: str, known: dict[str, Path]) -> str:
    while dotted not in known and "." in dotted:
        dotted = dotted.rpartition(".")[0]
    return dotted


def _within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def findings(root: Path = PACKAGE, known_cycles=KNOWN_CYCLE_IMPORTS, known_upward=KNOWN_UPWARD) -> list[str]:
    """Every problem of the import graph of the package at ``root``, one line each (empty when it is clean)."""
    known = modules(root)
    edges = {name: imports(name, path, known) for name, path in known.items()}
    former = {old: new for path in known.values() for old, new in former_names(path).items()}
    problems = []
    graph: dict[str, set[str]] = {name: set() for name in known}
    for name, found in edges.items():
        for target, line, top_level in found:
            if target != name and (name, target) not in known_cycles and target in graph:
                graph[name].add(target)
            where = f"{known[name].relative_to(root.parent)}:{line}"
            if _within(name, LOW) and (_within(target, FRONT_ENDS) or target == "svpg"):
                problems.append(f"{where}: low module {name} imports {target}; a front end may import it, not back")
            if _within(target, (STUDIES,)) and not _within(name, (STUDIES, *STUDY_READERS)):
                problems.append(
                    f"{where}: {name} imports {target}; the studies import the library, not the other way round"
                )
            if target in former and target != name:
                problems.append(
                    f"{where}: {name} imports {target}, a former name kept for users: import {former[target]}"
                )
            if top_level and name.count(".") >= 2 and name not in known_upward:
                problems.append(
                    f"{where}: {name} imports the top-level svpg package; import the submodule it needs directly"
                )
    for component in cycles(graph):
        inside = sorted(
            f"{a} -> {b} ({known[a].relative_to(root.parent)}:{line})"
            for a in component
            for b, line, _ in edges[a]
            if b in component and b != a
        )
        problems.append(f"import circle among {', '.join(component)}: {'; '.join(inside)}")
    for a, b in sorted(known_cycles):
        if a not in edges or all(target != b for target, _, _ in edges[a]):
            problems.append(f"{a} no longer imports {b}: delete it from KNOWN_CYCLE_IMPORTS in tests/core/test_imports.py")
    for name in sorted(known_upward):
        if name not in edges or not any(top for _, _, top in edges[name]):
            problems.append(
                f"{name} no longer imports svpg itself: delete it from KNOWN_UPWARD in tests/core/test_imports.py"
            )
    return problems


def test_the_import_graph_has_no_circles_and_no_upward_imports():
    assert findings() == []


def test_the_check_finds_circles_low_modules_importing_front_ends_upward_imports_and_studies(tmp_path):
    root = tmp_path / "svpg"
    files = {
        "__init__.py": "from svpg.rl import SVPG\n",
        "stats.py": "def f():\n    from svpg.bandits.cli import main  # inside a function: still an import\n",
        "rl/__init__.py": "from svpg.rl.a import SVPG\n",
        "rl/a.py": "from svpg.rl import b\nSVPG = 1\n",
        "rl/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import SVPG\n",
        "rl/c.py": "from svpg import envs\n",
        "bandits/__init__.py": "",
        "bandits/cli.py": "import numpy\n",
        # the studies import the library; a library module that imports a study, or the former name of one, is found
        "studies/__init__.py": "",
        "studies/bench.py": "from svpg.rl import a\nfrom svpg.rl.c import x\n",
        "rl/bench.py": 'from svpg.deprecation import moved\nmoved("svpg.rl.bench", "svpg.studies.bench", globals())\n',
        "rl/d.py": "def f():\n    from svpg.studies.bench import main\n",
        "bandits/e.py": "import svpg.rl.bench\n",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    found = findings(root, known_cycles=set(), known_upward=set())
    assert len(found) == 5, found
    assert any(f.startswith("svpg/stats.py:2: low module svpg.stats imports svpg.bandits.cli") for f in found)
    assert any(f.startswith("svpg/rl/c.py:1: svpg.rl.c imports the top-level svpg package") for f in found)
    assert any(f.startswith("import circle among svpg.rl.a, svpg.rl.b: svpg.rl.a -> svpg.rl.b") for f in found)
    assert ("svpg/rl/d.py:2: svpg.rl.d imports svpg.studies.bench; the studies import the library, "
            "not the other way round") in found
    assert ("svpg/bandits/e.py:1: svpg.bandits.e imports svpg.rl.bench, a former name kept for users: "
            "import svpg.studies.bench") in found
    # a known circle is left out, and an entry whose import is gone is reported
    assert len(findings(root, known_cycles={("svpg.rl.b", "svpg.rl.a")}, known_upward={"svpg.rl.c"})) == 3
    stale = findings(
        root, known_cycles={("svpg.rl.b", "svpg.rl.a"), ("svpg.rl.c", "svpg.rl.a")}, known_upward={"svpg.rl.c"}
    )
    assert (
        stale[-1]
        == "svpg.rl.c no longer imports svpg.rl.a: delete it from KNOWN_CYCLE_IMPORTS in tests/core/test_imports.py"
    )


if __name__ == "__main__":
    lines = findings()
    print("\n".join(lines) if lines else "import graph: no circles, no upward imports, the library imports no study")
    sys.exit(1 if lines else 0)
