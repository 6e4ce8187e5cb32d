"""Imports flow one way: core (kgen/*.py) -> family (kgen/mla) -> tuner (kgen/tune), with no
circle inside the core; read from the source (every import, at the top or inside a function)."""

from __future__ import annotations

import ast
from pathlib import Path

KGEN = Path(__file__).resolve().parent.parent / "kgen"
ENTRY_POINTS = {"kgen", "kgen.cli", "kgen.__main__"}  # they may reach every layer


def module_name(path: Path) -> str:
    parts = path.relative_to(KGEN.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def kgen_imports(path: Path) -> set[str]:
    """The kgen modules a file imports (a `from kgen import x` counts as kgen.x)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("kgen")}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("kgen"):
            found.add(node.module)
            if node.module in ("kgen", "kgen.mla", "kgen.tune"):
                found |= {f"{node.module}.{a.name}" for a in node.names}
    return found


GRAPH = {module_name(p): kgen_imports(p) for p in KGEN.rglob("*.py")}


def layer(module: str) -> int:
    if module.startswith("kgen.tune"):
        return 2
    return 1 if module.startswith("kgen.mla") else 0


def known(module: str) -> str:
    """The module itself where it is one, else the package (`kgen.x` naming a variable)."""
    while module not in GRAPH:
        module = module.rsplit(".", 1)[0]
    return module


def test_the_graph_is_read():
    assert "kgen.mla.choose" in GRAPH["kgen.mla.api"]
    assert "kgen.device" in GRAPH["kgen.arch"]


def test_imports_flow_from_core_to_family_to_tuner():
    backwards = sorted(
        f"{module} imports {known(target)}"
        for module, targets in GRAPH.items()
        if module not in ENTRY_POINTS
        for target in targets
        if layer(known(target)) > layer(module)
    )
    assert not backwards, backwards


def test_importing_the_family_does_not_import_the_tuner():
    import subprocess
    import sys

    code = (
        "import sys, kgen.mla; print(sorted(m for m in sys.modules if m.startswith('kgen.tune')))"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=KGEN.parent
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"


def test_no_circle_in_the_core():
    core = {m: {known(t) for t in ts if layer(known(t)) == 0} - {m} for m, ts in GRAPH.items()}
    core = {m: ts for m, ts in core.items() if layer(m) == 0 and m not in ENTRY_POINTS}
    done: set[str] = set()

    def visit(module: str, path: tuple[str, ...]) -> None:
        assert module not in path, " -> ".join((*path, module))
        if module in done:
            return
        for target in core.get(module, ()):
            visit(target, (*path, module))
        done.add(module)

    for module in core:
        visit(module, ())
