"""Every V4 shape FlashInfer's SM120 envelope refuses (issue 53, item 4) gets a default config that
compiles for sm_120 with no spills and at most 99 KB of shared memory: H in {1, 8, 16, 24, 32,
64, 128} x top-k in {128, 192, 512, 777, 1024, 1152, 2048} with a 128-entry second list, for
each fp8 format and a few batches; so does every DeepSeek-V4 case of the sweep's grid, for sm_90
and sm_120 (issue 53, item 5). top-k shapes the launch, not the code, so each distinct compiled
config is built once (compile-only, no GPU)."""

from __future__ import annotations

import re

import pytest

from kgen.arch import ARCHS, usual_sm_count
from kgen.mla import SparseSpec, build_sparse, default_sparse_config
from kgen.mla.sparse.program import compiled_fields, compiled_spec
from kgen.tune.space import load_grid

HEADS = (1, 8, 16, 24, 32, 64, 128)
TOPKS = (128, 192, 512, 777, 1024, 1152, 2048)
BATCHES = (1, 32, 128)
SM120_SMEM = 99 * 1024


def defaults(kv_format: str):
    """{(compiled spec, compiled config): the cases that share it}."""
    found = {}
    for heads in HEADS:
        spec = SparseSpec(
            heads, 1, 512, kv_format, 256 if kv_format == "v4_fp8" else 64, "bfloat16", 128, 64
        )
        for topk in TOPKS:
            for batch in BATCHES:
                config = default_sparse_config(
                    SparseSpec(**{**spec.to_dict(), "topk": topk}), "sm_120", batch
                )
                key = (spec, tuple(sorted(compiled_fields(config).items())))
                found.setdefault(key, (config, []))[1].append((heads, topk, batch))
    return found


@pytest.mark.parametrize("kv_format", ["v4_fp8", "v41_fp8"])
def test_the_envelope_compiles_for_sm120_without_spills(kv_format):
    report = []
    for (spec, _), (config, cases) in defaults(kv_format).items():
        kernel = build_sparse(spec, config, "sm_120")
        res = kernel.resources
        smem = res.static_smem + res.dynamic_smem
        report.append(
            f"{spec.short_name()} {config.short_name()}: {res.registers} regs, "
            f"{res.spills} B spilled, {smem} B smem ({len(cases)} cases)"
        )
        assert res.spills == 0, report[-1]
        assert smem <= SM120_SMEM, report[-1]
    print("\n".join(report))


def test_the_sanitizer_sample_covers_the_v4_op_with_configs_the_layout_takes():
    """tests/sanitize_sparse_sample.py (run under compute-sanitizer on the device machine): its
    V4 variants cover both fp8 formats, two caches, sinks, T > 1, both kinds of lengths, one
    split and several, both merges; every variant of the sample fits sm_90 and sm_120."""
    from kgen.arch import ARCHS
    from kgen.mla import sparse_layout_for

    from .sanitize_sparse_sample import SAMPLE, V4_CASES

    for spec, config in SAMPLE:
        for arch in ("sm_90", "sm_120"):
            sparse_layout_for(spec, config, ARCHS[arch])  # ConfigError where it does not fit
    v4 = [(spec, config, lengths, sink) for spec, config, _, lengths, sink in V4_CASES]
    assert {"v4_fp8", "v41_fp8"} <= {spec.kv_format for spec, *_ in v4}
    assert any(spec.has_extra and spec.q_len > 1 and sink != "none" for spec, _, _, sink in v4)
    assert {lengths for *_, lengths, _ in v4} >= {"row", "sequence"}
    assert {config.kv_splits > 1 for _, config, *_ in v4} == {True, False}
    assert {config.merge for _, config, *_ in v4 if config.kv_splits > 1} == {"fused", "pdl"}


V4_GRID = [c for c in load_grid(family="sparse") if c.spec.v4_op]


def test_the_v4_grid_block_is_the_issues():
    """H in {8, 16, 64, 128}, top-k 512 and 1024 plus a 128-entry window, T = 1 and 3, B = 1, 32,
    128, pages of 256 and 64: each value in some case, in few enough cases to time."""
    assert 12 <= len(V4_GRID) <= 16
    for case in V4_GRID:
        spec = case.spec
        name = f"dsv4-h{spec.heads}-k{spec.topk}-t{spec.q_len}-b{case.batch}"
        assert case.name == name
        assert (spec.kv_format, spec.page_size, spec.extra_topk, spec.extra_page_size) == (
            "v4_fp8",
            256,
            128,
            64,
        )
        assert spec.topk <= case.prefix and re.fullmatch(r"dsv4(-[a-z]\d+){4}", case.name)
    assert {c.spec.heads for c in V4_GRID} == {8, 16, 64, 128}
    assert {c.spec.topk for c in V4_GRID} == {512, 1024}
    assert {c.spec.q_len for c in V4_GRID} == {1, 3}
    assert {c.batch for c in V4_GRID} == {1, 32, 128}
    for heads in (8, 16, 64, 128):  # every head count at every batch
        assert {c.batch for c in V4_GRID if c.spec.heads == heads} == {1, 32, 128}


@pytest.mark.parametrize("arch", ["sm_90", "sm_120"])
def test_every_v4_grid_case_has_a_default_that_compiles_without_spills(arch):
    target = ARCHS[arch]
    built = {}
    for case in V4_GRID:
        config = default_sparse_config(case.spec, arch, case.batch, usual_sm_count(target))
        key = (tuple(compiled_spec(case.spec).items()), tuple(compiled_fields(config).items()))
        if key not in built:
            built[key] = build_sparse(case.spec, config, arch).resources
        res = built[key]
        assert res.spills == 0, (case.name, config.short_name(), res.summary())
        assert res.smem <= target.smem_per_block, (case.name, config.short_name(), res.summary())
    assert len(built) < len(V4_GRID)  # cases share binaries: top-k is a launch parameter
