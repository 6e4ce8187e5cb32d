"""SparseSpec + SparseConfig + layout -> the rendered CUDA program of one sparse MLA variant."""

from __future__ import annotations

import ctypes

from kgen.mla.kv_format import SCALE_KINDS, SCALES_AT
from kgen.mla.program import shape_values
from kgen.mla.sparse.layout import SparseLayout, run_dims, scale_columns, scaled_tile, stage_row
from kgen.mla.sparse.spec import DEQUANTS, SparseConfig, SparseSpec
from kgen.mla.workspace import COMBINE
from kgen.render import CStruct, Program, render_program

TEMPLATE = "mla_sparse/attention.cu.jinja"
ATTENTION = "mla_sparse_attention"
DEQUANT_VALUES = {"shared": 0, "registers": 1}  # DEQUANT_SHARED, DEQUANT_REGISTERS
SCALE_KIND_VALUES = {"none": 0, "float32": 1, "ue8m0": 2}  # SCALE_NONE, SCALE_F32, SCALE_UE8M0
SCALES_AT_VALUES = {"none": 0, "token": 1, "page": 2}  # SCALES_NONE, SCALES_TOKEN, SCALES_PAGE
assert set(DEQUANT_VALUES) == set(DEQUANTS)
# every place a scale sits but "tensor": the gather reads scales from the cache, and SparseSpec
# refuses a format whose scale is outside it
assert set(SCALE_KIND_VALUES) == set(SCALE_KINDS)
assert set(SCALES_AT_VALUES) == set(SCALES_AT) - {"tensor"}


class SparseParams(ctypes.Structure):
    """mla::Params of the sparse kernel, its one argument (C++ generated from this field list)."""

    _fields_ = [
        ("q", ctypes.c_void_p),  # [B, Q_LEN, HEADS, 576], strides in elements
        ("q_sb", ctypes.c_int64),
        ("q_st", ctypes.c_int64),
        ("q_sh", ctypes.c_int64),
        ("kv", ctypes.c_void_p),  # [pages, PAGE_SIZE, row], strides in bytes
        ("kv_sp", ctypes.c_int64),
        ("kv_sr", ctypes.c_int64),
        ("num_slots", ctypes.c_int64),  # pages * PAGE_SIZE
        ("indices", ctypes.c_void_p),  # int32 [B, Q_LEN, topk], last dim contiguous
        ("idx_sb", ctypes.c_int64),
        ("idx_st", ctypes.c_int64),
        ("topk", ctypes.c_int32),
        ("out", ctypes.c_void_p),  # [B, Q_LEN, HEADS, 512]
        ("o_sb", ctypes.c_int64),
        ("o_st", ctypes.c_int64),
        ("o_sh", ctypes.c_int64),
        ("lse", ctypes.c_void_p),  # float32 [B, Q_LEN, HEADS], contiguous
        ("ws_o", ctypes.c_void_p),  # split partials, see templates/mla/combine.cuh
        ("ws_lse", ctypes.c_void_p),
        ("counters", ctypes.c_void_p),  # [B * Q_LEN, head groups, 4], zero between launches
        ("scale_log2", ctypes.c_float),  # softmax scale * log2(e)
    ]


class V4Params(ctypes.Structure):
    """The V4 op's mla::Params: SparseParams' fields, then its lists' lengths, its sink and its
    second cache (a null pointer: none)."""

    _fields_ = SparseParams._fields_ + [
        ("topk_len", ctypes.c_void_p),  # int32, element (b, t) at b * len_sb + t * len_st
        ("len_sb", ctypes.c_int64),
        ("len_st", ctypes.c_int64),  # 0: one length per sequence
        ("extra_len", ctypes.c_void_p),
        ("extra_len_sb", ctypes.c_int64),
        ("extra_len_st", ctypes.c_int64),
        ("sink", ctypes.c_void_p),  # float32 [HEADS]
        ("extra_kv", ctypes.c_void_p),  # the second cache, as kv
        ("extra_kv_sp", ctypes.c_int64),
        ("extra_kv_sr", ctypes.c_int64),
        ("extra_num_slots", ctypes.c_int64),
        ("extra_indices", ctypes.c_void_p),  # int32 [B, Q_LEN, extra_topk]
        ("extra_idx_sb", ctypes.c_int64),
        ("extra_idx_st", ctypes.c_int64),
        ("extra_topk", ctypes.c_int32),
    ]


_POINTEES = (
    ("q", "const QT"),
    ("kv", "const unsigned char"),
    ("indices", "const int"),
    ("out", "QT"),
    ("lse", "float"),
    ("ws_o", "float"),
    ("ws_lse", "float"),
    ("counters", "int"),
)
PARAMS = CStruct("Params", SparseParams, _POINTEES)
V4_PARAMS = CStruct(
    "Params",
    V4Params,
    (
        *_POINTEES,
        ("topk_len", "const int"),
        ("extra_len", "const int"),
        ("sink", "float"),
        ("extra_kv", "const unsigned char"),
        ("extra_indices", "const int"),
    ),
)


def params_struct(spec: SparseSpec) -> CStruct:
    """The parameter struct of a kernel of `spec`, as the template declares it."""
    return V4_PARAMS if spec.v4_op else PARAMS


def params_type(spec: SparseSpec) -> type[ctypes.Structure]:
    """The parameter struct of a kernel of `spec`, as the host packs it."""
    return params_struct(spec).layout


def format_values(spec: SparseSpec) -> dict:
    """The cache format's row (kgen.mla.kv_format) as the template's constants."""
    fmt = spec.format
    return {
        "e4m3_dims": fmt.e4m3_dims,
        "bf16_dims": fmt.rope_dims,
        "run_dims": run_dims(spec),
        "scaled_tile": scaled_tile(spec),
        "scale_columns": scale_columns(spec),
        "scale_group": fmt.group if fmt.quantized else 1,
        "scale_kind": SCALE_KIND_VALUES[fmt.scale],
        "scales_at": SCALES_AT_VALUES[fmt.scales_at],
        "row_bytes": fmt.row_bytes,
        "scales_offset": fmt.scales_offset,
        "rope_offset": fmt.rope_offset,
        "scale_row_bytes": fmt.scale_row_bytes,
        "fp8_stage_row": stage_row(spec) if fmt.quantized else 0,
    }


def template_values(spec: SparseSpec, config: SparseConfig, layout: SparseLayout) -> dict:
    """Every value the template binds, as validated Python values (kgen.render makes them C++)."""
    return {
        **shape_values(spec, config, layout.rows, params_struct(spec)),
        **format_values(spec),
        "v4_op": spec.v4_op,
        "sink": spec.v4_op,  # templates/mla/combine.cuh: the merge applies the sink
        "extra_page_size": spec.extra_page_size,
        "has_extra": spec.has_extra,
        "gather_bytes": config.gather_bytes,
        "col_groups": config.col_groups,
        "dequant": DEQUANT_VALUES[config.dequant],
        "min_blocks": config.min_blocks,
        "q_in_registers": layout.q_in_registers,
        "smem_bytes": layout.main_smem,
        "pdl_combine": config.merge == "pdl",
        "split_softmax": config.softmax == "split",
    }


def compiled_fields(config: SparseConfig) -> dict:
    """The SparseConfig fields that shape the compiled code (kv_splits is a launch parameter)."""
    return {k: v for k, v in config.to_dict().items() if k != "kv_splits"}


def compiled_spec(spec: SparseSpec) -> dict:
    """The SparseSpec fields that shape the compiled code (topk and extra_topk are launch
    parameters)."""
    return {k: v for k, v in spec.to_dict().items() if k not in ("topk", "extra_topk")}


def sparse_program(spec: SparseSpec, config: SparseConfig, layout: SparseLayout) -> Program:
    return render_program(
        name=f"mla_{spec.short_name()}_{config.short_name()}",
        template=TEMPLATE,
        values=template_values(spec, config, layout),
        entry_points=(ATTENTION, COMBINE) if config.merge == "pdl" else (ATTENTION,),
        meta={
            "family": "mla_sparse",
            "spec": compiled_spec(spec),
            "config": compiled_fields(config),
        },
    )
