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

SPEC = SparseSpec(heads=4, q_len=2, topk=5, kv_format="fp8", page_size=4)
CONFIG = SparseConfig(heads_per_block=4, kv_splits=3)
BATCH, PAGES = 2, 3


class RecordedLaunch:
    def __init__(self, params):
        self.params, self.sent = params, []

    def launch(self, stream: int) -> None:
        p = self.params
        self.sent.append({name: getattr(p, name) for name, _ in p._fields_})


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
