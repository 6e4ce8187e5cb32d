"""What a sparse MLA call takes and writes, as Operands (kgen.mla.operands: the one checker and
the runner read them), and the check of every slot in `indices`, which reads them back (a device
sync) and runs with validate=True. Without it a slot out of range gives its query row NaN, and
nothing outside the given tensors is read.
"""

from __future__ import annotations

from kgen.mla.operands import InputError, Limit, Operand, check_operands
from kgen.mla.sparse import fp8
from kgen.mla.sparse.spec import SparseSpec

MAX_TOKENS = 65535  # query tokens (B x T) per launch: the grid's z dimension
ROW_ALIGN = 16  # bytes: q and cache rows are read up to 16 bytes at a time


def operands(spec: SparseSpec) -> tuple[tuple[Operand, ...], tuple[Operand, ...]]:
    """(inputs, outputs) of a call of `spec`: q, kv_cache, indices; out, lse."""
    t, h, d = spec.q_len, spec.heads, spec.head_dim
    if spec.kv_format == "fp8":
        kv_dtype, width = "uint8", fp8.TOKEN_BYTES
        why = "an fp8 cache (kgen.mla.quantize_fp8) for kv_format='fp8'"
    else:
        kv_dtype, width, why = spec.dtype, d, f"a {spec.dtype} cache for kv_format='bf16'"
    inputs = (
        Operand(
            "q",
            spec.dtype,
            ("B", t, h, d),
            "B, q_len, heads, 576",
            align=ROW_ALIGN,
            limits=(Limit("query tokens (B x T)", lambda q: q.shape[0] * q.shape[1], MAX_TOKENS),),
            field="q",
            strides=("q_sb", "q_st", "q_sh"),
        ),
        Operand(
            "kv_cache",
            kv_dtype,
            ("num_pages", spec.page_size, width),
            "num_pages, page_size, token",
            align=ROW_ALIGN,
            why_dtype=why,
            field="kv",
            strides=("kv_sp", "kv_sr"),
            stride_unit="bytes",
            count=("num_slots", spec.page_size),
        ),
        Operand(
            "indices",
            "int32",
            ("B", t, spec.topk),
            "B, T, topk",
            access="last",
            field="indices",
            strides=("idx_sb", "idx_st"),
        ),
    )
    outputs = (
        Operand(
            "out",
            spec.dtype,
            ("B", t, h, spec.latent_dim),
            "B, T, heads, 512",
            align=4,
            field="out",
            strides=("o_sb", "o_st", "o_sh"),
        ),
        Operand("lse", "float32", ("B", t, h), "B, T, heads", access="whole", field="lse"),
    )
    return inputs, outputs


def check_inputs(spec: SparseSpec, q, kv_cache, indices, device=None, batch: int | None = None):
    """Every cheap check of a call's inputs (all on `device`, else on q's CUDA device; of the
    planned `batch` where given); InputError naming the first bad tensor."""
    inputs, _ = operands(spec)
    check_operands(inputs, (q, kv_cache, indices), device, {} if batch is None else {"B": batch})


def validate_indices(kv_cache, indices) -> None:
    """InputError naming the first slot outside [-1, pages x page_size) (reads indices back)."""
    num_slots = kv_cache.shape[0] * kv_cache.shape[1]
    listed = indices.cpu()
    bad = ((listed < -1) | (listed >= num_slots)).nonzero()
    if len(bad):
        b, t, k = (int(i) for i in bad[0])
        raise InputError(
            f"indices[{b}, {t}, {k}]={int(listed[b, t, k])}: slots must be -1 (skip) or in "
            f"[0, {num_slots}) (kv_cache has {kv_cache.shape[0]} pages x {kv_cache.shape[1]})"
        )
