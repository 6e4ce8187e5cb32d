"""Spec + Config + layout -> the rendered CUDA program of one MLA attention variant."""

from __future__ import annotations

import ctypes

from kgen.mla.layout import Layout
from kgen.mla.mma_layout import MMALayout
from kgen.mla.spec import Config, Spec
from kgen.mla.tiled_layout import TiledLayout
from kgen.mla.workspace import COMBINE
from kgen.render import CStruct, CType, Program, render_program

TEMPLATES = {
    "fma": "mla/attention.cu.jinja",
    "mma": "mla/mma.cu.jinja",
    "tiled": "mla/tiled.cu.jinja",
}
ATTENTION = "mla_attention"
MASK_KINDS = {"none": 0, "causal": 1, "tree": 2}
Q_SOURCES = ("registers", "shared", "global")  # the template's Q_REGISTERS, Q_SHARED, Q_GLOBAL


class KernelParams(ctypes.Structure):
    """mla::Params, the kernel's one argument. The C++ struct is generated from this field list
    (kgen.render.CStruct), with an offset check per field."""

    _fields_ = [
        ("q", ctypes.c_void_p),  # [B, Q_LEN, HEADS, HEAD_DIM]
        ("q_sb", ctypes.c_int64),
        ("q_st", ctypes.c_int64),
        ("q_sh", ctypes.c_int64),
        ("kv", ctypes.c_void_p),  # [pages, PAGE_SIZE, HEAD_DIM]
        ("kv_sp", ctypes.c_int64),
        ("kv_sr", ctypes.c_int64),
        ("block_table", ctypes.c_void_p),  # [B, max_pages]
        ("bt_sb", ctypes.c_int64),
        ("max_pages", ctypes.c_int32),
        ("num_pages", ctypes.c_int32),
        ("seq_lens", ctypes.c_void_p),  # [B]
        ("mask", ctypes.c_void_p),  # tree: [B or 1, Q_LEN] bit rows
        ("mask_sb", ctypes.c_int64),
        ("out", ctypes.c_void_p),  # [B, Q_LEN, HEADS, LATENT_DIM]
        ("o_sb", ctypes.c_int64),
        ("o_st", ctypes.c_int64),
        ("o_sh", ctypes.c_int64),
        ("lse", ctypes.c_void_p),  # [B, Q_LEN, HEADS]
        ("ws_o", ctypes.c_void_p),  # split-KV partials, see templates/mla/combine.cuh
        ("ws_lse", ctypes.c_void_p),
        (
            "counters",
            ctypes.c_void_p,
        ),  # [B, head groups, combine groups + 1], zero between launches
        ("scale_log2", ctypes.c_float),  # softmax scale * log2(e)
    ]


class FP8KernelParams(ctypes.Structure):
    """mla::Params of a spec with an fp8 cache: KernelParams' fields (kv then points at the
    cache's bytes, strides in bytes), then the tensor scale (a spec whose rows carry their own
    scales leaves it null). Every other spec keeps KernelParams, so its code is unchanged."""

    _fields_ = KernelParams._fields_ + [
        ("k_scale", ctypes.c_void_p),  # float32 [1]: the "fp8_tensor" cache's scale
    ]


_POINTEES = (
    ("q", "const QT"),
    ("block_table", "const int"),
    ("seq_lens", "const int"),
    ("mask", "const unsigned long long"),
    ("out", "QT"),
    ("lse", "float"),
    ("ws_o", "float"),
    ("ws_lse", "float"),
    ("counters", "int"),
)
PARAMS = CStruct("Params", KernelParams, (*_POINTEES[:1], ("kv", "const T"), *_POINTEES[1:]))
FP8_PARAMS = CStruct(
    "Params",
    FP8KernelParams,
    (*_POINTEES, ("kv", "const unsigned char"), ("k_scale", "float")),
)


def params_struct(spec: Spec) -> CStruct:
    """The parameter struct of a kernel of `spec`, as the template declares it."""
    return PARAMS if spec.format is None else FP8_PARAMS


def params_type(spec: Spec) -> type[ctypes.Structure]:
    """The parameter struct of a kernel of `spec`, as the host packs it."""
    return params_struct(spec).layout


def shape_values(spec, config, rows: int, params: CStruct) -> dict:
    """The values every MLA template binds (both families): the op's shape and the block's. `dtype`
    is the type of the kernel's tiles and MMAs, q_dtype q's and out's (the same unless a family
    changes dtype: _op_values)."""
    return {
        "dtype": CType.from_dtype(spec.dtype),
        "q_dtype": CType.from_dtype(spec.dtype),
        "heads": spec.heads,
        "q_len": spec.q_len,
        "latent_dim": spec.latent_dim,
        "rope_dim": spec.rope_dim,
        "page_size": spec.page_size,
        "heads_per_block": config.heads_per_block,
        "num_warps": config.num_warps,
        "block_n": config.block_n,
        "smem_stages": config.smem_stages,
        "rows": rows,
        "params_struct": params,
    }


def _op_values(spec: Spec, config: Config, rows: int) -> dict:
    # A mask that hides nothing ('causal' over one row) renders the decode kernel: the same code,
    # without the draft tiles' loop, whose other tile order would round the result differently.
    mask = "none" if spec.masks_nothing else spec.mask
    return {
        **shape_values(spec, config, rows, params_struct(spec)),
        "dtype": CType.from_dtype(tile_dtype(spec, config)),
        "mask_kind": MASK_KINDS[mask],
        "token_groups": config.token_groups,
        "kv_fp8": spec.format is not None,
        "fragments": spec.fp8_fragments,
        **format_values(spec),
    }


def tile_dtype(spec: Spec, config: Config) -> str:
    """The type of the kernel's tiles and MMAs: q's dtype, except that an fp8 cache read as
    fragments (Spec.fp8_fragments) is multiplied in float16 when q is bfloat16. e4m3 widens to
    float16 in one conversion a pair and to bfloat16 in four (through float32), and q, scaled by a
    power of two a block into float16's range, loses no bit (templates/mla/mma/attention.cuh,
    q_into_t; docs/design-space.md, "fp8 caches")."""
    f16_route = config.compute == "mma" and spec.dtype == "bfloat16" and spec.fp8_fragments
    return "float16" if f16_route else spec.dtype


def format_values(spec: Spec) -> dict:
    """An fp8 cache's row of kgen.mla.kv_format as the mma template's constants (templates/mla/
    mma/fp8_tiles.cuh); none for a cache in q's dtype."""
    fmt = spec.format
    if fmt is None:
        return {}
    return {
        "kv_row_bytes": fmt.row_bytes,
        "e4m3_dims": fmt.e4m3_dims,
        "bf16_dims": fmt.rope_dims,
        "rope_offset": fmt.rope_offset,
        "scale_group": 0 if fmt.tensor_scale else fmt.group,
        "scales_offset": fmt.scales_offset,
    }


def template_values(spec: Spec, config: Config, layout: Layout | MMALayout | TiledLayout) -> dict:
    """Every value the template binds, as validated Python values (kgen.render makes them C++)."""
    values = _op_values(spec, config, layout.rows)
    if isinstance(layout, TiledLayout):
        return {**values, "qk_chunk": layout.qk_chunk, "pdl_combine": config.merge == "pdl"}
    if isinstance(layout, MMALayout):
        return {
            **values,
            "col_groups": layout.col_groups,
            "min_blocks": config.min_blocks,
            "qk_ahead": bool(config.qk_ahead),
            "split_softmax": config.softmax == "split",
            "pdl_combine": config.merge == "pdl",
            "specialize": config.body == "specialized",
            "ring_slack": config.ring_slack,
            "q_register_steps": layout.q_register_steps,
            "smem_bytes": layout.main_smem,
        }
    return {
        **values,
        "vec_width": config.vec_width,
        "rows_per_warp": layout.rows_per_warp,
        "row_warps": layout.row_warps,
        "pos_groups": layout.pos_groups,
        "q_source": Q_SOURCES.index(layout.q_source),
        "q_smem_bytes": layout.q_smem_bytes,
    }


def compiled_fields(config: Config) -> dict:
    """The Config fields that shape the compiled code (kv_splits is a launch parameter)."""
    return {k: v for k, v in config.to_dict().items() if k != "kv_splits"}


def mla_program(spec: Spec, config: Config, layout: Layout | MMALayout | TiledLayout) -> Program:
    return render_program(
        name=f"mla_{spec.short_name()}_{config.short_name()}",
        template=TEMPLATES[config.compute],
        values=template_values(spec, config, layout),
        entry_points=(ATTENTION, COMBINE) if config.merge == "pdl" else (ATTENTION,),
        meta={"family": "mla", "spec": spec.to_dict(), "config": compiled_fields(config)},
    )
