"""The one checker of a call's tensors (kgen.mla.operands), for both families: each bad tensor is
named, with what was expected and what came; and a family's new input (a second cache with its
own page size, per-row lengths, an attention sink) is one more Operand that the checker, the
planned strides and the generated fast path all take without other code."""

from __future__ import annotations

import ctypes
import types

import pytest
import torch

from kgen.arch import ARCHS
from kgen.mla import InputError, SparseConfig, SparseSpec, Spec, quantize_fp8, sparse_layout_for
from kgen.mla import inputs as dense_inputs
from kgen.mla.fastpath import binder
from kgen.mla.operands import Limit, Operand, check_operands
from kgen.mla.running import PlannedRunner
from kgen.mla.sparse import inputs as sparse_inputs

CPU = torch.device("cpu")
DENSE = Spec(heads=4, q_len=3, dtype="bfloat16", page_size=16, mask="tree")
SPARSE = SparseSpec(heads=4, q_len=2, topk=5, kv_format="fp8", page_size=4)
B, PAGES = 2, 6


def dense_tensors():
    d = DENSE.head_dim
    return {
        "q": torch.randn(B, DENSE.q_len, DENSE.heads, d).to(torch.bfloat16),
        "kv_cache": torch.randn(PAGES, DENSE.page_size, d).to(torch.bfloat16),
        "block_table": torch.zeros(B, 5, dtype=torch.int32),
        "seq_lens": torch.full((B,), 20, dtype=torch.int32),
        "mask": torch.ones(DENSE.q_len, DENSE.q_len, dtype=torch.bool),
    }


def misaligned(t: torch.Tensor) -> torch.Tensor:
    """t's values at an address one element past an aligned one."""
    flat = torch.zeros(t.numel() + 1, dtype=t.dtype)
    return flat[1:].view(t.shape)


def meta(t: torch.Tensor) -> torch.Tensor:
    return torch.empty(t.shape, dtype=t.dtype, device="meta")


DENSE_BAD = [
    ("q", lambda t: "q", r"^q: expected a torch.Tensor, got str"),
    ("q", lambda t: t["q"].float(), r"^q: expected dtype torch.bfloat16, got torch.float32"),
    ("q", lambda t: t["q"][0], r"^q: expected 4 dimensions, got shape \(3, 4, 576\)"),
    ("q", lambda t: t["q"][:, :, :2], r"^q: expected shape \[B, 3, 4, 576\]"),
    (
        "q",
        lambda t: torch.zeros(B, 3, 4, 2 * 576, dtype=torch.bfloat16)[..., ::2],
        r"^q: expected a contiguous last dimension",
    ),
    ("q", lambda t: misaligned(t["q"]), r"^q: expected a base address aligned to 16 bytes"),
    ("q", lambda t: meta(t["q"]), r"^q: expected a tensor on cpu, got one on meta"),
    ("kv_cache", lambda t: t["kv_cache"][:, :8], r"^kv_cache: expected shape \[num_pages, 16"),
    (
        "kv_cache",
        lambda t: torch.zeros(PAGES, 16, 580, dtype=torch.bfloat16)[..., :576],
        r"^kv_cache: expected strides that are multiples of 8 elements \(16 bytes\)",
    ),
    ("kv_cache", lambda t: meta(t["kv_cache"]), r"^kv_cache: expected a tensor on cpu"),
    ("block_table", lambda t: t["block_table"].long(), r"^block_table: expected dtype torch.int32"),
    ("block_table", lambda t: t["block_table"][:1], r"^block_table: expected shape \[2, max_pages"),
    (
        "block_table",
        lambda t: torch.zeros(5, B, dtype=torch.int32).t(),
        r"^block_table: expected a contiguous last dimension",
    ),
    ("seq_lens", lambda t: t["seq_lens"][:1], r"^seq_lens: expected shape \[2\]"),
    (
        "seq_lens",
        lambda t: torch.zeros(2 * B, dtype=torch.int32)[::2],
        r"^seq_lens: expected a con",
    ),
    ("mask", lambda t: None, r"^mask: expected a tree mask"),
    ("mask", lambda t: t["mask"].int(), r"^mask: expected dtype bool \(dense\) or int64"),
]


@pytest.mark.parametrize("name, change, message", DENSE_BAD)
def test_dense_checker_names_the_bad_tensor(name, change, message):
    args = dense_tensors()
    args[name] = change(args)
    with pytest.raises(InputError, match=message):
        dense_inputs.check_inputs(DENSE, 8, **args, device=CPU)


def test_dense_checker_takes_good_tensors_and_views_of_them():
    dense_inputs.check_inputs(DENSE, 8, **dense_tensors(), device=CPU)
    wide = torch.zeros(B, 3, 5, DENSE.head_dim, dtype=torch.bfloat16)
    dense_inputs.check_inputs(DENSE, 8, **{**dense_tensors(), "q": wide[:, :, 1:]}, device=CPU)


def test_dense_checker_applies_the_plan_and_the_limits():
    args = dense_tensors()
    with pytest.raises(InputError, match=r"^q: expected batch 3 \(the plan's\)"):
        dense_inputs.check_inputs(DENSE, 8, **args, device=CPU, planned=(3, 5))
    with pytest.raises(InputError, match=r"^block_table: expected max_pages 4 \(the plan's\)"):
        dense_inputs.check_inputs(DENSE, 8, **args, device=CPU, planned=(2, 4))
    huge = {k: meta(v) for k, v in args.items()}  # shapes without memory
    huge["block_table"] = torch.empty(B, 2**31 // 16, dtype=torch.int32, device="meta")
    with pytest.raises(InputError, match=r"^block_table: expected at most 2147483647 positions"):
        dense_inputs.check_inputs(DENSE, 8, **huge, device=torch.device("meta"))


def sparse_tensors(spec=SPARSE):
    return {
        "q": torch.randn(B, spec.q_len, spec.heads, 576).to(torch.bfloat16),
        "kv_cache": quantize_fp8(torch.randn(PAGES, spec.page_size, 576)),
        "indices": torch.zeros(B, spec.q_len, spec.topk, dtype=torch.int32),
    }


SPARSE_BAD = [
    ("q", lambda t: t["q"].half(), r"^q: expected dtype torch.bfloat16, got torch.float16"),
    ("q", lambda t: t["q"][..., :512], r"^q: expected shape \[B, 2, 4, 576\]"),
    ("q", lambda t: misaligned(t["q"]), r"^q: expected a base address aligned to 16 bytes"),
    (
        "kv_cache",
        lambda t: torch.zeros(PAGES, 4, 576, dtype=torch.bfloat16),
        r"^kv_cache: expected dtype torch.uint8 \(an fp8 cache \(kgen.mla.quantize_fp8\(\.\.\., "
        r"format='fp8'\)\) for kv_format='fp8'\)",
    ),
    (
        "kv_cache",
        lambda t: t["kv_cache"][:, :2],
        r"^kv_cache: expected shape \[num_pages, 4, 656\]",
    ),
    ("kv_cache", lambda t: misaligned(t["kv_cache"]), r"^kv_cache: expected a base address"),
    ("indices", lambda t: t["indices"].long(), r"^indices: expected dtype torch.int32"),
    ("indices", lambda t: t["indices"][:, :, :4], r"^indices: expected shape \[2, 2, 5\]"),
    ("indices", lambda t: t["indices"][:1], r"^indices: expected shape \[2, 2, 5\]"),
    (
        "indices",
        lambda t: torch.zeros(B, 5, 2, dtype=torch.int32).transpose(1, 2),
        r"^indices: expected a contiguous last dimension",
    ),
]


@pytest.mark.parametrize("name, change, message", SPARSE_BAD)
def test_sparse_checker_names_the_bad_tensor(name, change, message):
    args = sparse_tensors()
    args[name] = change(args)
    with pytest.raises(InputError, match=message):
        sparse_inputs.check_inputs(SPARSE, **args, device=CPU)


def test_sparse_checker_applies_the_plan_and_the_token_limit():
    sparse_inputs.check_inputs(SPARSE, **sparse_tensors(), device=CPU, batch=B)
    with pytest.raises(InputError, match=r"^q: expected batch 3 \(the plan's\)"):
        sparse_inputs.check_inputs(SPARSE, **sparse_tensors(), device=CPU, batch=3)
    bf16 = SparseSpec(heads=4, q_len=2, topk=5, kv_format="bf16", page_size=4)
    args = sparse_tensors(bf16)
    with pytest.raises(InputError, match=r"kv_cache: expected dtype torch.bfloat16 \(a bfloat16"):
        sparse_inputs.check_inputs(bf16, **args, device=CPU)
    many = {k: meta(v) for k, v in sparse_tensors().items()}
    many["q"] = torch.empty(40000, 2, 4, 576, dtype=torch.bfloat16, device="meta")
    many["indices"] = torch.empty(40000, 2, 5, dtype=torch.int32, device="meta")
    with pytest.raises(InputError, match=r"^q: expected at most 65535 query tokens \(B x T\)"):
        sparse_inputs.check_inputs(SPARSE, **many, device=torch.device("meta"))


# A DeepSeek-V4-shaped call, described as data: a second cache with its own page size and index
# list, per-row lengths for it, and an optional attention sink.
class V4Params(ctypes.Structure):
    _fields_ = [
        (name, kind)
        for name, kind in (
            ("q", ctypes.c_void_p),
            ("q_sb", ctypes.c_int64),
            ("q_st", ctypes.c_int64),
            ("q_sh", ctypes.c_int64),
            ("kv", ctypes.c_void_p),
            ("kv_sp", ctypes.c_int64),
            ("kv_sr", ctypes.c_int64),
            ("num_slots", ctypes.c_int64),
            ("extra_kv", ctypes.c_void_p),
            ("extra_kv_sp", ctypes.c_int64),
            ("extra_kv_sr", ctypes.c_int64),
            ("extra_slots", ctypes.c_int32),
            ("extra_indices", ctypes.c_void_p),
            ("extra_lengths", ctypes.c_void_p),
            ("sink", ctypes.c_void_p),
            ("out", ctypes.c_void_p),
            ("lse", ctypes.c_void_p),
            ("ws_o", ctypes.c_void_p),
            ("ws_lse", ctypes.c_void_p),
            ("counters", ctypes.c_void_p),
            ("scale_log2", ctypes.c_float),
        )
    ]


T, H, EXTRA_TOPK = 2, 4, 3


def v4_operands():
    inputs = (
        Operand("q", "bfloat16", ("B", T, H, 512), "B, T, H, 512", align=16, field="q",
                strides=("q_sb", "q_st", "q_sh")),
        Operand("kv_cache", "uint8", ("num_pages", 8, 584), "num_pages, 8, token", align=8,
                field="kv", strides=("kv_sp", "kv_sr"), stride_unit="bytes",
                count=("num_slots", 8)),
        Operand("extra_kv_cache", "uint8", ("extra_pages", 2, 584), "extra_pages, 2, token",
                align=8, field="extra_kv", strides=("extra_kv_sp", "extra_kv_sr"),
                stride_unit="bytes", count=("extra_slots", 2),
                limits=(Limit("extra pages", lambda t: t.shape[0], 1000),)),
        Operand("extra_indices", "int32", ("B", T, EXTRA_TOPK), "B, T, extra_topk",
                access="last", field="extra_indices"),
        Operand("extra_lengths", "int32", ("B", T), "B, T", access="whole",
                field="extra_lengths"),
        Operand("attn_sink", "float32", (H,), "H", access="whole", field="sink", optional=True),
    )  # fmt: skip
    outputs = (
        Operand("out", "bfloat16", ("B", T, H, 512), "B, T, H, 512", align=4, field="out",
                strides=()),
        Operand("lse", "float32", ("B", T, H), "B, T, H", access="whole", field="lse"),
    )  # fmt: skip
    return inputs, outputs


def v4_tensors(sink=True):
    return (
        torch.randn(B, T, H, 512).to(torch.bfloat16),
        torch.zeros(5, 8, 584, dtype=torch.uint8),
        torch.zeros(7, 2, 584, dtype=torch.uint8),
        torch.zeros(B, T, EXTRA_TOPK, dtype=torch.int32),
        torch.full((B, T), EXTRA_TOPK, dtype=torch.int32),
        torch.zeros(H) if sink else None,
    )


@pytest.mark.parametrize(
    "index, bad, message",
    [
        (2, torch.zeros(7, 4, 584, dtype=torch.uint8), r"^extra_kv_cache: expected shape \[ext"),
        (2, torch.zeros(1001, 2, 584, dtype=torch.uint8), r"^extra_kv_cache: expected at most"),
        (3, torch.zeros(B, T, 4, dtype=torch.int32), r"^extra_indices: expected shape \[2, 2, 3"),
        (4, torch.zeros(B, T, dtype=torch.int64), r"^extra_lengths: expected dtype torch.int32"),
        (5, torch.zeros(H + 1), r"^attn_sink: expected shape \[4\] \(H\)"),
    ],
)
def test_a_new_input_is_one_more_operand(index, bad, message):
    inputs, _ = v4_operands()
    tensors = list(v4_tensors())
    check_operands(inputs, tuple(tensors), CPU)
    check_operands(inputs, tuple(v4_tensors(sink=False)), CPU)  # the sink is optional
    tensors[index] = bad
    with pytest.raises(InputError, match=message):
        check_operands(inputs, tuple(tensors), CPU)


def test_the_fast_path_binds_every_described_input():
    inputs, outputs = v4_operands()
    bind, source = binder(inputs, outputs, {"B": B}, -1, V4Params)
    p = V4Params()
    tensors = v4_tensors()
    out = torch.empty(B, T, H, 512, dtype=torch.bfloat16)
    lse = torch.empty(B, T, H)
    assert bind(p, tensors, out, lse, True, 0, 0) is True, source
    fields = ("q", "kv", "extra_kv", "extra_indices", "extra_lengths", "sink")
    for field, t in zip(fields, tensors, strict=True):
        assert getattr(p, field) == t.data_ptr()
    assert (p.num_slots, p.extra_slots) == (5 * 8, 7 * 2)
    assert (p.out, p.lse) == (out.data_ptr(), lse.data_ptr())
    assert bind(p, v4_tensors(sink=False), out, lse, True, 0, 0) is True and not p.sink  # NULL
    inside = tensors[2].view(-1)[: B * T * H * 4].view(torch.float32).view(B, T, H)
    assert bind(p, tensors, out, inside, True, 0, 0) is None  # lse within a cache: checked apart
    odd = list(tensors)
    odd[2] = torch.zeros(7, 2, 600, dtype=torch.uint8)[..., :584]
    assert bind(p, tuple(odd), out, lse, True, 0, 0) is False  # not as planned: the checks run
    span = (out.data_ptr() + 8, out.data_ptr() + 16)
    assert bind(p, tensors, out, lse, True, *span) is None  # an extra input inside out


def test_a_runner_of_a_new_description_plans_and_runs_it(monkeypatch):
    """PlannedRunner takes the V4-shaped description as it is: planned strides, the fast path,
    the general path for other strides (in bytes for the caches), and the overlap refusal."""
    from kgen.mla import running

    class Recorded:
        def __init__(self, params):
            self.params, self.sent = params, []

        def launch(self, stream):
            self.sent.append({name: getattr(self.params, name) for name, _ in V4Params._fields_})

    monkeypatch.setattr(PlannedRunner, "_packed_launch", lambda self, grid: Recorded(self._params))
    monkeypatch.setattr(running, "current_device", lambda: -1)
    spec = SparseSpec(heads=H, q_len=T, topk=5, page_size=8)
    config = SparseConfig(heads_per_block=4)
    kernel = types.SimpleNamespace(
        spec=spec, config=config, layout=sparse_layout_for(spec, config, ARCHS["sm_120"])
    )
    inputs, outputs = v4_operands()
    runner = PlannedRunner(
        kernel, B, CPU, 0.5, inputs=inputs, outputs=outputs, planned={"B": B},
        params=V4Params(), groups=B * T, block_groups=H // config.heads_per_block,
    )  # fmt: skip
    tensors = v4_tensors()
    runner._run(0, tensors, None, None)
    sent = runner._launch.sent[-1]
    assert (sent["extra_kv_sp"], sent["extra_kv_sr"]) == (2 * 584, 584)
    assert (sent["q_sb"], sent["extra_slots"]) == (T * H * 512, 14)
    wide = torch.zeros(7, 2, 592, dtype=torch.uint8)[..., :584]  # rows 592 bytes apart
    runner._run(0, (*tensors[:2], wide, *tensors[3:]), None, None)
    assert runner._launch.sent[-1]["extra_kv_sr"] == 592
    assert runner._launch.sent[-1]["extra_kv"] == wide.data_ptr()
    runner._run(0, tensors, None, None)
    assert runner._launch.sent[-1]["extra_kv_sr"] == 584  # the planned strides come back
    out = torch.empty(B, T, H, 512, dtype=torch.bfloat16)
    lse_in_sink = torch.zeros(B * T * H)[: B * T * H].view(B, T, H)
    with pytest.raises(InputError, match="lse overlaps attn_sink"):
        runner._run(0, (*tensors[:5], lse_in_sink.view(-1)[:H]), out, lse_in_sink)


class FormsParams(ctypes.Structure):
    _fields_ = [
        ("cache", ctypes.c_void_p),
        ("cache_sp", ctypes.c_int64),
        ("cache_sr", ctypes.c_int64),
        ("slots", ctypes.c_int64),
        ("lengths", ctypes.c_void_p),
        ("len_sb", ctypes.c_int64),
        ("len_st", ctypes.c_int64),
        ("out", ctypes.c_void_p),
        ("lse", ctypes.c_void_p),
    ]


def forms_operands(page_stride=24):
    """A cache of padded pages (4 x 5 elements, pages `page_stride` apart) with at most 9 slots,
    lengths per sequence [B] or per row [B, T] at any strides, an input the call does not take."""
    inputs = (
        Operand("cache", "float32", ("pages", 4, 5), "pages, 4, 5", access="pages", align=16,
                field="cache", strides=("cache_sp",), count=("slots", 4), count_most=9,
                count_what="slots", page_stride=page_stride),
        Operand("lengths", "int32", ("B", T), "B, or B, T", access="strided", field="lengths",
                strides=("len_sb", "len_st"), optional=True, min_dims=1),
        Operand("mask", "int32", (1,), "-", absent="this call takes no mask"),
    )  # fmt: skip
    outputs = (
        Operand("out", "float32", ("B",), "B", access="whole", field="out"),
        Operand("lse", "float32", ("B",), "B", access="whole", field="lse"),
    )
    return inputs, outputs


def padded(pages: int, stride: int = 24) -> torch.Tensor:
    return torch.zeros(pages, stride)[:, :20].view(pages, 4, 5)


@pytest.mark.parametrize(
    "index, bad, message",
    [
        (0, torch.zeros(2, 4, 5)[:, :, :4], r"^cache: expected shape \[pages, 4, 5\]"),
        (
            0,
            torch.zeros(2, 5, 4).transpose(1, 2),
            r"^cache: expected each page's elements together: strides \(page, 5, 1\) with page >= "
            r"20 and a multiple of 4 elements \(16 bytes\), got strides \(20, 1, 4\)",
        ),
        (0, padded(2, 22), r"^cache: expected each page's elements together"),  # 88 bytes apart
        (0, padded(3), r"^cache: expected at most 9 slots, got 12"),
        (
            1,
            torch.zeros(B, T + 1, dtype=torch.int32),
            r"^lengths: expected shape \[B\] or \[B, 2\]",
        ),
        (1, torch.zeros(B, T, 1, dtype=torch.int32), r"^lengths: expected 1 or 2 dimensions"),
        (2, torch.zeros(1, dtype=torch.int32), r"^mask: expected None \(this call takes no mask"),
    ],
)
def test_described_forms_of_an_input_are_checked(index, bad, message):
    inputs, _ = forms_operands()
    good = [padded(2), torch.zeros(B, T, dtype=torch.int32), None]
    check_operands(inputs, tuple(good), CPU)
    per_row_transposed = torch.zeros(T, B, dtype=torch.int32).t()
    check_operands(inputs, (torch.zeros(2, 4, 5), per_row_transposed, None), CPU)
    check_operands(inputs, (padded(2), torch.zeros(B, dtype=torch.int32), None), CPU)
    good[index] = bad
    with pytest.raises(InputError, match=message):
        check_operands(inputs, tuple(good), CPU)


def test_the_fast_path_binds_the_described_forms():
    """Pages at their planned stride, lengths of either shape (their strides written: 0 along a
    dimension left out), an absent input that is None; anything else is refused."""
    inputs, outputs = forms_operands()
    bind, source = binder(inputs, outputs, {"B": B}, -1, FormsParams)
    p = FormsParams()
    out, lse = torch.empty(B), torch.empty(B)
    cache, per_row = padded(2), torch.zeros(B, T, dtype=torch.int32)
    assert bind(p, (cache, per_row, None), out, lse, True, 0, 0) is True, source
    assert (p.cache, p.slots, p.lengths) == (cache.data_ptr(), 8, per_row.data_ptr())
    assert (p.len_sb, p.len_st) == (T, 1)
    per_seq = torch.zeros(B, dtype=torch.int32)
    assert bind(p, (cache, per_seq, None), out, lse, True, 0, 0) is True
    assert (p.lengths, p.len_sb, p.len_st) == (per_seq.data_ptr(), 1, 0)
    assert bind(p, (cache, None, None), out, lse, True, 0, 0) is True and not p.lengths
    refused = [
        (torch.zeros(2, 4, 5), per_row, None),  # pages not at the planned stride
        (padded(3), per_row, None),  # 12 slots: over the described most
        (cache, torch.zeros(B, 3, dtype=torch.int32)[:, :2], None),  # strided: the checks bind it
        (cache, per_row, torch.zeros(1, dtype=torch.int32)),  # not taken
    ]
    for tensors in refused:
        assert bind(p, tensors, out, lse, True, 0, 0) is False
    inside = cache[1, 0, :2]  # out within the cache's second page: checked apart
    assert bind(p, (cache, per_row, None), inside, lse, True, 0, 0) is None


@pytest.mark.parametrize(
    "plan, args, error, message",
    [
        ("plan", ({"heads": 8}, 1, 4), TypeError, r"^spec: expected kgen.mla.Spec, got dict"),
        ("plan", (DENSE, -1, 4), ValueError, r"^batch=-1: expected an integer >= 0"),
        ("plan", (DENSE, 1, 2.5), ValueError, r"^max_pages=2.5: expected an integer >= 0"),
        ("plan_sparse", (DENSE, 1), TypeError, r"^spec: expected kgen.mla.SparseSpec, got Spec"),
        ("plan_sparse", (SPARSE, True), ValueError, r"^batch=True: expected an integer >= 0"),
    ],
)
def test_both_plans_name_the_bad_parameter_before_any_device_work(plan, args, error, message):
    import kgen

    with pytest.raises(error, match=message):
        getattr(kgen.mla, plan)(*args)
    with pytest.raises(ValueError, match="device=cpu: expected a CUDA device"):
        getattr(kgen.mla, plan)(
            *(DENSE if plan == "plan" else SPARSE, 1, 4)[: len(args)], device="cpu"
        )
