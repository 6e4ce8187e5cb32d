"""plan/run without a GPU: a Runner on CPU tensors with the launch recorded instead of sent, so
the per-call checks, the packed parameters and the overlap refusal are tested here; the custom
op's fake implementation and its tracing by torch.compile run on fake CUDA tensors."""

from __future__ import annotations

import types

import pytest
import torch

import kgen
from kgen.arch import ARCHS
from kgen.mla import Config, Spec, layout_for, pack_tree_mask, running
from kgen.mla import runner as runner_module
from kgen.mla.inputs import InputError
from kgen.mla.runner import Runner
from kgen.mla.running import LOG2E

from .mla_helpers import RecordedLaunch

SPEC = Spec(heads=4, q_len=3, dtype="bfloat16", page_size=16, mask="tree")
CONFIG = Config(heads_per_block=2, kv_splits=4, vec_width=8, smem_stages=2, block_n=16)
BATCH, MAX_PAGES, PAGES = 2, 5, 12


@pytest.fixture
def runner(monkeypatch):
    monkeypatch.setattr(Runner, "_packed_launch", lambda self, grid: RecordedLaunch(self._params))
    monkeypatch.setattr(runner_module, "current_stream", lambda index: 1234)
    monkeypatch.setattr(running, "current_device", lambda: -1)
    kernel = types.SimpleNamespace(  # what a Runner reads of an MLAKernel; nothing compiled
        spec=SPEC, config=CONFIG, layout=layout_for(SPEC, CONFIG, ARCHS["sm_120"]), binary=None
    )
    return Runner(kernel, BATCH, MAX_PAGES, torch.device("cpu"), scale=0.25)


def tensors():
    d = SPEC.head_dim
    return {
        "q": torch.randn(BATCH, SPEC.q_len, SPEC.heads, d).to(torch.bfloat16),
        "kv_cache": torch.randn(PAGES, SPEC.page_size, d).to(torch.bfloat16),
        "block_table": torch.arange(BATCH * MAX_PAGES, dtype=torch.int32).view(BATCH, -1),
        "seq_lens": torch.tensor([20, 33], dtype=torch.int32),
        "mask": torch.ones(SPEC.q_len, SPEC.q_len, dtype=torch.bool).tril(),
    }


def run(runner, **changes):
    args = {**tensors(), **changes}
    return args, runner.run(**args)


def test_run_packs_pointers_and_planned_strides(runner):
    args, (out, lse) = run(runner)
    (sent,) = runner._launch.sent
    assert out.shape == (BATCH, SPEC.q_len, SPEC.heads, 512) and out.dtype == torch.bfloat16
    assert lse.shape == (BATCH, SPEC.q_len, SPEC.heads) and lse.dtype == torch.float32
    for name, field in (("q", "q"), ("kv_cache", "kv"), ("block_table", "block_table")):
        assert sent[field] == args[name].data_ptr()
    assert sent["seq_lens"] == args["seq_lens"].data_ptr()
    assert (sent["out"], sent["lse"]) == (out.data_ptr(), lse.data_ptr())
    assert (sent["q_sb"], sent["q_st"], sent["q_sh"]) == args["q"].stride()[:3]
    assert (sent["kv_sp"], sent["kv_sr"]) == args["kv_cache"].stride()[:2]
    assert (sent["o_sb"], sent["o_st"], sent["o_sh"]) == out.stride()[:3]
    assert (sent["num_pages"], sent["max_pages"], sent["bt_sb"]) == (PAGES, MAX_PAGES, MAX_PAGES)
    assert sent["scale_log2"] == pytest.approx(0.25 * LOG2E)
    assert sent["stream"] == 1234
    ws = runner.workspace
    assert sent["counters"] == ws.counters.data_ptr() and not ws.counters.any()
    assert sent["ws_o"] == ws.partials.data_ptr()


def test_a_bool_mask_is_packed_into_the_plans_buffer(runner):
    per_sequence = torch.rand(BATCH, SPEC.q_len, SPEC.q_len) < 0.5
    run(runner, mask=per_sequence)
    assert torch.equal(runner._bits, pack_tree_mask(per_sequence))
    assert runner._launch.sent[-1]["mask_sb"] == SPEC.q_len
    shared = torch.rand(SPEC.q_len, SPEC.q_len) < 0.5
    run(runner, mask=shared)
    assert torch.equal(runner._bits[0], pack_tree_mask(shared))
    assert runner._launch.sent[-1]["mask_sb"] == 0
    assert runner._launch.sent[-1]["mask"] == runner._bits.data_ptr()


def test_a_packed_mask_is_used_in_place(runner):
    for packed, sb in ((torch.tensor([1, 3, 5]), 0), (torch.tensor([[1, 3, 5], [1, 2, 4]]), 3)):
        run(runner, mask=packed)
        assert runner._launch.sent[-1]["mask"] == packed.data_ptr()
        assert runner._launch.sent[-1]["mask_sb"] == sb


def test_odd_strides_are_used_then_the_planned_ones_come_back(runner):
    wide = torch.zeros(BATCH, SPEC.q_len, SPEC.heads + 1, SPEC.head_dim, dtype=torch.bfloat16)
    run(runner, q=wide[:, :, 1:])  # a view: valid vector rows, other strides
    assert runner._launch.sent[-1]["q_sh"] == SPEC.head_dim
    assert runner._launch.sent[-1]["q_st"] == (SPEC.heads + 1) * SPEC.head_dim
    assert runner._launch.sent[-1]["q"] == wide[:, :, 1:].data_ptr()
    run(runner)
    assert runner._launch.sent[-1]["q_st"] == SPEC.heads * SPEC.head_dim


def test_out_and_lse_given_are_written_in_place(runner):
    out = torch.empty(BATCH, SPEC.q_len, SPEC.heads, 512, dtype=torch.bfloat16)
    lse = torch.empty(BATCH, SPEC.q_len, SPEC.heads)
    _, (got_out, got_lse) = run(runner, out=out, lse=lse)
    assert got_out is out and got_lse is lse
    assert runner._launch.sent[-1]["out"] == out.data_ptr()


@pytest.mark.parametrize(
    "name, change, message",
    [
        ("q", lambda t: t["q"].float(), r"q: expected dtype torch.bfloat16"),
        ("q", lambda t: t["q"][:1], r"q: expected batch 2 \(the plan's\)"),
        ("q", lambda t: t["q"][:, :2], r"q: expected shape \[2, 3, 4, 576\]"),
        ("q", lambda t: "q", r"q: expected a torch.Tensor"),
        ("q", lambda t: t["q"][0], r"q: expected 4 dimensions"),
        ("kv_cache", lambda t: t["kv_cache"][:, :8], r"kv_cache: expected shape"),
        (
            "block_table",
            lambda t: t["block_table"][:, :4],
            r"block_table: expected max_pages 5 \(the plan's\)",
        ),
        ("block_table", lambda t: t["block_table"].long(), r"block_table: expected dtype"),
        ("seq_lens", lambda t: t["seq_lens"][:1], r"seq_lens: expected batch 2 \(the plan's\)"),
        ("mask", lambda t: None, r"mask: expected a tree mask"),
        ("mask", lambda t: t["mask"][:2], r"mask: expected bool shape"),
        ("mask", lambda t: t["mask"].float(), r"mask: expected dtype bool"),
        ("mask", lambda t: torch.tensor([1, 2, 3, 4]), r"mask: expected packed int64 shape"),
    ],
)
def test_a_tensor_that_does_not_fit_the_plan_is_named(runner, name, change, message):
    with pytest.raises(InputError, match=message):
        run(runner, **{name: change(tensors())})
    assert not runner._launch.sent


def test_a_misaligned_q_is_refused(runner):
    q = tensors()["q"]
    flat = torch.zeros(q.numel() + 4, dtype=q.dtype)
    with pytest.raises(InputError, match=r"q: .*aligned to 16 bytes"):
        run(runner, q=flat[4:].view(q.shape))


def shared_memory(t):
    """seq_lens and the first elements of lse in one buffer."""
    buf = torch.zeros(BATCH * SPEC.q_len * SPEC.heads + 1, dtype=torch.float32)
    seq_lens = buf[:BATCH].view(torch.int32)
    seq_lens.copy_(t["seq_lens"])
    return {"seq_lens": seq_lens}, {"lse": buf[1:].view(BATCH, SPEC.q_len, SPEC.heads)}


def mask_in_out(t):
    """A bool mask made of out's first bytes."""
    out = torch.zeros(BATCH, SPEC.q_len, SPEC.heads, 512, dtype=torch.bfloat16)
    return {"mask": out.view(torch.bool)[0, 0, 0, :9].view(3, 3)}, {"out": out}


@pytest.mark.parametrize(
    "output, other, make",
    [
        ("out", "q", lambda t: ({}, {"out": t["q"][..., :512]})),
        (
            "out",
            "kv_cache",
            lambda t: ({}, {"out": t["kv_cache"].view(-1)[: 2 * 12 * 512].view(2, 3, 4, 512)}),
        ),
        ("lse", "seq_lens", shared_memory),
        ("out", "mask", mask_in_out),
    ],
)
def test_outputs_overlapping_an_input_are_refused_naming_both(runner, output, other, make):
    args = tensors()
    inputs, outputs = make(args)
    given = {
        "out": torch.empty(BATCH, SPEC.q_len, SPEC.heads, 512, dtype=torch.bfloat16),
        "lse": torch.empty(BATCH, SPEC.q_len, SPEC.heads),
        **outputs,
    }
    with pytest.raises(InputError, match=f"{output} overlaps {other}"):
        runner.run(**{**args, **inputs}, **given)
    assert not runner._launch.sent


def test_out_and_lse_overlapping_each_other_are_refused(runner):
    buf = torch.empty(BATCH * SPEC.q_len * SPEC.heads * 512, dtype=torch.bfloat16)
    out = buf.view(BATCH, SPEC.q_len, SPEC.heads, 512)
    lse = buf.view(torch.float32)[: BATCH * SPEC.q_len * SPEC.heads].view(BATCH, SPEC.q_len, -1)
    with pytest.raises(InputError, match="out overlaps lse"):
        run(runner, out=out, lse=lse)
    disjoint = torch.empty(BATCH * SPEC.q_len * SPEC.heads * (512 + 2), dtype=torch.bfloat16)
    out = disjoint[: out.numel()].view(out.shape)
    lse = disjoint[out.numel() :].view(torch.float32).view(lse.shape)
    run(runner, out=out, lse=lse)  # one buffer, two disjoint ranges: fine


def test_plan_arguments_are_checked_before_any_device_work():
    with pytest.raises(TypeError, match="spec"):
        kgen.mla.plan({"heads": 8}, 1, 4)
    with pytest.raises(ValueError, match="batch=-1"):
        kgen.mla.plan(SPEC, -1, 4)
    with pytest.raises(ValueError, match="max_pages=2.5"):
        kgen.mla.plan(SPEC, 1, 2.5)
    with pytest.raises(ValueError, match="expected a CUDA device"):
        kgen.mla.plan(SPEC, 1, 4, device="cpu")


def test_scale_must_be_finite(monkeypatch):
    monkeypatch.setattr(Runner, "_packed_launch", lambda self, grid: RecordedLaunch(self._params))
    kernel = types.SimpleNamespace(
        spec=SPEC, config=CONFIG, layout=layout_for(SPEC, CONFIG, ARCHS["sm_120"]), binary=None
    )
    with pytest.raises(ValueError, match="scale=inf"):
        Runner(kernel, 1, 1, torch.device("cpu"), scale=float("inf"))


def fake_call_tensors(mode, batch=2, q_len=3, heads=4):
    with mode:
        return {
            "q": torch.empty(batch, q_len, heads, 576, dtype=torch.bfloat16, device="cuda"),
            "kv_cache": torch.empty(10, 16, 576, dtype=torch.bfloat16, device="cuda"),
            "block_table": torch.empty(batch, 5, dtype=torch.int32, device="cuda"),
            "seq_lens": torch.empty(batch, dtype=torch.int32, device="cuda"),
            "out": torch.empty(batch, q_len, heads, 512, dtype=torch.bfloat16, device="cuda"),
            "lse": torch.empty(batch, q_len, heads, dtype=torch.float32, device="cuda"),
        }


def test_the_op_is_registered_with_its_mutations():
    schema = str(torch.ops.kgen.mla_attention.default._schema)
    assert schema.startswith("kgen::mla_attention(")
    assert "!) out" in schema and "!) lse" in schema and schema.endswith("-> ()")


def test_fake_impl_checks_shapes_under_fake_tensors():
    from torch._subclasses.fake_tensor import FakeTensorMode

    mode = FakeTensorMode()
    t = fake_call_tensors(mode)
    with mode:
        assert torch.ops.kgen.mla_attention(**t, causal=True) is None
        short = torch.empty(2, 2, 4, dtype=torch.float32, device="cuda")
        with pytest.raises(InputError, match="lse: expected float32"):
            torch.ops.kgen.mla_attention(**{**t, "lse": short}, causal=True)
        wide = torch.empty(2, 3, 4, 512, dtype=torch.float32, device="cuda")
        with pytest.raises(InputError, match="out: expected"):
            torch.ops.kgen.mla_attention(**{**t, "out": wide}, causal=True)
        with pytest.raises(InputError, match="not both"):
            torch.ops.kgen.mla_attention(**t, mask=t["seq_lens"], causal=True)


def test_attention_compiles_to_one_graph_with_the_op_functionalized():
    """torch.compile(fullgraph=True) of a function calling kgen.mla.attention: no graph break,
    the op in the graph, its out/lse mutation functionalized (auto_functionalized)."""
    from torch._functorch.aot_autograd import aot_module_simplified
    from torch._subclasses.fake_tensor import FakeTensorMode

    mode = FakeTensorMode()
    t = fake_call_tensors(mode)
    with mode:
        mask = torch.ones(3, 3, dtype=torch.bool, device="cuda")
    graphs = []

    def backend(gm, example_inputs):
        def keep(graph, _):
            graphs.append(graph)
            return graph.forward

        return aot_module_simplified(gm, example_inputs, fw_compiler=keep)

    def layer(q, kv_cache, block_table, seq_lens, mask):
        out, lse = kgen.mla.attention(q, kv_cache, block_table, seq_lens, mask)
        return out * 2, lse

    torch._dynamo.reset()
    compiled = torch.compile(layer, backend=backend, fullgraph=True)
    out, lse = compiled(t["q"], t["kv_cache"], t["block_table"], t["seq_lens"], mask)
    assert out.shape == (2, 3, 4, 512) and lse.shape == (2, 3, 4)
    (graph,) = graphs
    assert "kgen.mla_attention" in graph.code and "auto_functionalized" in graph.code


def test_the_runner_cache_evicts_but_keeps_what_a_graph_captured(monkeypatch):
    from kgen.mla.running import RunnerCache

    capturing = [False]
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: capturing[0])
    made = []
    side = 7  # a stream that can be captured (the legacy default stream, 0, cannot)

    def get(key, nbytes=100, stream=side):
        """What kernel(...) and attention(...) do: look up, else make and add."""
        runner = cache.get(key, stream)
        if runner is None:
            made.append(types.SimpleNamespace(workspace_bytes=nbytes, captured=False))
            runner = cache.add(key, made[-1], stream)
        return runner

    cache = RunnerCache(size=3, workspace_bytes=1000)
    first = get("a")
    assert get("a") is first and len(made) == 1  # a hit makes nothing
    capturing[0] = True
    assert get("a").captured  # ran inside a capture: its workspace is the graph's
    in_capture = get("b")
    # first made in a capture: not cached, but kept alive (its memory is the capture's)
    assert "b" not in cache._runners and in_capture.captured and cache._captured == [in_capture]
    capturing[0] = False
    for key in "cde":
        get(key)
    assert list(cache._runners) == ["c", "d", "e"] and cache._captured == [in_capture, first]
    get("big", 950)
    assert list(cache._runners) == ["big"]  # over the byte budget: the rest went


def test_the_runner_cache_finds_the_last_key_again_and_asks_no_capture_on_stream_0(monkeypatch):
    from kgen.mla.running import RunnerCache

    asked = []
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: asked.append(1))
    cache = RunnerCache()
    runner = types.SimpleNamespace(workspace_bytes=0, captured=False)
    key = ("k", torch.Size((1, 2)))
    assert cache.get(key, 0) is None
    assert cache.add(key, runner, 0) is runner
    assert cache.get(("k", torch.Size((1, 2))), 0) is runner  # an equal key: the same runner
    assert not asked  # the legacy default stream is never capturing
    cache.clear()
    assert cache.get(key, 0) is None  # cleared: nothing remembered either


@pytest.mark.parametrize("heads, hpb, warps", [(4, 2, 4), (5, 3, 4), (128, 48, 12)])
def test_the_workspace_holds_every_slot_the_kernel_addresses(monkeypatch, heads, hpb, warps):
    """The grid has a block for every head group (the last ragged where hpb does not divide the
    heads), and the workspace a slot for each split of each of their rows: the largest index
    templates/mla/combine.cuh's slot_row gives, ((b * HEAD_GROUPS + g) * S + s) * ROWS + r, is
    in it, and so is the last arrival counter of the last group."""
    spec = Spec(heads=heads, q_len=1, dtype="bfloat16", page_size=16)
    config = Config(
        heads_per_block=hpb,
        kv_splits=3,
        compute="mma",
        smem_stages=3,
        block_n=16,
        num_warps=warps,
        softmax="split",
    )
    grids = []
    monkeypatch.setattr(
        Runner, "_packed_launch", lambda self, grid: grids.append(grid) or RecordedLaunch(None)
    )
    kernel = types.SimpleNamespace(
        spec=spec, config=config, layout=layout_for(spec, config, ARCHS["sm_120"]), binary=None
    )
    ws = Runner(kernel, BATCH, MAX_PAGES, torch.device("cpu"), scale=0.25).workspace
    groups, rows, splits = -(-heads // hpb), hpb, config.kv_splits
    assert grids == [(groups, splits, BATCH)]
    last = ((BATCH * groups - 1) * splits + splits - 1) * rows + rows - 1
    assert ws.partials.shape[0] == ws.partial_lse.shape[0] == last + 1
    assert ws.counters.numel() == BATCH * groups * 4
