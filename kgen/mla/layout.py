"""How a (Spec, Config) pair maps onto a thread block, and whether it can work on an arch.

Everything the template needs beyond Spec and Config is derived here, once; `layout_for` refuses a
combination that cannot work (with the field and the reason) before anything is compiled. Each
compute path plans its own block (fma_layout, mma_layout, tiled_layout) on the shared rules
(layout_rules).
"""

from __future__ import annotations

from kgen.arch import Arch
from kgen.mla.fma_layout import Layout, plan_fma
from kgen.mla.layout_rules import ConfigError
from kgen.mla.mma_layout import MMALayout, plan_mma
from kgen.mla.spec import Config, Spec
from kgen.mla.tiled_layout import TiledLayout, plan_tiled

__all__ = ["ConfigError", "Layout", "MMALayout", "TiledLayout", "layout_for"]


def layout_for(spec: Spec, config: Config, arch: Arch) -> Layout | MMALayout | TiledLayout:
    """The block layout of this variant on `arch` (a Layout for compute='fma', an MMALayout for
    'mma', a TiledLayout for 'tiled'), or ConfigError saying why it cannot work. A register
    estimate over the arch's limit is not a refusal: ptxas may do better, and spills are
    reported, not forbidden."""
    if config.compute == "mma":
        return plan_mma(spec, config, arch)
    if config.compute == "tiled":
        return plan_tiled(spec, config, arch)
    return plan_fma(spec, config, arch)
