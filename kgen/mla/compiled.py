"""What a compiled variant of either MLA family holds and reports: its spec, config, arch, layout
and binary; the kernel's resources, source and cubin. The families add how it is called."""

from __future__ import annotations

import functools

from kgen.arch import Arch
from kgen.build import Binary
from kgen.resources import Resources


class CompiledKernel:
    """One compiled variant: `source`, `cubin`, `resources` of its entry point ENTRY."""

    ENTRY: str  # the kernel's extern "C" name

    def __init__(self, spec, config, arch: Arch, layout, binary: Binary):
        self.spec, self.config, self.arch, self.layout, self.binary = (
            spec,
            config,
            arch,
            layout,
            binary,
        )

    @functools.cached_property
    def resources(self) -> Resources:
        """The kernel's registers, shared memory, spills and occupancy on its arch."""
        usage = self.binary.usage[self.ENTRY]  # (kgen.build insists on ptxas's report)
        return Resources.of(
            self.ENTRY, usage, self.arch, self.layout.threads, self.layout.dynamic_smem
        )

    @property
    def source(self) -> str:
        return self.binary.program.source

    @property
    def cubin(self) -> bytes:
        return self.binary.cubin

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.spec.short_name()}, {self.config.short_name()}, "
            f"splits={self.config.kv_splits}, {self.arch.name}: {self.resources.summary()})"
        )
