"""GPU architectures kgen compiles for: per-SM and per-block limits, and the occupancy model."""

from __future__ import annotations

import math
from dataclasses import dataclass

from kgen import device as _device

KB = 1024


@dataclass(frozen=True)
class Occupancy:
    """Theoretical residency of one kernel on one SM, and what limits it."""

    blocks_per_sm: int
    warps_per_sm: int
    fraction: float  # resident warps / max warps per SM
    limiter: str  # "warps" | "registers" | "shared memory" | "blocks" | "does not fit"


@dataclass(frozen=True)
class Arch:
    """The limits of one compute capability (CUDA occupancy calculator figures)."""

    name: str  # "sm_120"
    major: int
    minor: int
    max_threads_per_sm: int
    max_warps_per_sm: int
    max_blocks_per_sm: int
    regs_per_sm: int
    max_regs_per_thread: int
    smem_per_sm: int
    smem_per_block: int  # opt-in maximum for one block (static + dynamic)
    smem_reserved_per_block: int = 1 * KB
    max_threads_per_block: int = 1024
    reg_alloc_unit: int = 256  # registers are handed to warps in chunks of this many
    smem_alloc_unit: int = 128

    @property
    def compute_capability(self) -> tuple[int, int]:
        return (self.major, self.minor)

    @property
    def has_pdl(self) -> bool:
        """Programmatic dependent launch (griddepcontrol): sm_90 and later."""
        return self.compute_capability >= (9, 0)

    @property
    def nvrtc_arch(self) -> str:
        return self.name

    def occupancy(
        self, threads_per_block: int, regs_per_thread: int, smem_per_block: int
    ) -> Occupancy:
        """Blocks of this shape that fit on one SM at once (CUDA's occupancy calculator rules)."""
        warps_per_block = math.ceil(threads_per_block / 32)
        if (
            threads_per_block > self.max_threads_per_block
            or regs_per_thread > self.max_regs_per_thread
            or smem_per_block > self.smem_per_block
        ):
            return Occupancy(0, 0, 0.0, "does not fit")
        limits = {
            "warps": self.max_warps_per_sm // warps_per_block,
            "blocks": self.max_blocks_per_sm,
        }
        if regs_per_thread > 0:
            regs_per_warp = _round_up(regs_per_thread * 32, self.reg_alloc_unit)
            limits["registers"] = (self.regs_per_sm // regs_per_warp) // warps_per_block
        smem = _round_up(smem_per_block + self.smem_reserved_per_block, self.smem_alloc_unit)
        limits["shared memory"] = self.smem_per_sm // smem
        limiter = min(limits, key=lambda k: limits[k])
        blocks = limits[limiter]
        warps = blocks * warps_per_block
        return Occupancy(blocks, warps, warps / self.max_warps_per_sm, limiter)


def _round_up(x: int, unit: int) -> int:
    return -(-x // unit) * unit


def _arch(name: str, threads: int, blocks: int, smem_sm_kb: int, smem_block_kb: int) -> Arch:
    major, minor = divmod(int(name.removeprefix("sm_").rstrip("a")), 10)
    return Arch(
        name=name,
        major=major,
        minor=minor,
        max_threads_per_sm=threads,
        max_warps_per_sm=threads // 32,
        max_blocks_per_sm=blocks,
        regs_per_sm=64 * KB,
        max_regs_per_thread=255,
        smem_per_sm=smem_sm_kb * KB,
        smem_per_block=smem_block_kb * KB,
    )


ARCHS: dict[str, Arch] = {
    a.name: a
    for a in (
        _arch("sm_80", 2048, 32, 164, 163),
        _arch("sm_86", 1536, 16, 100, 99),
        _arch("sm_87", 2048, 32, 164, 163),
        _arch("sm_89", 1536, 24, 100, 99),
        _arch("sm_90", 2048, 32, 228, 227),
        _arch("sm_90a", 2048, 32, 228, 227),
        _arch("sm_100", 2048, 32, 228, 227),
        _arch("sm_100a", 2048, 32, 228, 227),
        _arch("sm_120", 1536, 32, 100, 99),
        _arch("sm_120a", 1536, 32, 100, 99),
    )
}

DEFAULT_ARCH = "sm_120"

# The SM count of the card a default is shown for where none is given (kgen.mla.default_config):
# the arch's usual card. A default's KV splits fill one wave of blocks, so they follow this.
USUAL_SM_COUNT = {
    "sm_80": 108,  # A100
    "sm_86": 84,  # A40, RTX 3090 (82)
    "sm_87": 16,  # Jetson AGX Orin
    "sm_89": 128,  # RTX 4090 (L40S: 142)
    "sm_90": 132,  # H100 SXM, H200
    "sm_100": 148,  # B200
    "sm_120": 188,  # RTX PRO 6000 Blackwell (RTX 5090: 170)
}


def usual_sm_count(arch: Arch) -> int:
    """The SM count of `arch`'s usual card (USUAL_SM_COUNT; the 'a' variants as their base)."""
    return USUAL_SM_COUNT[arch.name.rstrip("a")]


def resolve_arch(arch: str | Arch = DEFAULT_ARCH, device: int | None = None) -> Arch:
    """Look up an arch by name; "native" means the GPU `device` (default: the current one)."""
    if isinstance(arch, Arch):
        return arch
    if arch == "native":
        _device.init()
        major, minor = _device.compute_capability(_device.index_of(device))
        arch = f"sm_{major}{minor}"
    try:
        return ARCHS[arch]
    except KeyError:
        raise ValueError(
            f"arch {arch!r} is not known; expected one of {', '.join(ARCHS)} or 'native'"
        ) from None
