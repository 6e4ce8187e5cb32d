"""Imports flow one way: core (kgen/*.py) -> family (kgen/mla) -> tuner (kgen/tune), with no
circle anywhere; read from the source (every import, at the top or inside a function)."""

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
            # `from package import module` needs the module, not what the package's __init__
            # gathers; any other name comes from the package itself
            names = {f"{node.module}.{a.name}" for a in node.names}
            modules = {n for n in names if _is_module(n)}
            found |= modules
            if names - modules:
                found.add(node.module)
    return found


def _is_module(name: str) -> bool:
    path = KGEN.parent.joinpath(*name.split("."))
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


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
    assert "kgen.mla.choose" in GRAPH["kgen.mla.planning"]
    assert "kgen.device" in GRAPH["kgen.arch"]


# The machinery every MLA family shares: a family's record and its build, the input checker, the
# runner and its fast path, the workspace, a compiled kernel.
FRAMEWORK = {
    "kgen.mla.family",
    "kgen.mla.operands",
    "kgen.mla.running",
    "kgen.mla.fastpath",
    "kgen.mla.workspace",
    "kgen.mla.compiled",
}


def test_the_framework_imports_no_family():
    """A family plugs into the framework; the framework never reaches into a family (its spec,
    layout, program or inputs), so a new family changes no framework module."""
    assert set(GRAPH) >= FRAMEWORK
    leaks = sorted(
        f"{module} imports {known(target)}"
        for module in FRAMEWORK
        for target in GRAPH[module]
        if layer(known(target)) == 1 and known(target) not in FRAMEWORK
    )
    assert not leaks, leaks


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


def test_no_circle_anywhere():
    """No import circle in any package of kgen, imports inside functions included."""
    graph = {m: {known(t) for t in ts} - {m} for m, ts in GRAPH.items() if m not in ENTRY_POINTS}
    done: set[str] = set()

    def visit(module: str, path: tuple[str, ...]) -> None:
        assert module not in path, " -> ".join((*path, module))
        if module in done:
            return
        for target in graph.get(module, ()):
            visit(target, (*path, module))
        done.add(module)

    for module in graph:
        visit(module, ())


def test_a_circle_would_be_seen(monkeypatch):
    """The circle check reads lazy imports too: a function-level import that closes a circle
    (layout_rules importing the dispatcher that imports it) is found."""
    assert "kgen.mla.layout_rules" in GRAPH["kgen.mla.mma_layout"]
    monkeypatch.setitem(
        GRAPH, "kgen.mla.layout_rules", GRAPH["kgen.mla.layout_rules"] | {"kgen.mla.layout"}
    )
    try:
        test_no_circle_anywhere()
    except AssertionError as circle:
        assert "kgen.mla.layout" in str(circle)
    else:
        raise AssertionError("the circle was not seen")


def test_no_module_imports_another_modules_private_names():
    private = sorted(
        f"{module_name(path)} imports {node.module}.{alias.name}"
        for path in KGEN.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("kgen")
        for alias in node.names
        if alias.name.startswith("_") and not alias.name.startswith("__")
    )
    assert not private, private
