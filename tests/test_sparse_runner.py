"""Sparse plan/run without a GPU: a SparseRunner on CPU tensors with the launch recorded instead
of sent, so the checks (named errors before launch), the packed parameters and validate=True are
tested here."""

from __future__ import annotations

import types

import pytest
import torch

from kgen.arch import ARCHS
from kgen.mla import InputError, SparseConfig, SparseSpec, quantize_fp8, running, sparse_layout_for
from kgen.mla.running import LOG2E
from kgen.mla.sparse import runner as runner_module
from kgen.mla.sparse.api import sparse_spec_for
from kgen.mla.sparse.runner import SparseRunner

from .mla_helpers import RecordedLaunch

SPEC = SparseSpec(heads=4, q_len=2, topk=5, kv_format="fp8", page_size=4)
CONFIG = SparseConfig(heads_per_block=4, kv_splits=3)
BATCH, PAGES = 2, 3


def make_runner(monkeypatch, spec=SPEC):
    monkeypatch.setattr(
        SparseRunner, "_packed_launch", lambda self, grid: RecordedLaunch(self._params)
    )
    monkeypatch.setattr(runner_module, "current_stream", lambda index: 1234)
    monkeypatch.setattr(running, "current_device", lambda: -1)
    kernel = types.SimpleNamespace(
        spec=spec, config=CONFIG, layout=sparse_layout_for(spec, CONFIG, ARCHS["sm_120"])
    )
    return SparseRunner(kernel, BATCH, torch.device("cpu"), scale=0.25)


def tensors(spec=SPEC):
    kv = torch.randn(PAGES, spec.page_size, 576)
    return {
        "q": torch.randn(BATCH, spec.q_len, spec.heads, 576).to(torch.bfloat16),
        "kv_cache": quantize_fp8(kv) if spec.kv_format == "fp8" else kv.to(torch.bfloat16),
        "indices": torch.randint(-1, PAGES * spec.page_size, (BATCH, spec.q_len, spec.topk)).to(
            torch.int32
        ),
    }


def test_run_packs_pointers_strides_and_sizes(monkeypatch):
    runner = make_runner(monkeypatch)
    args = tensors()
    out, lse = runner.run(**args)
    assert out.shape == (2, 2, 4, 512) and out.dtype == torch.bfloat16 and lse.shape == (2, 2, 4)
    sent = runner._launch.sent[-1]
    assert sent["kv"] == args["kv_cache"].data_ptr()
    assert (sent["kv_sp"], sent["kv_sr"]) == (4 * 656, 656)  # bytes
    assert sent["num_slots"] == PAGES * 4 and sent["topk"] == 5
    assert (sent["idx_sb"], sent["idx_st"]) == (10, 5)
    assert (sent["q_sb"], sent["q_st"], sent["q_sh"]) == (2 * 4 * 576, 4 * 576, 576)
    assert sent["scale_log2"] == pytest.approx(0.25 * LOG2E)
    assert runner.workspace.counters.shape == (BATCH * 2 * 1 * 4,)  # tokens x groups x 4
    assert runner.workspace.partials.shape == (BATCH * 2 * 3 * 4, 512)  # a slot per split and row
    assert sent["ws_o"] == runner.workspace.partials.data_ptr()


def test_bf16_cache_strides_in_bytes(monkeypatch):
    spec = SparseSpec(heads=4, q_len=2, topk=5, kv_format="bf16", page_size=4)
    runner = make_runner(monkeypatch, spec)
    args = tensors(spec)
    runner.run(**args)
    sent = runner._launch.sent[-1]
    assert (sent["kv_sp"], sent["kv_sr"]) == (4 * 576 * 2, 576 * 2)


@pytest.mark.parametrize(
    "change, match",
    [
        ({"kv_cache": torch.zeros(PAGES, 4, 576, dtype=torch.bfloat16)}, r"kv_cache: .*uint8"),
        (
            {"kv_cache": torch.zeros(PAGES, 8, 656, dtype=torch.uint8)},
            r"kv_cache: .*\[num_pages, 4",
        ),
        ({"kv_cache": torch.zeros(PAGES, 4, 700, dtype=torch.uint8)[..., :656]}, r"kv_cache: .*16"),
        ({"indices": torch.zeros(2, 2, 5, dtype=torch.int64)}, r"indices: .*int32"),
        ({"indices": torch.zeros(2, 2, 6, dtype=torch.int32)}, r"indices: .*\[2, 2, 5\]"),
        (
            {"indices": torch.zeros(2, 5, 2, dtype=torch.int32).transpose(1, 2)},
            r"indices: .*contig",
        ),
        ({"q": torch.zeros(2, 2, 4, 576)}, r"q: .*bfloat16"),
        ({"q": torch.zeros(3, 2, 4, 576, dtype=torch.bfloat16)}, r"q: .*batch 2"),
        (
            {"q": torch.zeros(2, 2, 4, 1152, dtype=torch.bfloat16)[..., ::2]},
            r"q: .*contiguous last",
        ),
    ],
)
def test_bad_inputs_are_named_before_launch(monkeypatch, change, match):
    runner = make_runner(monkeypatch)
    with pytest.raises(InputError, match=match):
        runner.run(**{**tensors(), **change})
    assert runner._launch.sent == []


def test_outputs_checked_and_overlap_refused(monkeypatch):
    runner = make_runner(monkeypatch)
    args = tensors()
    with pytest.raises(InputError, match="out: expected"):
        runner.run(**args, out=torch.zeros(2, 2, 4, 576, dtype=torch.bfloat16))
    lse = torch.zeros(2, 2, 4)
    shared = torch.zeros(2 * 2 * 4 * 576 + 64, dtype=torch.bfloat16)
    q = shared[: 2 * 2 * 4 * 576].view(2, 2, 4, 576)
    out = shared[: 2 * 2 * 4 * 512].view(2, 2, 4, 512)
    with pytest.raises(InputError, match="out overlaps q"):
        runner.run(q, args["kv_cache"], args["indices"], out=out, lse=lse)


def test_validate_names_the_bad_slot(monkeypatch):
    runner = make_runner(monkeypatch)
    args = tensors()
    args["indices"][1, 0, 3] = PAGES * 4
    runner.run(**args)  # without validate: launched (the kernel makes that row NaN)
    assert len(runner._launch.sent) == 1
    with pytest.raises(InputError, match=r"indices\[1, 0, 3\]=12: slots must be -1"):
        runner.run(**args, validate=True)
    assert len(runner._launch.sent) == 1  # refused before launching
    args["indices"][1, 0, 3] = -2
    with pytest.raises(InputError, match=r"indices\[1, 0, 3\]=-2"):
        runner.run(**args, validate=True)


def test_spec_is_read_off_the_tensors():
    args = tensors()
    assert sparse_spec_for(**args) == SPEC
    bf16 = {**args, "kv_cache": torch.zeros(PAGES, 64, 576, dtype=torch.bfloat16)}
    assert sparse_spec_for(**bf16).kv_format == "bf16" and sparse_spec_for(**bf16).page_size == 64
    with pytest.raises(InputError, match="q: expected dtype"):
        sparse_spec_for(**{**args, "q": args["q"].float()})
    with pytest.raises(InputError, match="indices: expected a 3-D"):
        sparse_spec_for(**{**args, "indices": args["indices"][0]})


def test_planned_tensors_take_the_fast_path_without_the_full_checks(monkeypatch):
    runner = make_runner(monkeypatch)
    args = tensors()
    out, lse = torch.empty(2, 2, 4, 512, dtype=torch.bfloat16), torch.empty(2, 2, 4)
    full = running.check_operands

    def refuse(*a, **k):
        raise AssertionError("the full checks ran for planned tensors")

    monkeypatch.setattr(running, "check_operands", refuse)
    runner.run(**args, out=out, lse=lse)
    other = tensors()  # new addresses, more pages: still the plan's shapes
    other["kv_cache"] = quantize_fp8(torch.randn(PAGES + 2, 4, 576))
    runner.run(**other, out=out, lse=lse)
    sent = runner._launch.sent[-1]
    assert sent["q"] == other["q"].data_ptr() and sent["kv"] == other["kv_cache"].data_ptr()
    assert sent["indices"] == other["indices"].data_ptr() and sent["num_slots"] == (PAGES + 2) * 4
    assert (sent["out"], sent["lse"]) == (out.data_ptr(), lse.data_ptr())
    monkeypatch.setattr(running, "check_operands", full)


def test_odd_strides_are_used_then_the_planned_ones_come_back(monkeypatch):
    runner = make_runner(monkeypatch)
    args = tensors()
    wide = torch.zeros(BATCH, 3, SPEC.heads, 576, dtype=torch.bfloat16)
    runner.run(wide[:, :2], args["kv_cache"], args["indices"])  # a view: rows 3 tokens apart
    assert runner._launch.sent[-1]["q_sb"] == 3 * 4 * 576
    runner.run(**args)
    assert runner._launch.sent[-1]["q_sb"] == 2 * 4 * 576


def test_a_misaligned_planned_shape_takes_the_checks_and_is_named(monkeypatch):
    runner = make_runner(monkeypatch)
    args = tensors()
    flat = torch.zeros(args["q"].numel() + 1, dtype=torch.bfloat16)
    q = flat[1:].view(args["q"].shape)  # contiguous, planned shape, 2 bytes off
    with pytest.raises(InputError, match="q: expected a base address aligned to 16 bytes"):
        runner.run(q, args["kv_cache"], args["indices"])
    assert runner._launch.sent == []


def test_overlap_among_planned_tensors_is_named(monkeypatch):
    runner = make_runner(monkeypatch)
    args = tensors()
    out = torch.zeros(2, 2, 4, 512, dtype=torch.bfloat16)
    inside = out.view(-1).view(torch.float32)[:16].view(2, 2, 4)  # lse within out's bytes
    with pytest.raises(InputError, match="out overlaps lse"):
        runner.run(**args, out=out, lse=inside)
    with pytest.raises(InputError, match="lse overlaps indices"):
        runner.run(
            **args, out=out, lse=args["indices"].view(-1)[:16].view(torch.float32).view(2, 2, 4)
        )


def test_a_batch_over_the_grid_limit_is_refused_at_plan(monkeypatch):
    monkeypatch.setattr(
        SparseRunner, "_packed_launch", lambda self, grid: RecordedLaunch(self._params)
    )
    kernel = types.SimpleNamespace(
        spec=SPEC, config=CONFIG, layout=sparse_layout_for(SPEC, CONFIG, ARCHS["sm_120"])
    )
    with pytest.raises(ValueError, match="batch=40000: at most 65535 query tokens"):
        SparseRunner(kernel, 40000, torch.device("cpu"))


# The V4 op: a 512-wide cache (v4_fp8: scales after each page's tokens, pages padded), per-row
# lengths, a sink and a second cache with its own page size, all entries of the sparse
# description (kgen.mla.sparse.inputs) bound by the shared machinery.
V4 = SparseSpec(
    heads=4, q_len=2, topk=5, kv_format="v4_fp8", page_size=4, extra_topk=3, extra_page_size=2
)
EXTRA_PAGES = 5


def v4_tensors(spec=V4):
    def cache(pages, page_size):
        kv = torch.randn(pages, page_size, 512)
        if spec.format.quantized:
            return quantize_fp8(kv, format=spec.kv_format)
        return kv.to(torch.bfloat16)

    args = {
        "q": torch.randn(BATCH, spec.q_len, spec.heads, 512).to(torch.bfloat16),
        "kv_cache": cache(PAGES, spec.page_size),
        "indices": torch.randint(0, PAGES * spec.page_size, (BATCH, spec.q_len, spec.topk)).int(),
        "topk_length": torch.tensor([5, 2], dtype=torch.int32),
        "attn_sink": torch.randn(spec.heads),
    }
    if spec.has_extra:
        slots = EXTRA_PAGES * spec.extra_page_size
        args["extra_kv_cache"] = cache(EXTRA_PAGES, spec.extra_page_size)
        args["extra_indices"] = torch.randint(0, slots, (BATCH, spec.q_len, spec.extra_topk)).int()
        args["extra_topk_length"] = torch.full((BATCH, spec.q_len), 3, dtype=torch.int32)
    return args


def test_v4_run_packs_both_caches_lengths_and_sink_on_the_fast_path(monkeypatch):
    runner = make_runner(monkeypatch, V4)
    args = v4_tensors()
    monkeypatch.setattr(running, "check_operands", None)  # the fast path binds planned tensors
    runner.run(**args)
    sent = runner._launch.sent[-1]
    page_bytes = V4.format.page_bytes(4)  # 4 x 584 bytes padded to a multiple of 576
    assert args["kv_cache"].stride(0) == page_bytes == 2880
    assert (sent["kv"], sent["kv_sp"], sent["kv_sr"]) == (args["kv_cache"].data_ptr(), 2880, 576)
    assert (sent["extra_kv_sp"], sent["extra_kv_sr"]) == (V4.format.page_bytes(2), 576)
    assert (sent["num_slots"], sent["extra_num_slots"]) == (PAGES * 4, EXTRA_PAGES * 2)
    assert (sent["topk"], sent["extra_topk"]) == (5, 3)
    assert sent["extra_indices"] == args["extra_indices"].data_ptr()
    assert (sent["extra_idx_sb"], sent["extra_idx_st"]) == (2 * 3, 3)
    assert sent["sink"] == args["attn_sink"].data_ptr()
    assert sent["topk_len"] == args["topk_length"].data_ptr()
    assert (sent["len_sb"], sent["len_st"]) == (1, 0)  # one length per sequence
    assert (sent["extra_len_sb"], sent["extra_len_st"]) == (2, 1)  # one per query row
    per_row = torch.full((BATCH, 2), 4, dtype=torch.int32)
    runner.run(**{**args, "topk_length": per_row, "attn_sink": None, "extra_topk_length": None})
    sent = runner._launch.sent[-1]
    assert (sent["topk_len"], sent["len_sb"], sent["len_st"]) == (per_row.data_ptr(), 2, 1)
    assert sent["sink"] is None and sent["extra_len"] is None  # null: none given


def test_v4_odd_page_strides_are_used_then_the_planned_ones_come_back(monkeypatch):
    runner = make_runner(monkeypatch, V4)
    args = v4_tensors()
    wider = torch.zeros(PAGES, 4096, dtype=torch.uint8)[:, : 4 * 584].view(PAGES, 4, 584)
    runner.run(**{**args, "kv_cache": wider})  # pages 4096 bytes apart
    sent = runner._launch.sent[-1]
    assert (sent["kv_sp"], sent["kv_sr"]) == (4096, 576)  # rows: the payload's, as planned
    lengths = torch.zeros(BATCH, 4, dtype=torch.int32)[:, :2]  # [B, T] rows 4 apart
    runner.run(**{**args, "topk_length": lengths})
    assert (runner._launch.sent[-1]["len_sb"], runner._launch.sent[-1]["len_st"]) == (4, 1)
    runner.run(**{**args, "topk_length": torch.zeros(2, BATCH, dtype=torch.int32).t()})
    assert (runner._launch.sent[-1]["len_sb"], runner._launch.sent[-1]["len_st"]) == (1, 2)
    runner.run(**args)
    sent = runner._launch.sent[-1]
    assert (sent["kv_sp"], sent["len_sb"], sent["len_st"]) == (2880, 1, 0)


@pytest.mark.parametrize(
    "spec, change, match",
    [
        (SPEC, {"topk_length": torch.ones(2, dtype=torch.int32)}, r"^topk_length: expected None"),
        (SPEC, {"attn_sink": torch.zeros(4)}, r"^attn_sink: expected None \(the V3.2 op \('fp8'"),
        (
            SparseSpec(heads=4, q_len=2, topk=5, kv_format="v41_fp8", page_size=4),
            {"extra_kv_cache": torch.zeros(1, 2, 528, dtype=torch.uint8)},
            r"^extra_kv_cache: expected None \(the plan has no second cache",
        ),
        (V4, {"extra_kv_cache": None}, r"^extra_kv_cache: expected a torch.Tensor, got NoneType"),
        (V4, {"topk_length": torch.ones(3, dtype=torch.int32)}, r"^topk_length: .*batch 2 \(the"),
        (
            V4,
            {"topk_length": torch.ones(2, 3, dtype=torch.int32)},
            r"^topk_length: expected shape \[2\] or \[2, 2\] \(B per sequence, or B, T per query",
        ),
        (
            V4,
            {"extra_topk_length": torch.ones(2, 2, 1, dtype=torch.int32)},
            r"^extra_topk_length: expected 1 or 2 dimensions, got shape \(2, 2, 1\)",
        ),
        (V4, {"topk_length": torch.ones(2)}, r"^topk_length: expected dtype torch.int32"),
        (V4, {"attn_sink": torch.zeros(5)}, r"^attn_sink: expected shape \[4\] \(heads\)"),
        (V4, {"attn_sink": torch.zeros(8)[::2]}, r"^attn_sink: expected a contiguous tensor"),
        (
            V4,
            {"extra_indices": torch.zeros(2, 2, 4, dtype=torch.int32)},
            r"^extra_indices: expected shape \[2, 2, 3\]",
        ),
        (
            V4,
            {"extra_kv_cache": quantize_fp8(torch.zeros(2, 4, 512), format="v4_fp8")},
            r"^extra_kv_cache: expected shape \[extra_pages, 2, 584\]",
        ),
        (
            V4,
            {"extra_kv_cache": quantize_fp8(torch.zeros(2, 2, 512), format="v41_fp8")},
            r"^extra_kv_cache: expected dtype torch.uint8|^extra_kv_cache: expected shape",
        ),
        (
            V4,
            {"kv_cache": torch.zeros(PAGES, 2344, dtype=torch.uint8)[:, :2336].view(PAGES, 4, 584)},
            r"^kv_cache: expected each page's elements together: strides \(page, 584, 1\) with "
            r"page >= 2336 and a multiple of 16",
        ),
        (
            V4,
            {"kv_cache": torch.zeros(PAGES, 4, 600, dtype=torch.uint8)[..., :584]},
            r"^kv_cache: expected each page's elements together",
        ),
        (
            V4,
            {"q": torch.zeros(BATCH, 2, 4, 576, dtype=torch.bfloat16)},
            r"^q: expected shape \[2, 2, 4, 512\]",
        ),
    ],
)
def test_v4_bad_inputs_are_named_before_launch(monkeypatch, spec, change, match):
    runner = make_runner(monkeypatch, spec)
    args = tensors(spec) if not spec.v4_op else v4_tensors(spec)
    with pytest.raises(InputError, match=match):
        runner.run(**{**args, **change})
    assert runner._launch.sent == []


def padded_meta_cache(pages: int, page_size: int) -> torch.Tensor:
    """A v4_fp8 cache of `pages` padded pages, without memory."""
    page_bytes = V4.format.page_bytes(page_size)
    raw = torch.empty(pages, page_bytes, dtype=torch.uint8, device="meta")
    return raw[:, : page_size * 584].view(pages, page_size, 584)


def test_two_caches_slots_fit_int32_together(monkeypatch):
    """The kernel numbers the second cache's slot s as the main cache's slots + s in int32: with
    two caches each holds at most half, on the general path and the fast one (no memory needed:
    meta tensors); one cache alone may hold more."""
    from kgen.mla.operands import check_operands
    from kgen.mla.sparse.inputs import JOINT_SLOTS, operands

    meta = {k: v.to("meta") for k, v in v4_tensors().items()}
    meta["extra_kv_cache"] = padded_meta_cache(JOINT_SLOTS // 2 + 1, 2)  # one slot too many
    inputs, _ = operands(V4)
    with pytest.raises(InputError, match=rf"^extra_kv_cache: expected at most {JOINT_SLOTS} slots"):
        check_operands(inputs, tuple(meta.values()), torch.device("meta"))
    runner = make_runner(monkeypatch, V4)  # on the CPU: index -1, as a meta tensor's
    args = v4_tensors()
    out, lse = torch.empty(2, 2, 4, 512, dtype=torch.bfloat16), torch.empty(2, 2, 4)
    fits = {**args, "extra_kv_cache": padded_meta_cache(JOINT_SLOTS // 2, 2)}
    assert runner._bind_planned(runner._params, tuple(fits.values()), out, lse, False, 0, 0)
    over = {**args, "extra_kv_cache": meta["extra_kv_cache"]}
    assert (
        runner._bind_planned(runner._params, tuple(over.values()), out, lse, False, 0, 0) is False
    )

    alone = SparseSpec(heads=4, q_len=2, topk=5, kv_format="v4_fp8", page_size=4)
    inputs, _ = operands(alone)
    many = {**meta, "kv_cache": padded_meta_cache(JOINT_SLOTS // 4 + 1, 4)}
    many.update(extra_kv_cache=None, extra_indices=None, extra_topk_length=None)
    check_operands(inputs, tuple(many.values()), torch.device("meta"))


def test_v4_validate_counts_only_the_entries_within_each_length(monkeypatch):
    runner = make_runner(monkeypatch, V4)
    args = v4_tensors()
    args["indices"][1, 0, 3] = PAGES * 4  # past the cache, but past topk_length[1] = 2 too
    args["extra_indices"][0, 1, 2] = -2  # within extra_topk_length (3)
    with pytest.raises(InputError, match=r"^extra_indices\[0, 1, 2\]=-2: slots must be -1"):
        runner.run(**args, validate=True)
    assert runner._launch.sent == []
    args["extra_topk_length"][0, 1] = 2  # now past its length: not read
    runner.run(**args, validate=True)
    args["topk_length"][1] = 4
    with pytest.raises(InputError, match=r"^indices\[1, 0, 3\]=12: .*\(kv_cache has 3 pages x 4"):
        runner.run(**args, validate=True)


def test_v4_spec_is_read_off_the_tensors():
    args = v4_tensors()
    spec = sparse_spec_for(
        args["q"], args["kv_cache"], args["indices"], args["extra_kv_cache"], args["extra_indices"]
    )
    assert spec == V4
    with pytest.raises(InputError, match=r"^kv_cache: no fp8 format has 584-byte tokens of 576"):
        sparse_spec_for(tensors()["q"], args["kv_cache"], args["indices"])


def test_v4_overlap_with_a_second_input_is_named(monkeypatch):
    runner = make_runner(monkeypatch, V4)
    args = v4_tensors()
    out = torch.zeros(BATCH, 2, 4, 512, dtype=torch.bfloat16)
    lse = args["extra_kv_cache"][1, 0, :64].view(torch.float32).view(2, 2, 4)  # in its 2nd page
    with pytest.raises(InputError, match="lse overlaps extra_kv_cache"):
        runner.run(**args, out=out, lse=lse)
    sink_in_out = out.view(-1)[:8].view(torch.float32)
    with pytest.raises(InputError, match="out overlaps attn_sink"):
        runner.run(**{**args, "attn_sink": sink_in_out}, out=out, lse=torch.zeros(2, 2, 4))
