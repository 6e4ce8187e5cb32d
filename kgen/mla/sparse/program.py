"""SparseSpec + SparseConfig + layout -> the rendered CUDA program of one sparse MLA variant."""

from __future__ import annotations

import ctypes

from kgen.mla.program import shape_values
from kgen.mla.sparse.layout import SparseLayout
from kgen.mla.sparse.spec import DEQUANTS, KV_FORMATS, SparseConfig, SparseSpec
from kgen.mla.workspace import COMBINE
from kgen.render import CStruct, Program, render_program

TEMPLATE = "mla_sparse/attention.cu.jinja"
ATTENTION = "mla_sparse_attention"
KV_FORMAT_VALUES = {"bf16": 0, "fp8": 1}  # the template's KV_BF16, KV_FP8
DEQUANT_VALUES = {"shared": 0, "registers": 1}  # DEQUANT_SHARED, DEQUANT_REGISTERS
assert set(KV_FORMAT_VALUES) == set(KV_FORMATS) and set(DEQUANT_VALUES) == set(DEQUANTS)


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


PARAMS = CStruct(
    "Params",
    SparseParams,
    (
        ("q", "const T"),
        ("kv", "const unsigned char"),
        ("indices", "const int"),
        ("out", "T"),
        ("lse", "float"),
        ("ws_o", "float"),
        ("ws_lse", "float"),
        ("counters", "int"),
    ),
)


def template_values(spec: SparseSpec, config: SparseConfig, layout: SparseLayout) -> dict:
    """Every value the template binds, as validated Python values (kgen.render makes them C++)."""
    return {
        **shape_values(spec, config, layout.rows, PARAMS),
        "kv_format": KV_FORMAT_VALUES[spec.kv_format],
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
    """The SparseSpec fields that shape the compiled code (topk is a launch parameter)."""
    return {k: v for k, v in spec.to_dict().items() if k != "topk"}


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
