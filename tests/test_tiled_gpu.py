"""The register-tiled float32 path (compute='tiled') on the GPU: against the float64 reference
(masks, page sizes, splits, rows that do not fill the 64-row block, lengths off the 64-position
tiles), against the GEMV-style 'fma' path, and with non-finite draft KV that only some rows see."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from kgen.arch import resolve_arch
from kgen.mla import Config, Spec, build
from kgen.mla.workload import make_workload

from .mla_helpers import reference_for, run_poisoned, to_numpy
from .reference import check_attention
from .strategies import configs, seq_lens, specs

pytestmark = pytest.mark.gpu
SEEDS = st.integers(0, 2**31 - 1)


def native():
    return resolve_arch("native")


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_tiled_matches_reference(data):
    spec = data.draw(specs(dtypes=("float32",)), label="spec")
    config = data.draw(configs(spec, native(), computes=("tiled",)), label="config")
    lens = data.draw(seq_lens(spec, max_prefix=300), label="seq_lens")
    w = make_workload(
        spec, lens, seed=data.draw(SEEDS), mask_kind=data.draw(st.sampled_from(["tree", "random"]))
    )
    out, lse = run_poisoned(build(spec, config, "native"), w)
    check_attention(*to_numpy(out, lse), *reference_for(w), spec.dtype)


@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_tiled_agrees_with_fma(data):
    spec = data.draw(specs(dtypes=("float32",)), label="spec")
    tiled = data.draw(configs(spec, native(), computes=("tiled",)), label="tiled")
    fma = data.draw(configs(spec, native(), computes=("fma",)), label="fma")
    w = make_workload(spec, data.draw(seq_lens(spec, max_prefix=300)), seed=data.draw(SEEDS))
    a = to_numpy(*run_poisoned(build(spec, tiled, "native"), w))
    b = to_numpy(*run_poisoned(build(spec, fma, "native"), w))
    check_attention(*a, *b, spec.dtype)


@pytest.mark.parametrize("splits", [1, 3])
@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_tiled_nonfinite_draft_kv_reaches_only_the_rows_that_see_it(value, splits):
    """A draft position some rows must not see holds Inf/NaN in V (and K): only the rows that see
    it may change (0 x Inf would be NaN in P.V)."""
    spec = Spec(heads=8, q_len=6, dtype="float32", page_size=16, mask="tree")
    config = Config(
        heads_per_block=8,
        kv_splits=splits,
        vec_width=4,
        smem_stages=3,
        num_warps=8,
        block_n=64,
        compute="tiled",
    )
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
        check_attention(*to_numpy(out, lse), *reference_for(w), "float32")
    bad = out.isnan() | out.isinf()
    rows = bad.any(dim=-1).any(dim=-1)  # [B, T]
    assert rows[:, [3, 5]].all() and not rows[:, [0, 1, 2, 4]].any()
