"""The bench harness's knock-outs still edit today's kernels: bench/knockout.py rewrites a rendered
source at text anchors, and an anchor that a template edit moved makes the knock-out stop (or, had
it been a loose match, edit the wrong line). Each knock-out must apply whole to at least one
shipped config's rendered source, and the module's docstring must list exactly the knock-outs it
has. Rendering only: nothing is compiled."""

import importlib
import re
from pathlib import Path

import pytest

from kgen.arch import ARCHS
from kgen.mla import Config, layout_for
from kgen.mla.program import mla_program
from kgen.tune.space import load_grid

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def knockout():
    """bench/knockout.py, bench/ on sys.path only meanwhile (as test_tune.py imports its bench
    modules): its profile.py would hide the standard library's (torch.compile imports cProfile)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(ROOT / "bench"))
        yield importlib.import_module("knockout")


def shipped_programs(knockout) -> dict[str, tuple]:
    """(spec, config, layout, rendered source) of every dense grid case's shipped config."""
    grid = {c.name: c for c in load_grid()}
    programs = {}
    for name, config in knockout.shipped_configs().items():
        if isinstance(config, Config) and name in grid:
            spec = grid[name].spec
            layout = layout_for(spec, config, ARCHS["sm_90"])
            programs[name] = (spec, config, layout, mla_program(spec, config, layout).source)
    return programs


def test_every_knockout_applies_to_a_shipped_config(knockout):
    programs = shipped_programs(knockout)
    assert len(programs) >= 10
    for name, edits in knockout.EDITS.items():
        assert all(anchor != new for anchor, new in edits), f"{name}: an edit changes nothing"
        # a knock-in that edits another's code (knockout.AFTER) is applied after it
        names = [knockout.AFTER[name], name] if name in knockout.AFTER else [name]
        sources = {
            c: knockout.edited(names[:-1])(spec, config, layout).source if names[:-1] else src
            for c, (spec, config, layout, src) in programs.items()
        }
        fits = [c for c, src in sources.items() if all(a in src for a, _ in edits)]
        assert fits, f"knock-out {name!r}: some anchor is in no shipped config's source"
        spec, config, layout, _ = programs[fits[0]]
        program = knockout.edited(names)(spec, config, layout)  # asserts every anchor is found
        assert program.source != sources[fits[0]]
        assert program.name.endswith("_ko_" + "_".join(names))


def test_the_docstring_lists_every_knockout(knockout):
    doc = knockout.__doc__
    listed = set(re.findall(r"^  ([a-z0-9]+(?:, [a-z0-9]+)*)\s", doc, re.MULTILINE))
    names = {n for group in listed for n in group.split(", ")}
    assert names == set(knockout.EDITS), names ^ set(knockout.EDITS)
