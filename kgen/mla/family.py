"""A kernel family of the one MLA framework, and what the framework does with one.

A family (dense MLA: kgen.mla.dense; sparse top-k MLA: kgen.mla.sparse.family) supplies its spec
and config types, its layout planner (which refuses what cannot work), its program (the rendered
templates), its kernel type (how a compiled variant is called), the tuning database's shape
bucket and its heuristic default. The framework builds a variant of any family the same way
(here), chooses its config the same way (kgen.mla.choose: the tuning database, then the family's
default), checks its tensors with one checker (kgen.mla.operands) and plans and runs it with one
machinery (kgen.mla.running, kgen.mla.planning). No torch here: building needs none.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

from kgen.arch import Arch, resolve_arch
from kgen.build import build_program
from kgen.render import Program


class PerformanceWarning(UserWarning):
    """The config kgen chose is known to run below what the shape could (it spills)."""


@dataclass(frozen=True, eq=False)
class Family:
    """What one kernel family supplies (eq=False: a family is itself, hashed by identity)."""

    name: str  # the tuning database's entry["family"]
    spec_type: type
    config_type: type
    kernel_type: type  # (spec, config, arch, layout, binary) -> a compiled variant
    layout: Callable  # (spec, config, arch) -> its block layout; ConfigError where refused
    program: Callable  # (spec, config, layout) -> Program
    bucket: Callable[..., str]  # (spec, batch, max_len) -> the tuning database's shape bucket
    # (spec, batch, max_len, arch, sm_count) -> the config where no tuned entry exists
    default: Callable
    # spec fields that shape the launch, not the code: the bucket carries them (rounded), so the
    # tuning database keys a spec without them
    bucket_fields: tuple[str, ...] = ()

    def render(self, spec, config, arch: Arch) -> Program:
        """The program of a variant on `arch` (ConfigError where its layout is refused)."""
        return self.program(spec, config, self.layout(spec, config, arch))

    def check_spec(self, spec) -> None:
        _check_type("spec", spec, self.spec_type)

    def build(self, spec, config, arch: str | Arch = "sm_120"):
        """Compile (or fetch from the cache) one variant for `arch`; no GPU needed unless
        'native'. An unworkable config raises ConfigError before anything is compiled."""
        _check_type("spec", spec, self.spec_type)
        _check_type("config", config, self.config_type)
        return _build(self, spec, config, resolve_arch(arch))


def _check_type(what: str, value, kind: type) -> None:
    if not isinstance(value, kind):
        raise TypeError(f"{what}: expected kgen.mla.{kind.__name__}, got {type(value).__name__}")


@functools.lru_cache(maxsize=1024)
def _build(family: Family, spec, config, arch: Arch):
    layout = family.layout(spec, config, arch)
    binary = build_program(family.program(spec, config, layout), arch)
    return family.kernel_type(spec, config, arch, layout, binary)


def power_of_two_at_least(x: int) -> int:
    """The bucket edge of a size: x rounded up to a power of two (1 for x <= 1)."""
    return 1 << max(0, (max(1, x) - 1).bit_length())
