"""What a compiled kernel uses: ptxas's verbose log parsed, and the arch a cubin was built for."""

from __future__ import annotations

import re
import struct
from dataclasses import asdict, dataclass

from kgen.arch import Arch, Occupancy

_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '(sm_\w+)'")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_REGS = re.compile(r"Used (\d+) registers")
_SMEM = re.compile(r"(\d+) bytes smem")


@dataclass(frozen=True)
class FunctionUsage:
    """ptxas's figures for one entry function."""

    registers: int
    static_smem: int
    stack: int
    spill_stores: int
    spill_loads: int


def parse_ptxas_log(log: str) -> dict[str, FunctionUsage]:
    """Entry function name -> its registers, static shared memory, stack and spills."""
    usage: dict[str, FunctionUsage] = {}
    matches = list(_ENTRY.finditer(log))
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(log)
        block = log[match.end() : end]
        frame, regs, smem = _FRAME.search(block), _REGS.search(block), _SMEM.search(block)
        if frame is None or regs is None:
            raise ValueError(f"unrecognised ptxas log for {match.group(1)}:\n{block}")
        usage[match.group(1)] = FunctionUsage(
            registers=int(regs.group(1)),
            static_smem=int(smem.group(1)) if smem else 0,
            stack=int(frame.group(1)),
            spill_stores=int(frame.group(2)),
            spill_loads=int(frame.group(3)),
        )
    return usage


@dataclass(frozen=True)
class Resources:
    """One kernel's launch shape and resource use, with its theoretical occupancy on `arch`."""

    function: str
    arch: str
    threads: int
    registers: int
    static_smem: int
    dynamic_smem: int
    stack: int
    spill_stores: int
    spill_loads: int
    occupancy: Occupancy

    @property
    def smem(self) -> int:
        return self.static_smem + self.dynamic_smem

    @property
    def spills(self) -> int:
        """Spill bytes (stores + loads)."""
        return self.spill_stores + self.spill_loads

    @classmethod
    def of(cls, function: str, usage: FunctionUsage, arch: Arch, threads: int, dynamic_smem: int):
        occupancy = arch.occupancy(threads, usage.registers, usage.static_smem + dynamic_smem)
        return cls(
            function=function,
            arch=arch.name,
            threads=threads,
            dynamic_smem=dynamic_smem,
            occupancy=occupancy,
            **asdict(usage),
        )

    def to_dict(self) -> dict:
        return asdict(self)

    def summary(self) -> str:
        return (
            f"{self.registers} regs, {self.smem} B smem, {self.spills} B spills, "
            f"{self.occupancy.warps_per_sm} warps/SM ({self.occupancy.fraction:.0%}, "
            f"{self.occupancy.limiter})"
        )


def cubin_arch(cubin: bytes) -> str:
    """The SM a cubin's machine code is for, read from its ELF header ("sm_120")."""
    if cubin[:4] != b"\x7fELF":
        raise ValueError("not an ELF cubin")
    abi_version = cubin[8]
    (flags,) = struct.unpack_from("<I", cubin, 0x30)
    sm = (flags >> 8) & 0xFF if abi_version >= 8 else flags & 0xFF
    return f"sm_{sm}"
