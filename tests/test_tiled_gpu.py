"""The register-tiled float32 path (compute='tiled') on the GPU: against the float64 reference
(masks, page sizes, splits, rows that do not fill the 64-row block, lengths off the 64-position
tiles) and against the GEMV-style 'fma' path. (Non-finite draft KV that only some rows see:
tests/test_mla_gpu.py, beside the tensor-core path.)"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kgen.arch import resolve_arch
from kgen.mla import build
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


def under_sm120_smem():
    """This GPU's arch with sm_120's shared memory per block: the plan takes the 32-dim q.K^T
    steps (and 8-row V steps) that sm_120 builds at 3 and 4 stages, which the H200's 227 KB
    never needs, so that they run here too."""
    return dataclasses.replace(native(), smem_per_block=resolve_arch("sm_120").smem_per_block)


@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_tiled_32_dim_steps_match_reference(data):
    spec = data.draw(specs(dtypes=("float32",)), label="spec")
    arch = under_sm120_smem()
    config = data.draw(configs(spec, arch, computes=("tiled",)), label="config")
    config = dataclasses.replace(config, smem_stages=data.draw(st.sampled_from([3, 4])))
    kernel = build(spec, config, arch)
    assert kernel.layout.qk_chunk == 32, kernel.layout
    lens = data.draw(seq_lens(spec, max_prefix=300), label="seq_lens")
    w = make_workload(
        spec, lens, seed=data.draw(SEEDS), mask_kind=data.draw(st.sampled_from(["tree", "random"]))
    )
    out, lse = run_poisoned(kernel, w)
    check_attention(*to_numpy(out, lse), *reference_for(w), spec.dtype)
