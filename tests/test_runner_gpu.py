"""plan/run on the GPU: results against the float64 reference, no allocation in run, one CUDA
graph holding a run per layer that follows new seq_lens, block_table and mask contents, the
overlap refusal, plan refused inside capture; and torch.ops.kgen.mla_attention under
torch.compile (fullgraph, reduce-overhead) and opcheck."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import kgen
from kgen.mla import Config, Spec, pack_tree_mask
from kgen.mla.inputs import InputError
from kgen.mla.workload import make_workload, random_tree

from .mla_helpers import reference_for, to_numpy
from .reference import check_attention, mla_reference

pytestmark = pytest.mark.gpu
SPEC = Spec(heads=8, q_len=4, dtype="bfloat16", page_size=16, mask="tree")
CONFIG = Config(
    heads_per_block=8,
    kv_splits=3,
    vec_width=8,
    smem_stages=2,
    num_warps=8,
    block_n=16,
    compute="mma",
    col_groups=4,
)
BATCH, WIDTH, PAGES, LAYERS = 2, 6, 14, 6
# both merges of the splits: fused into the attention kernel, and a kernel of its own with PDL
CONFIGS = pytest.mark.parametrize(
    "config", [CONFIG, replace(CONFIG, merge="pdl")], ids=["fused", "pdl"]
)


@CONFIGS
def test_run_matches_the_reference_with_bool_and_packed_masks(config):
    import torch

    w = make_workload(SPEC, [37, 90], seed=1, max_pages=WIDTH)
    runner = kgen.mla.plan(SPEC, BATCH, WIDTH, config=config, scale=w.scale)
    out, lse = runner.run(w.q, w.kv_cache, w.block_table, w.seq_lens, w.mask)
    torch.cuda.synchronize()
    check_attention(*to_numpy(out, lse), *reference_for(w), SPEC.dtype)
    packed = runner.run(w.q, w.kv_cache, w.block_table, w.seq_lens, pack_tree_mask(w.mask))
    called = runner.kernel(*w.args())
    assert torch.equal(out, packed[0]) and torch.equal(lse, packed[1])
    assert torch.equal(out, called[0]) and torch.equal(lse, called[1])
    assert not runner.workspace.counters.any()  # every launch leaves them zero


@CONFIGS
def test_run_follows_the_current_stream_from_call_to_call(config):
    """run on one side stream, then on another, each behind a long sleep and a write of q on its
    own stream: each launch must queue behind its own stream's write. (A launch holds its config
    and rewrites the stream only when it changes: one left on the first stream would run the
    second call during the sleep, on the first q, and both merge kernels follow it.)"""
    import torch

    w = make_workload(SPEC, [37, 90], seed=3, max_pages=WIDTH)
    runner = kgen.mla.plan(SPEC, BATCH, WIDTH, config=config, scale=w.scale)
    bits = pack_tree_mask(w.mask)
    qs = [w.q.clone(), torch.randn_like(w.q)]
    expected = [runner.run(q, w.kv_cache, w.block_table, w.seq_lens, bits)[0] for q in qs]
    q = torch.zeros_like(w.q)
    out, lse = w.poisoned_outputs()
    sides = [torch.cuda.Stream(), torch.cuda.Stream()]
    assert sides[0].cuda_stream != sides[1].cuda_stream
    torch.cuda.synchronize()
    for side, new_q, want in zip(sides, qs, expected, strict=True):
        with torch.cuda.stream(side):
            torch.cuda._sleep(200_000_000)  # ~0.1 s of GPU time before the write
            q.copy_(new_q)
            runner.run(q, w.kv_cache, w.block_table, w.seq_lens, bits, out=out, lse=lse)
        torch.cuda.synchronize()
        assert torch.equal(out, want)


def allocations_made() -> int:
    """Device allocations this process's caching allocator has served so far."""
    import torch

    return torch.cuda.memory_stats()["allocation.all.allocated"]


def test_run_allocates_nothing_given_outputs():
    import torch

    w = make_workload(SPEC, [37, 90], seed=2, max_pages=WIDTH)
    runner = kgen.mla.plan(SPEC, BATCH, WIDTH, config=CONFIG, scale=w.scale)
    out, lse = w.poisoned_outputs()
    bits = pack_tree_mask(w.mask)
    for mask in (bits, w.mask, w.mask[0]):
        runner.run(w.q, w.kv_cache, w.block_table, w.seq_lens, mask, out=out, lse=lse)
        torch.cuda.synchronize()
        # allocations counted, not bytes held (those may fall meanwhile: the GC freeing others)
        before = allocations_made()
        runner.run(w.q, w.kv_cache, w.block_table, w.seq_lens, mask, out=out, lse=lse)
        assert allocations_made() == before


class Step:
    """One decode step's batch state, shared by every layer: lengths, page table, tree."""

    def __init__(self, seed: int):
        import torch

        gen = torch.Generator().manual_seed(seed)
        self.lens = [int(n) for n in torch.randint(SPEC.q_len, WIDTH * SPEC.page_size, (BATCH,))]
        table = torch.randperm(PAGES, generator=gen)[: BATCH * WIDTH].view(BATCH, WIDTH)
        self.table = table.to(torch.int32)
        self.mask = torch.stack([random_tree(SPEC.q_len, gen) for _ in range(BATCH)])

    def load_into(self, block_table, seq_lens, mask) -> None:
        """Write this step into the tensors a graph captured (in place: same addresses); the
        mask as bit rows (int64) or as it is (bool), whichever `mask` holds."""
        import torch

        block_table.copy_(self.table)
        seq_lens.copy_(torch.tensor(self.lens, dtype=torch.int32))
        tree = self.mask.cuda()
        mask.copy_(pack_tree_mask(tree) if mask.dtype == torch.int64 else tree)

    def reference(self, q, kv_cache, scale):
        return mla_reference(
            q.double().cpu().numpy(),
            kv_cache.double().cpu().numpy(),
            self.table.numpy(),
            np.array(self.lens),
            self.mask.numpy(),
            scale,
        )


@CONFIGS
@pytest.mark.parametrize("mask_form", ["bits", "bool"])
def test_one_graph_runs_every_layer_and_follows_new_step_inputs(monkeypatch, config, mask_form):
    """Many runs (a different cache and q per layer) captured in one graph after plan, with
    compiling forbidden; replays after seq_lens, block_table and mask contents change match
    the reference and eager runs. The mask as bit rows, or as a bool mask (run packs it: the
    packing is captured too)."""
    import torch

    gen = torch.Generator(device="cuda").manual_seed(3)
    shape = (BATCH, SPEC.q_len, SPEC.heads, SPEC.head_dim)
    qs = [torch.randn(shape, device="cuda", generator=gen).bfloat16() for _ in range(LAYERS)]
    caches = [
        torch.randn(PAGES, SPEC.page_size, SPEC.head_dim, device="cuda", generator=gen).bfloat16()
        for _ in range(LAYERS)
    ]
    outs = [torch.full((*shape[:3], 512), float("nan"), device="cuda").bfloat16() for _ in qs]
    lses = [torch.full(shape[:3], float("nan"), device="cuda") for _ in qs]
    block_table = torch.zeros(BATCH, WIDTH, dtype=torch.int32, device="cuda")
    seq_lens = torch.zeros(BATCH, dtype=torch.int32, device="cuda")
    bits = torch.zeros(
        (BATCH, SPEC.q_len) if mask_form == "bits" else (BATCH, SPEC.q_len, SPEC.q_len),
        dtype=torch.int64 if mask_form == "bits" else torch.bool,
        device="cuda",
    )
    scale = 0.1

    runner = kgen.mla.plan(SPEC, BATCH, WIDTH, config=config, scale=scale)
    monkeypatch.setenv("KGEN_NO_COMPILE", "1")  # nothing from here on may compile
    Step(10).load_into(block_table, seq_lens, bits)
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.graph(graph, stream=stream):
        for q, cache, out, lse in zip(qs, caches, outs, lses, strict=True):
            runner.run(q, cache, block_table, seq_lens, bits, out=out, lse=lse)
    torch.cuda.synchronize()
    assert all(o.isnan().all() for o in outs)  # captured, not run

    for seed in (11, 12, 13):
        step = Step(seed)
        step.load_into(block_table, seq_lens, bits)
        graph.replay()
        torch.cuda.synchronize()
        for layer in (0, LAYERS - 1):
            ref = step.reference(qs[layer], caches[layer], scale)
            check_attention(*to_numpy(outs[layer], lses[layer]), *ref, SPEC.dtype)
        for q, cache, out, lse in zip(qs, caches, outs, lses, strict=True):
            eager = runner.run(q, cache, block_table, seq_lens, bits)
            assert torch.equal(eager[0], out) and torch.equal(eager[1], lse)
        assert not runner.workspace.counters.any()


def test_plan_inside_capture_is_refused():
    import torch

    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph), pytest.raises(RuntimeError, match="plan before capturing"):
        kgen.mla.plan(SPEC, BATCH, WIDTH, config=CONFIG)


def test_out_overlapping_an_input_is_refused_naming_both():
    import torch

    w = make_workload(SPEC, [37, 90], seed=4, max_pages=WIDTH)
    with pytest.raises(InputError, match="out overlaps q"):
        kgen.mla.attention(*w.args(), config=CONFIG, out=w.q[..., :512])
    runner = kgen.mla.plan(SPEC, BATCH, WIDTH, config=CONFIG)
    _, lse = w.poisoned_outputs()
    with pytest.raises(InputError, match="lse overlaps kv_cache"):
        fake_lse = w.kv_cache.view(-1).view(torch.float32)[: lse.numel()].view(lse.shape)
        runner.run(w.q, w.kv_cache, w.block_table, w.seq_lens, w.mask, lse=fake_lse)


def test_attention_is_a_cached_plan_and_run():
    import torch

    from kgen.mla.running import runners

    w = make_workload(SPEC, [37, 90], seed=5, max_pages=WIDTH)
    first = kgen.mla.attention(*w.args(), config=CONFIG)
    count, used = len(runners._runners), next(reversed(runners._runners.values()))
    again = kgen.mla.attention(*w.args(), config=CONFIG)
    # the same plan ran again (a cache hit moves it to the end), and none was added or evicted
    assert next(reversed(runners._runners.values())) is used and len(runners._runners) == count
    runner = kgen.mla.plan(SPEC, BATCH, WIDTH, config=CONFIG, scale=w.scale)
    planned = runner.run(w.q, w.kv_cache, w.block_table, w.seq_lens, w.mask)
    for a, b in ((first, again), (first, planned)):
        assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])


def op_inputs(seed: int):
    import torch

    w = make_workload(SPEC, [37, 90], seed=seed, max_pages=WIDTH)
    out = torch.empty(BATCH, SPEC.q_len, SPEC.heads, 512, dtype=torch.bfloat16, device="cuda")
    lse = torch.empty(BATCH, SPEC.q_len, SPEC.heads, device="cuda")
    return w, out, lse


def test_the_op_passes_opcheck():
    import torch

    w, out, lse = op_inputs(6)
    args = (w.q, w.kv_cache, w.block_table, w.seq_lens, out, lse, w.mask, False, w.scale)
    torch.library.opcheck(torch.ops.kgen.mla_attention.default, args)


def test_compiled_equals_eager_and_reduce_overhead_captures_it():
    import torch

    def layer(q, kv_cache, block_table, seq_lens, mask, w_o):
        out, lse = kgen.mla.attention(q, kv_cache, block_table, seq_lens, mask, 0.1)
        return (out.float() @ w_o).relu(), lse

    w, _, _ = op_inputs(7)
    w_o = torch.randn(512, 64, device="cuda")
    args = (w.q, w.kv_cache, w.block_table, w.seq_lens, w.mask, w_o)
    eager = layer(*args)
    for mode in ("default", "reduce-overhead"):
        torch._dynamo.reset()
        compiled = torch.compile(layer, fullgraph=True, mode=mode)
        for _ in range(3):  # reduce-overhead: warm-up, record, replay
            got = compiled(*args)
        torch.cuda.synchronize()
        assert torch.equal(got[1], eager[1]), mode
        torch.testing.assert_close(got[0], eager[0], rtol=1e-5, atol=1e-5)
