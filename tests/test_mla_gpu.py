"""The MLA kernels on the GPU against the float64 reference, over random specs x valid configs x
fresh inputs, plus the properties that must hold whatever the config."""

from __future__ import annotations

import random
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kgen.arch import resolve_arch
from kgen.mla import Config, ConfigError, Spec, build, layout_for
from kgen.mla.mma_layout import three_row_config
from kgen.mla.tiled_layout import tiled_config
from kgen.mla.workload import make_workload

from .conftest import GPU
from .mla_helpers import never_visible, reference_for, run_poisoned, to_numpy
from .reference import check_agreement, check_attention, relative_errors
from .strategies import configs, seq_lens, specs

pytestmark = pytest.mark.gpu
SEEDS = st.integers(0, 2**31 - 1)


def native():
    return resolve_arch("native")


@settings(max_examples=80)
@given(data=st.data())
def test_matches_reference(data):
    spec = data.draw(specs(), label="spec")
    config = data.draw(configs(spec, native()), label="config")
    lens = data.draw(seq_lens(spec), label="seq_lens")
    w = make_workload(
        spec, lens, seed=data.draw(SEEDS), mask_kind=data.draw(st.sampled_from(["tree", "random"]))
    )
    out, lse = run_poisoned(build(spec, config, "native"), w)
    check_attention(*to_numpy(out, lse), *reference_for(w), spec.dtype)


@settings(max_examples=25)
@given(data=st.data())
def test_small_head_dims_match_reference(data):
    spec = data.draw(specs(small_dims=True, dtypes=("float32", "bfloat16")), label="spec")
    config = data.draw(configs(spec, native()), label="config")
    w = make_workload(spec, data.draw(seq_lens(spec)), seed=data.draw(SEEDS))
    out, lse = run_poisoned(build(spec, config, "native"), w)
    check_attention(*to_numpy(out, lse), *reference_for(w), spec.dtype)


@settings(max_examples=25)
@given(data=st.data())
def test_result_does_not_depend_on_the_config(data):
    spec = data.draw(specs(), label="spec")
    w = make_workload(spec, data.draw(seq_lens(spec)), seed=data.draw(SEEDS))
    first = data.draw(configs(spec, native()), label="first")
    second = data.draw(configs(spec, native()), label="second")
    a = to_numpy(*run_poisoned(build(spec, first, "native"), w))
    b = to_numpy(*run_poisoned(build(spec, second, "native"), w))
    check_agreement(a, b, spec.dtype)


@settings(max_examples=20)
@given(data=st.data())
def test_masked_out_kv_positions_change_nothing(data):
    import torch

    spec = data.draw(specs(), label="spec")
    config = data.draw(configs(spec, native()), label="config")
    w = make_workload(spec, data.draw(seq_lens(spec)), seed=data.draw(SEEDS), mask_kind="random")
    kernel = build(spec, config, "native")
    before = run_poisoned(kernel, w)
    hidden = torch.from_numpy(never_visible(w)).to(w.kv_cache.device)
    w.kv_cache[hidden] = float("nan")
    after = run_poisoned(kernel, w)
    assert torch.equal(before[0], after[0]) and torch.equal(before[1], after[1])


@settings(max_examples=20)
@given(data=st.data())
def test_permuting_pages_changes_nothing(data):
    import torch

    spec = data.draw(specs(), label="spec")
    config = data.draw(configs(spec, native()), label="config")
    w = make_workload(spec, data.draw(seq_lens(spec)), seed=data.draw(SEEDS))
    kernel = build(spec, config, "native")
    before = run_poisoned(kernel, w)
    perm = torch.randperm(
        w.kv_cache.shape[0], generator=torch.Generator().manual_seed(data.draw(SEEDS))
    )
    perm = perm.to(w.kv_cache.device)
    moved = torch.empty_like(w.kv_cache)
    moved[perm] = w.kv_cache  # page p now lives at perm[p]
    w.kv_cache, w.block_table = moved, perm[w.block_table.long()].to(torch.int32)
    after = run_poisoned(kernel, w)
    assert torch.equal(before[0], after[0]) and torch.equal(before[1], after[1])


@settings(max_examples=10)
@given(data=st.data())
def test_single_token_under_any_mask_is_decode(data):
    import torch

    base = data.draw(specs(), label="base")
    decode = Spec(**{**base.to_dict(), "q_len": 1, "mask": "none"})
    config = data.draw(configs(decode, native()), label="config")
    w = make_workload(decode, data.draw(seq_lens(decode)), seed=data.draw(SEEDS))
    expected = run_poisoned(build(decode, config, "native"), w)
    for mask, tensor in (
        ("causal", None),
        ("tree", torch.ones(1, 1, dtype=torch.bool, device="cuda")),
    ):
        spec = Spec(**{**decode.to_dict(), "mask": mask})
        w.spec, w.mask = spec, tensor
        got = run_poisoned(build(spec, config, "native"), w)
        if mask == "causal":  # hides nothing over one row: the decode kernel, the same bits
            assert torch.equal(expected[0], got[0]) and torch.equal(expected[1], got[1])
        else:  # the tree kernel reads its draft tile first: the same sums, rounded in another order
            check_agreement(to_numpy(*expected), to_numpy(*got), spec.dtype)


HOSTILE = ["equal-logits", "one-huge-logit", "arange"]


@pytest.mark.parametrize("case", HOSTILE)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_hostile_inputs(case, dtype):
    import torch

    spec = Spec(heads=4, q_len=3, dtype=dtype, page_size=16, mask="causal")
    w = make_workload(spec, [3, 90, 301], seed=1)
    if case == "equal-logits":
        w.kv_cache[:] = w.kv_cache[0, 0]  # every key the same: uniform attention
    elif case == "one-huge-logit":
        page, row = int(w.block_table[1, 2]), 5  # sequence 1, position 37
        w.kv_cache[page, row, :] = w.q[1, 0, 0] * 40  # a logit far above the rest (p ~ 1)
    else:
        values = torch.arange(w.kv_cache.numel(), device="cuda", dtype=torch.float32)
        w.kv_cache.copy_(((values % 97) / 97 - 0.5).reshape(w.kv_cache.shape))
    configs = [
        Config(heads_per_block=4, kv_splits=3, vec_width=4, smem_stages=2, block_n=8),
        Config(heads_per_block=1, kv_splits=1, vec_width=1, smem_stages=0, block_n=2),
    ]
    if dtype != "float32":
        configs += [
            Config(heads_per_block=4, kv_splits=3, smem_stages=2, block_n=16, compute="mma"),
            Config(
                heads_per_block=2,
                kv_splits=1,
                smem_stages=3,
                block_n=32,
                compute="mma",
                num_warps=8,
                col_groups=8,
            ),
        ]
    for config in configs:
        out, lse = run_poisoned(build(spec, config, "native"), w)
        check_attention(*to_numpy(out, lse), *reference_for(w), dtype)


def test_empty_rows_and_more_splits_than_tiles():
    """Prefix 0 and a tree row that sees nothing: out 0, lse -inf; 64 splits over 1 tile."""
    import torch

    spec = Spec(heads=2, q_len=4, dtype="float32", page_size=16, mask="tree")
    w = make_workload(spec, [4, 4 + 5], seed=2)
    w.mask = (
        torch.tensor(
            [[1, 0, 0, 0], [0, 0, 0, 0], [1, 1, 1, 0], [0, 0, 0, 1]],
            dtype=torch.bool,
            device="cuda",
        )
        .expand(2, 4, 4)
        .contiguous()
    )
    for config in (
        Config(kv_splits=1, vec_width=4, block_n=16),
        Config(kv_splits=64, vec_width=4, block_n=4),
    ):
        out, lse = run_poisoned(build(spec, config, "native"), w)
        assert torch.all(out[0, 1] == 0) and torch.all(lse[0, 1] == float("-inf"))
        check_attention(*to_numpy(out, lse), *reference_for(w), "float32")


def test_nan_in_one_query_row_stays_in_that_row():
    spec = Spec(heads=4, q_len=2, dtype="bfloat16", page_size=64, mask="causal")
    w = make_workload(spec, [130, 70], seed=3)
    w.q[1, 0, 2, 5] = float("nan")
    for config in (
        Config(heads_per_block=4, kv_splits=4),
        Config(heads_per_block=1, smem_stages=0, block_n=4),
        Config(heads_per_block=4, kv_splits=4, block_n=16, compute="mma"),
        Config(
            heads_per_block=2, kv_splits=1, block_n=32, compute="mma", num_warps=2, col_groups=2
        ),
    ):
        out, lse = run_poisoned(build(spec, config, "native"), w)
        check_attention(
            *to_numpy(out, lse), *reference_for(w), "bfloat16"
        )  # NaN exactly where ref has it
        assert out[1, 0, 2].isnan().all() and not out[1, 0, :2].isnan().any()


def test_invalid_sequences_give_nan_rows_or_raise_with_validate():
    import torch

    from kgen.mla.inputs import InputError

    spec = Spec(heads=2, q_len=2, dtype="float32", page_size=16, mask="causal")
    w = make_workload(spec, [40, 50, 60], seed=4)
    kernel = build(spec, Config(kv_splits=2, vec_width=4), "native")
    good = run_poisoned(kernel, w)
    w.seq_lens[0] = 1  # shorter than q_len
    w.block_table[2, 1] = w.kv_cache.shape[0] + 7  # a page that does not exist
    out, lse = run_poisoned(kernel, w)
    assert out[0].isnan().all() and out[2].isnan().all() and lse[0].isnan().all()
    assert torch.equal(out[1], good[0][1])  # the valid sequence is untouched
    with pytest.raises(InputError, match=r"seq_lens\[0\]=1"):
        kernel(*w.args(), validate=True)
    w.seq_lens[0] = 40
    with pytest.raises(InputError, match=r"block_table\[2, 1\]"):
        kernel(*w.args(), validate=True)
    w.block_table[2, 1] = 0
    w.seq_lens[1] = 10_000
    with pytest.raises(InputError, match=r"seq_lens\[1\]=10000.*holds only"):
        kernel(*w.args(), validate=True)


MMA_SAMPLE = [
    Config(heads_per_block=8, kv_splits=5, block_n=16, smem_stages=3, compute="mma"),
    Config(
        heads_per_block=4,
        kv_splits=1,
        block_n=32,
        smem_stages=2,
        num_warps=8,
        col_groups=4,
        compute="mma",
    ),
    Config(
        heads_per_block=2,
        kv_splits=64,
        block_n=64,
        smem_stages=2,
        num_warps=2,
        col_groups=2,
        compute="mma",
    ),
]


# The paths whose P.V multiplies every row's P by every V row (0 x Inf = NaN): the tensor cores
# (the scan + scalar fold) and the tiled float32 path (its row-by-row draft steps), one and three
# splits of the latter
NONFINITE_SAMPLE = [("bfloat16", config) for config in MMA_SAMPLE] + [
    ("float32", tiled_config(8, smem_stages=3, kv_splits=splits)) for splits in (1, 3)
]


@pytest.mark.parametrize(
    "dtype,config", NONFINITE_SAMPLE, ids=lambda x: x if isinstance(x, str) else x.short_name()
)
@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_nonfinite_draft_kv_reaches_only_the_rows_that_see_it(dtype, config, value):
    """A draft position some rows must not see holds Inf/NaN in V, yet only the rows that see it
    may change."""
    import torch

    spec = Spec(heads=8, q_len=6, dtype=dtype, page_size=16, mask="tree")
    w = make_workload(spec, [6 + 50, 6 + 130], seed=11)
    tree = torch.tensor(
        [
            [1, 0, 0, 0, 0, 0],
            [1, 1, 0, 0, 0, 0],
            [1, 0, 1, 0, 0, 0],
            [1, 1, 0, 1, 0, 0],
            [1, 0, 1, 0, 1, 0],
            [1, 1, 0, 1, 0, 1],
        ],
        dtype=torch.bool,
        device="cuda",
    )
    w.mask = tree.expand(2, 6, 6).contiguous()
    for b, length in enumerate(w.seq_lens.tolist()):
        n = length - 6 + 3  # draft 3: seen by rows 3 and 5 only
        page = int(w.block_table[b, n // 16])
        w.kv_cache[page, n % 16, : spec.latent_dim] = value
    out, lse = run_poisoned(build(spec, config, "native"), w)
    if value != value:
        check_attention(*to_numpy(out, lse), *reference_for(w), dtype)
    bad = out.float().isnan() | out.float().isinf()
    rows = bad.any(dim=-1).any(dim=-1)  # [B, T]
    assert rows[:, [3, 5]].all() and not rows[:, [0, 1, 2, 4]].any()


@settings(max_examples=20)
@given(data=st.data())
def test_mma_agrees_with_fma(data):
    spec = data.draw(specs(dtypes=("float16", "bfloat16")), label="spec")
    fma = data.draw(configs(spec, native(), computes=("fma",)), label="fma")
    mma = data.draw(configs(spec, native(), computes=("mma",)), label="mma")
    w = make_workload(spec, data.draw(seq_lens(spec)), seed=data.draw(SEEDS))
    a = to_numpy(*run_poisoned(build(spec, fma, "native"), w))
    b = to_numpy(*run_poisoned(build(spec, mma, "native"), w))
    check_agreement(a, b, spec.dtype)


PDL_SAMPLE = [
    Config(heads_per_block=4, kv_splits=3, block_n=16, smem_stages=3, compute="mma", merge="pdl"),
    Config(
        heads_per_block=2,
        kv_splits=40,
        block_n=32,
        smem_stages=2,
        num_warps=4,
        col_groups=4,
        compute="mma",
        merge="pdl",
    ),
    Config(
        heads_per_block=1,
        kv_splits=200,
        block_n=16,
        smem_stages=3,
        num_warps=4,
        col_groups=4,
        compute="mma",
        merge="pdl",
    ),
]


@pytest.mark.parametrize("config", PDL_SAMPLE, ids=lambda c: f"s{c.kv_splits}")
def test_the_pdl_merge_edge_rows_and_invalid_sequences(config):
    """The merge kernel of merge="pdl": a row that sees nothing (out 0, lse -inf), more splits
    than tiles (empty splits weigh nothing), invalid sequences (NaN rows, the valid one
    untouched), against the reference and the fused merge; the same bits on every launch."""
    import torch

    spec = Spec(heads=4, q_len=4, dtype="bfloat16", page_size=16, mask="tree")
    w = make_workload(spec, [4, 4 + 37, 300], seed=5)
    w.mask = (
        torch.tensor(
            [[1, 0, 0, 0], [0, 0, 0, 0], [1, 1, 1, 0], [0, 1, 0, 1]],
            dtype=torch.bool,
            device="cuda",
        )
        .expand(3, 4, 4)
        .contiguous()
    )
    kernel = build(spec, config, "native")
    fused = build(spec, replace(config, merge="fused"), "native")
    out, lse = run_poisoned(kernel, w)
    assert torch.all(out[0, 1] == 0) and torch.all(lse[0, 1] == float("-inf"))
    check_attention(*to_numpy(out, lse), *reference_for(w), spec.dtype)
    again = run_poisoned(kernel, w)
    assert torch.equal(out, again[0]) and torch.equal(lse, again[1])
    f_out, f_lse = run_poisoned(fused, w)
    assert relative_errors(*(x.double().cpu().numpy() for x in (out, f_out))).max() <= 1e-2
    np.testing.assert_allclose(lse.cpu().numpy(), f_lse.cpu().numpy(), atol=1e-3, rtol=0)

    w.seq_lens[0] = 1  # shorter than q_len
    w.block_table[2, 3] = w.kv_cache.shape[0] + 7  # a page that does not exist
    bad_out, bad_lse = run_poisoned(kernel, w)
    assert bad_out[0].isnan().all() and bad_out[2].isnan().all() and bad_lse[2].isnan().all()
    assert torch.equal(bad_out[1], out[1]) and torch.equal(bad_lse[1], lse[1])


# Ragged head groups (the mma row path): (heads, q_len, mask, heads_per_block, num_warps,
# col_groups), the last head group holding fewer heads than the others.
RAGGED_SHAPES = [
    (128, 1, "none", 48, 12, 4),  # 48-row 12-warp blocks: head groups of 48, 48, 32
    (8, 16, "tree", 3, 12, 4),  # 3, 3, 2 heads of 16 rows
    (5, 16, "causal", 3, 12, 4),
    (12, 8, "tree", 5, 12, 4),  # 40 rows (three m16 tiles), head groups 5, 5, 2
    (64, 8, "tree", 6, 12, 4),  # sm_120's verification default: 10 groups of 6 heads, then 4
    (5, 1, "none", 3, 4, 4),
    (7, 4, "tree", 2, 4, 4),
    (16, 2, "causal", 6, 4, 4),
]


def _drawn_spec(rng: random.Random, heads: int, q_len: int, mask: str) -> Spec:
    """A 16-bit spec of these heads, draft length and mask, its dtype then its page size drawn."""
    return Spec(
        heads=heads,
        q_len=q_len,
        dtype=rng.choice(["float16", "bfloat16"]),
        page_size=rng.choice([1, 16, 64]),
        mask=mask,
    )


def _ragged_sample(count: int = 21) -> list[tuple[Spec, Config, list[int]]]:
    """A fixed spread of ragged variants over RAGGED_SHAPES, each valid for the GPU here."""
    rng = random.Random(11)
    sample = []
    while len(sample) < count:
        heads, q_len, mask, hpb, warps, cols = RAGGED_SHAPES[len(sample) % len(RAGGED_SHAPES)]
        spec = _drawn_spec(rng, heads, q_len, mask)
        stages = rng.choice([2, 3, 4])
        softmax = rng.choice(["warp", "split"])
        config = Config(
            heads_per_block=hpb,
            kv_splits=rng.choice([1, 3, 16]),
            smem_stages=stages,
            num_warps=warps,
            col_groups=cols,
            block_n=rng.choice([16, 32]),
            compute="mma",
            qk_ahead=rng.choice([0, 1]) if stages >= 3 else 0,
            min_blocks=rng.choice([0, 1]),
            softmax=softmax,
            merge=rng.choice(["fused", "pdl"]) if native().major >= 9 else "fused",
        )
        try:
            layout_for(spec, config, native())
        except ConfigError:
            continue
        lens = [rng.choice([q_len, 17 + q_len, 300, 1000]) for _ in range(rng.choice([1, 3]))]
        sample.append((spec, config, lens))
    return sample


@pytest.mark.parametrize("spec,config,lens", _ragged_sample() if GPU else [])
def test_ragged_head_groups_match_reference_and_write_no_other_head(spec, config, lens):
    """Every element of out and lse written and right; nothing written for the heads past
    spec.heads that the last head group's block would hold (out is a view of a buffer with
    more heads, which keep their sentinel)."""
    import torch

    assert spec.heads % config.heads_per_block
    w = make_workload(spec, lens, seed=len(lens) * 1000 + config.kv_splits, mask_kind="random")
    b, t, h = w.batch, spec.q_len, spec.heads
    spare = config.heads_per_block  # as many heads again as a head group holds
    wide = torch.full((b, t, h + spare, spec.latent_dim), 7.0, dtype=w.q.dtype, device=w.q.device)
    out = wide[:, :, :h]
    out.fill_(float("nan"))
    lse_buffer = torch.full((b * t * h + 64,), 7.0, device=w.q.device)
    lse = lse_buffer[: b * t * h].view(b, t, h).fill_(float("nan"))
    build(spec, config, "native")(*w.args(), out=out, lse=lse)
    torch.cuda.synchronize()
    assert (wide[:, :, h:] == 7.0).all() and (lse_buffer[b * t * h :] == 7.0).all()
    check_attention(*to_numpy(out, lse), *reference_for(w), spec.dtype)


def _ring_sample(count: int = 12) -> list[tuple[Spec, Config, list[int]]]:
    """Three-row 12-warp variants whose KV tile ring runs on a barrier a stage (ring_slack 1):
    draft masks, ragged and whole head groups, pages of 1 / 16 / 64 positions, one
    split or several (the PDL merge and the fused one, which reuses shared memory below the
    ring's barriers), 3 to 8 stages where this GPU holds them; sequences long enough for each
    stage to be refilled many times."""
    rng = random.Random(36)
    shapes = [(64, 16, "tree", 3), (8, 16, "tree", 3), (48, 1, "none", 48), (12, 8, "causal", 5)]
    sample = []
    while len(sample) < count:
        heads, q_len, mask, hpb = shapes[len(sample) % len(shapes)]
        spec = _drawn_spec(rng, heads, q_len, mask)
        stages = rng.choice([3, 4, 6, 8])
        config = three_row_config(
            hpb,
            kv_splits=rng.choice([1, 2, 5]),
            smem_stages=stages,
            min_blocks=1,
            softmax="split",
            merge=rng.choice(["fused", "pdl"]) if native().major >= 9 else "fused",
            ring_slack=1,
        )
        try:
            layout_for(spec, config, native())
        except ConfigError:
            continue
        lens = [rng.choice([q_len + 700, 2000, 3000]) for _ in range(rng.choice([1, 3]))]
        sample.append((spec, config, lens))
    return sample


@pytest.mark.parametrize("spec,config,lens", _ring_sample() if GPU else [])
def test_ring_slack_matches_reference_and_the_lockstep_block_bit_for_bit(spec, config, lens):
    """A ring-synchronised block computes each row exactly as the block-barrier one does (the same
    tiles in the same order): out and lse equal bit for bit, every element written, and right
    against the float64 reference."""
    import torch

    w = make_workload(spec, lens, seed=sum(lens) + config.ring_slack, mask_kind="random")
    out, lse = run_poisoned(build(spec, config, "native"), w)
    want_out, want_lse = run_poisoned(build(spec, replace(config, ring_slack=0), "native"), w)
    assert torch.equal(out, want_out) and torch.equal(lse, want_lse)
    check_attention(*to_numpy(out, lse), *reference_for(w), spec.dtype)


def _token_group_sample(count: int = 12) -> list[tuple[Spec, Config, list[int]]]:
    """Blocks serving a slice of the draft tokens (token_groups > 1): the q_len 49-64 trees and
    chains the heuristic cuts in two, token groups that leave the last one ragged (57, 49, 7), head
    groups ragged too, one split or several (both merges where this GPU has PDL)."""
    rng = random.Random(53)
    shapes = [  # (heads, q_len, mask, heads_per_block, token_groups, num_warps)
        (16, 64, "tree", 1, 2, 8),
        (128, 49, "causal", 1, 2, 8),
        (8, 57, "tree", 2, 2, 8),
        (5, 7, "tree", 2, 3, 4),
        (3, 33, "causal", 1, 4, 4),
        (1, 64, "tree", 1, 2, 8),
    ]
    sample = []
    for attempt in range(50 * count):
        if len(sample) == count:
            break
        heads, q_len, mask, hpb, groups, warps = shapes[attempt % len(shapes)]
        spec = _drawn_spec(rng, heads, q_len, mask)
        config = Config(
            heads_per_block=hpb,
            kv_splits=rng.choice([1, 3, 16]),
            smem_stages=rng.choice([2, 3]),
            num_warps=warps,
            col_groups=4,
            block_n=rng.choice([16, 32]),
            compute="mma",
            min_blocks=1,
            softmax=rng.choice(["warp", "split"]),
            merge=rng.choice(["fused", "pdl"]) if native().major >= 9 else "fused",
            token_groups=groups,
        )
        try:
            layout_for(spec, config, native())
        except ConfigError:
            continue
        lens = [rng.choice([q_len, 17 + q_len, 300, 1000]) for _ in range(rng.choice([1, 3]))]
        sample.append((spec, config, lens))
    assert len(sample) == count, "the token-group shapes give too few valid variants"
    return sample


@pytest.mark.parametrize("spec,config,lens", _token_group_sample() if GPU else [])
def test_token_groups_match_reference_and_write_no_other_row(spec, config, lens):
    """Every element of out and lse written and right against the float64 reference; nothing
    written past the op's tokens and heads (out and lse are views of larger buffers whose other
    elements keep their sentinel), whichever token group is ragged."""
    import torch

    w = make_workload(spec, lens, seed=sum(lens) + config.token_groups, mask_kind="random")
    b, t, h = w.batch, spec.q_len, spec.heads
    wide = torch.full((b, t + 2, h + 1, spec.latent_dim), 7.0, dtype=w.q.dtype, device=w.q.device)
    out = wide[:, :t, :h].fill_(float("nan"))
    lse_buffer = torch.full((b * t * h + 64,), 7.0, device=w.q.device)
    lse = lse_buffer[: b * t * h].view(b, t, h).fill_(float("nan"))
    build(spec, config, "native")(*w.args(), out=out, lse=lse)
    torch.cuda.synchronize()
    assert (wide[:, t:] == 7.0).all() and (wide[:, :t, h:] == 7.0).all()
    assert (lse_buffer[b * t * h :] == 7.0).all()
    check_attention(*to_numpy(out, lse), *reference_for(w), spec.dtype)
