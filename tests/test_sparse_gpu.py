"""The sparse MLA kernels on the GPU against the float64 reference (tests/sparse_reference.py,
which reads the fp8 cache's bytes itself): random specs x valid configs x random indices with -1
holes and duplicates, poisoned outputs, dense == sparse over every position, empty and invalid
rows, bad inputs. Run with `pytest -m gpu tests/test_sparse_gpu.py` on a GPU machine."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import kgen
from kgen.arch import resolve_arch
from kgen.mla import (
    Config,
    ConfigError,
    InputError,
    SparseConfig,
    SparseSpec,
    build,
    build_sparse,
    sparse_layout_for,
)
from kgen.mla.check import check_attention
from kgen.mla.sparse.workload import make_sparse_workload
from kgen.mla.workload import make_workload

from .mla_helpers import reference_for
from .reference import check_agreement
from .sparse_reference import sparse_reference

pytestmark = pytest.mark.gpu
SEEDS = st.integers(0, 2**31 - 1)


def native():
    return resolve_arch("native")


# The hypothesis suites run as SHARDS test items each (so pytest-xdist spreads their examples over
# workers): shard i draws its cache format and heads from its own part of the space, so the shards
# differ even under the derandomized profile.
SHARDS = 8
HEADS = ([1, 2, 3], [8, 16], [32, 64], [16, 128])


@st.composite
def sparse_specs(draw, shard: int | None = None):
    heads = [1, 2, 3, 8, 16, 32, 64, 128] if shard is None else HEADS[shard // 2 % len(HEADS)]
    formats = ["fp8", "bf16"] if shard is None else [("fp8", "bf16")[shard % 2]]
    return SparseSpec(
        heads=draw(st.sampled_from(heads)),
        q_len=draw(st.integers(1, 8)),
        topk=draw(st.one_of(st.integers(1, 40), st.integers(41, 300), st.just(2048))),
        kv_format=draw(st.sampled_from(formats)),
        page_size=draw(st.sampled_from([1, 64, 5])),
        dtype=draw(st.sampled_from(["bfloat16", "bfloat16", "float16"])),
    )


@st.composite
def sparse_configs(draw, spec: SparseSpec):
    """A SparseConfig the layout model accepts for spec on this GPU and on sm_120."""
    divisors = [d for d in range(1, spec.heads + 1) if spec.heads % d == 0 and d <= 64]
    warps = draw(st.sampled_from([2, 4, 8]))
    dequant = draw(
        st.sampled_from(["shared", "registers"] if spec.kv_format == "fp8" else ["shared"])
    )
    config = SparseConfig(
        heads_per_block=draw(st.sampled_from(divisors)),
        kv_splits=draw(st.sampled_from([1, 2, 3, 7, 16, 64])),
        block_n=draw(st.sampled_from([16, 32, 64])),
        smem_stages=2 if dequant == "registers" else draw(st.integers(2, 4)),
        gather_bytes=draw(st.sampled_from([4, 8, 16])),
        num_warps=warps,
        col_groups=draw(st.sampled_from([c for c in (1, 2, 4, 8) if c <= warps])),
        dequant=dequant,
        min_blocks=draw(st.sampled_from([0, 1])),
        merge=draw(st.sampled_from(["fused", "fused", "pdl"])),
        softmax=draw(st.sampled_from(["warp", "split"])),
    )
    try:
        for arch in (native(), resolve_arch("sm_120")):
            layout = sparse_layout_for(spec, config, arch)
    except ConfigError:
        assume(False)
    assume(layout.registers_estimate <= 255)
    return config


def run_poisoned(kernel, w, **kwargs):
    out, lse = w.poisoned_outputs()
    kernel(*w.args(), out=out, lse=lse, **kwargs)
    torch.cuda.synchronize()
    return out, lse


def reference(w):
    cache = w.kv_cache.cpu().numpy() if w.spec.kv_format == "fp8" else w.kv_cache.double().cpu()
    return sparse_reference(
        w.q.double().cpu().numpy(), np.asarray(cache), w.indices.cpu().numpy(), w.scale
    )


def to_numpy(out, lse):
    return out.double().cpu().numpy(), lse.double().cpu().numpy()


@pytest.mark.parametrize("shard", range(SHARDS))
@settings(max_examples=10)
@given(data=st.data())
def test_matches_reference(shard, data):
    spec = data.draw(sparse_specs(shard), label="spec")
    config = data.draw(sparse_configs(spec), label="config")
    w = make_sparse_workload(
        spec,
        data.draw(st.integers(1, 3), label="batch"),
        seed=data.draw(SEEDS),
        holes=data.draw(st.sampled_from([0.0, 0.2, 0.9])),
        duplicates=data.draw(st.sampled_from([0.0, 0.3])),
    )
    out, lse = run_poisoned(build_sparse(spec, config, "native"), w)
    check_attention(*to_numpy(out, lse), *reference(w), spec.dtype)


@pytest.mark.parametrize("shard", range(0, SHARDS, 2))
@settings(max_examples=5)
@given(data=st.data())
def test_auto_config_matches_reference(shard, data):
    spec = data.draw(sparse_specs(shard + data.draw(st.integers(0, 1))), label="spec")
    w = make_sparse_workload(spec, data.draw(st.integers(1, 4)), seed=data.draw(SEEDS))
    out, lse = w.poisoned_outputs()
    kgen.mla.sparse_attention(w.q, w.kv_cache, w.indices, w.scale, out=out, lse=lse)
    torch.cuda.synchronize()
    check_attention(*to_numpy(out, lse), *reference(w), spec.dtype)


@pytest.mark.parametrize("shard", range(0, SHARDS, 3))
@settings(max_examples=5)
@given(data=st.data())
def test_never_listed_rows_change_nothing(shard, data):
    spec = data.draw(sparse_specs(shard), label="spec")
    config = data.draw(sparse_configs(spec), label="config")
    w = make_sparse_workload(spec, 2, seed=data.draw(SEEDS))
    kernel = build_sparse(spec, config, "native")
    before = run_poisoned(kernel, w)
    rows = w.kv_cache.view(-1, w.kv_cache.shape[-1])
    hidden = torch.ones(rows.shape[0], dtype=torch.bool, device="cuda")
    hidden[w.indices[w.indices >= 0].long()] = False
    rows[hidden] = 0xFF if spec.kv_format == "fp8" else float("nan")  # NaN bytes / values
    after = run_poisoned(kernel, w)
    assert torch.equal(before[0], after[0]) and torch.equal(before[1], after[1])


@pytest.mark.parametrize("q_len", [1, 3])
@pytest.mark.parametrize("page_size", [1, 64])
def test_dense_equals_sparse_over_every_position(q_len, page_size):
    """The dense kernel over a bf16 cache == the sparse kernel whose indices list every position
    each query token sees (causal over its draft tokens)."""
    from kgen.mla import Spec

    mask = "none" if q_len == 1 else "causal"
    dense_spec = Spec(heads=16, q_len=q_len, page_size=page_size, mask=mask)
    w = make_workload(dense_spec, [q_len + 200, q_len + 77], seed=7, max_pages=None)
    dense = run_dense(dense_spec, w)
    table, lens = w.block_table.cpu(), w.seq_lens.cpu()
    topk = int(lens.max())
    indices = torch.full((2, q_len, topk), -1, dtype=torch.int32)
    for b, length in enumerate(lens.tolist()):
        for t in range(q_len):
            n = torch.arange(length - q_len + t + 1)
            indices[b, t, : len(n)] = table[b, n // page_size] * page_size + n % page_size
    spec = SparseSpec(heads=16, q_len=q_len, topk=topk, kv_format="bf16", page_size=page_size)
    for config in (
        SparseConfig(heads_per_block=16, kv_splits=1),
        SparseConfig(heads_per_block=8, kv_splits=5, block_n=32, num_warps=4, col_groups=4),
    ):
        out, lse = build_sparse(spec, config, "native")(w.q, w.kv_cache, indices.cuda(), w.scale)
        sparse = to_numpy(out, lse)
        check_attention(*sparse, *reference_for(w), "bfloat16")
        check_agreement(sparse, dense, "bfloat16")


def run_dense(spec, w):
    config = Config(heads_per_block=16, compute="mma", block_n=16, smem_stages=2)
    out, lse = build(spec, config, "native")(*w.args())
    torch.cuda.synchronize()
    return to_numpy(out, lse)


@pytest.mark.parametrize("kv_format", ["fp8", "bf16"])
def test_empty_rows_invalid_slots_and_validate(kv_format):
    spec = SparseSpec(heads=16, q_len=2, topk=50, kv_format=kv_format, page_size=64)
    w = make_sparse_workload(spec, 3, seed=3, holes=0.1)
    num_slots = w.kv_cache.shape[0] * w.kv_cache.shape[1]
    w.indices[0, 1] = -1  # sees nothing: out 0, lse -inf
    w.indices[2, 0, 49] = num_slots  # out of range: NaN row
    configs = (  # 64 splits > 4 tiles; the merge fused or a kernel of its own
        SparseConfig(kv_splits=1),
        SparseConfig(kv_splits=64),
        SparseConfig(kv_splits=64, merge="pdl"),
    )
    for config in configs:
        out, lse = run_poisoned(build_sparse(spec, config, "native"), w)
        assert torch.all(out[0, 1] == 0) and torch.all(lse[0, 1] == float("-inf"))
        assert out[2, 0].isnan().all() and lse[2, 0].isnan().all()
        check_attention(*to_numpy(out, lse), *reference(w), "bfloat16")
        with pytest.raises(InputError, match=r"indices\[2, 0, 49\]"):
            build_sparse(spec, config, "native")(*w.args(), validate=True)


def test_nan_in_one_query_row_stays_in_that_row():
    spec = SparseSpec(heads=16, q_len=2, topk=100, kv_format="fp8", page_size=64)
    w = make_sparse_workload(spec, 2, seed=4, holes=0)
    w.q[1, 0, 5, 7] = float("nan")
    out, lse = run_poisoned(build_sparse(spec, SparseConfig(kv_splits=3), "native"), w)
    check_attention(*to_numpy(out, lse), *reference(w), "bfloat16")
    assert out[1, 0, 5].isnan().all() and not out[1, 0, :5].isnan().any()


HOSTILE = ["equal-logits", "one-huge-logit", "arange"]


@pytest.mark.parametrize("case", HOSTILE)
@pytest.mark.parametrize("dequant", ["shared", "registers"])
def test_hostile_inputs(case, dequant):
    spec = SparseSpec(heads=32, q_len=1, topk=333, kv_format="fp8", page_size=64)
    w = make_sparse_workload(spec, 2, seed=5)
    rows = w.kv_cache.view(-1, 656)
    if case == "equal-logits":
        rows[:] = rows[int(w.indices[0, 0].max())]
    elif case == "one-huge-logit":
        big = kgen.mla.quantize_fp8((w.q[1, 0, 0].float() * 40).view(1, 1, 576))
        rows[int(w.indices[1, 0, 17].clamp(min=0))] = big.view(656)
    else:
        values = torch.arange(rows.numel() // 656 * 576, device="cuda", dtype=torch.float32)
        plain = ((values % 97) / 97 - 0.5).view(-1, 1, 576)
        rows.copy_(kgen.mla.quantize_fp8(plain).view(-1, 656))
    for config in (
        SparseConfig(heads_per_block=32, num_warps=8, dequant=dequant, kv_splits=4, min_blocks=1),
        SparseConfig(heads_per_block=16, block_n=32, dequant=dequant, min_blocks=1),
    ):
        out, lse = run_poisoned(build_sparse(spec, config, "native"), w)
        check_attention(*to_numpy(out, lse), *reference(w), "bfloat16")


def test_bad_inputs_raise_named_errors_before_launch():
    spec = SparseSpec(heads=16, q_len=1, topk=20, kv_format="fp8", page_size=64)
    w = make_sparse_workload(spec, 2, seed=6)
    with pytest.raises(InputError, match="q: expected dtype bfloat16"):
        kgen.mla.sparse_attention(w.q.float(), w.kv_cache, w.indices)
    with pytest.raises(InputError, match="indices: expected dtype torch.int32"):
        kgen.mla.sparse_attention(w.q, w.kv_cache, w.indices.long())
    with pytest.raises(InputError, match="kv_cache: expected a CUDA tensor"):
        kgen.mla.sparse_attention(w.q, w.kv_cache.cpu(), w.indices)
    with pytest.raises(InputError, match="kv_cache: no fp8 format has 600-byte tokens"):
        kgen.mla.sparse_attention(w.q, w.kv_cache[:, :, :600], w.indices)
    strided = torch.zeros(2, 1, 40, dtype=torch.int32, device="cuda")[..., ::2]
    with pytest.raises(InputError, match="indices: expected a contiguous last"):
        kgen.mla.sparse_attention(w.q, w.kv_cache, strided)


def test_plan_and_run_match_the_one_call_and_replay_in_a_graph():
    spec = SparseSpec(heads=16, q_len=1, topk=2048, kv_format="fp8", page_size=64)
    w = make_sparse_workload(spec, 4, seed=8)
    expected = kgen.mla.sparse_attention(*w.args())
    runner = kgen.mla.plan_sparse(spec, 4, scale=w.scale)
    out, lse = w.poisoned_outputs()
    runner.run(w.q, w.kv_cache, w.indices, out=out, lse=lse)
    assert torch.equal(out, expected[0]) and torch.equal(lse, expected[1])
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        runner.run(w.q, w.kv_cache, w.indices, out=out, lse=lse)  # warm-up outside capture
        with torch.cuda.graph(graph, stream=stream):
            runner.run(w.q, w.kv_cache, w.indices, out=out, lse=lse)
    fresh = make_sparse_workload(spec, 4, seed=9)
    w.q.copy_(fresh.q)
    w.indices.copy_(fresh.indices.clamp(max=w.kv_cache.shape[0] * 64 - 1))
    graph.replay()
    torch.cuda.synchronize()
    check_attention(*to_numpy(out, lse), *reference(w), "bfloat16")
