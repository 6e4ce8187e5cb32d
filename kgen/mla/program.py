"""Spec + Config + Layout -> the rendered CUDA program of one MLA attention variant."""

from __future__ import annotations

import ctypes

from kgen.mla.layout import COMBINE_WARPS, Layout
from kgen.mla.spec import Config, Spec
from kgen.render import CType, Program, render_program

TEMPLATE = "mla/attention.cu.jinja"
ATTENTION, COMBINE = "mla_attention", "mla_combine"
MASK_KINDS = {"none": 0, "causal": 1, "tree": 2}
Q_SOURCES = ("registers", "shared", "global")  # the template's Q_REGISTERS, Q_SHARED, Q_GLOBAL


class KernelParams(ctypes.Structure):
    """The C layout of mla::Params in templates/mla/attention.cuh (checked by a static_assert)."""

    _fields_ = [
        ("q", ctypes.c_void_p),
        ("q_sb", ctypes.c_int64),
        ("q_st", ctypes.c_int64),
        ("q_sh", ctypes.c_int64),
        ("kv", ctypes.c_void_p),
        ("kv_sp", ctypes.c_int64),
        ("kv_sr", ctypes.c_int64),
        ("block_table", ctypes.c_void_p),
        ("bt_sb", ctypes.c_int64),
        ("max_pages", ctypes.c_int32),
        ("num_pages", ctypes.c_int32),
        ("seq_lens", ctypes.c_void_p),
        ("mask", ctypes.c_void_p),
        ("mask_sb", ctypes.c_int64),
        ("out", ctypes.c_void_p),
        ("o_sb", ctypes.c_int64),
        ("o_st", ctypes.c_int64),
        ("o_sh", ctypes.c_int64),
        ("lse", ctypes.c_void_p),
        ("ws_o", ctypes.c_void_p),
        ("ws_lse", ctypes.c_void_p),
        ("scale_log2", ctypes.c_float),
    ]


def template_values(spec: Spec, config: Config, layout: Layout) -> dict:
    """Every value the template binds, as validated Python values (kgen.render makes them C++)."""
    return {
        "dtype": CType.from_dtype(spec.dtype),
        "heads": spec.heads,
        "q_len": spec.q_len,
        "latent_dim": spec.latent_dim,
        "rope_dim": spec.rope_dim,
        "page_size": spec.page_size,
        "mask_kind": MASK_KINDS[spec.mask],
        "heads_per_block": config.heads_per_block,
        "num_warps": config.num_warps,
        "block_n": config.block_n,
        "vec_width": config.vec_width,
        "smem_stages": config.smem_stages,
        "rows": layout.rows,
        "rows_per_warp": layout.rows_per_warp,
        "row_warps": layout.row_warps,
        "pos_groups": layout.pos_groups,
        "q_source": Q_SOURCES.index(layout.q_source),
        "q_smem_bytes": layout.q_smem_bytes,
        "combine_warps": COMBINE_WARPS,
        "params_bytes": ctypes.sizeof(KernelParams),
    }


def compiled_fields(config: Config) -> dict:
    """The Config fields that shape the compiled code (kv_splits is a launch parameter)."""
    return {k: v for k, v in config.to_dict().items() if k != "kv_splits"}


def mla_program(spec: Spec, config: Config, layout: Layout) -> Program:
    return render_program(
        name=f"mla_{spec.short_name()}_{config.short_name()}",
        template=TEMPLATE,
        values=template_values(spec, config, layout),
        entry_points=(ATTENTION, COMBINE),
        meta={"family": "mla", "spec": spec.to_dict(), "config": compiled_fields(config)},
    )
