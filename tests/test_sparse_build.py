"""Sparse MLA variants without a GPU: the default configs fit sm_120, a sample of configs
compiles for sm_120 and sm_90 without spills within 99 KB of shared memory, unworkable configs
are refused before compiling with the field and the reason, and topk leaves the binary alone."""

from __future__ import annotations

import contextlib
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kgen.build
from kgen.arch import ARCHS
from kgen.compiler import compile_cubin
from kgen.mla import (
    ConfigError,
    SparseConfig,
    SparseConfigError,
    SparseSpec,
    build_sparse,
    sparse_layout_for,
)
from kgen.mla.sparse.heuristic import default_sparse_config
from kgen.mla.sparse.program import PARAMS, sparse_program
from kgen.resources import cubin_arch

SM120 = ARCHS["sm_120"]
SMEM_LIMIT = 101376

# (spec, config): the defaults of the benchmark shapes and the axes around them.
SAMPLE = [
    (SparseSpec(heads=16), default_sparse_config(SparseSpec(heads=16), 32, SM120, 188)),
    (SparseSpec(heads=128), default_sparse_config(SparseSpec(heads=128), 1, SM120, 188)),
    (
        SparseSpec(heads=64, q_len=4, kv_format="bf16", page_size=1),
        SparseConfig(heads_per_block=32, block_n=32, num_warps=8, min_blocks=1),
    ),
    (
        SparseSpec(heads=16, q_len=2, dtype="float16"),
        SparseConfig(dequant="registers", gather_bytes=8, min_blocks=1),
    ),
    (
        SparseSpec(heads=8),
        SparseConfig(
            heads_per_block=8, block_n=16, num_warps=2, col_groups=2, gather_bytes=4, min_blocks=1
        ),
    ),
]


@pytest.mark.parametrize(
    "spec, config, arch",
    [(spec, config, "sm_120") for spec, config in SAMPLE]
    + [(spec, config, "sm_90") for spec, config in SAMPLE[:2]],
    ids=lambda x: x if isinstance(x, str) else x.short_name(),
)
def test_sample_compiles_without_spills(spec, config, arch):
    kernel = build_sparse(spec, config, arch=arch)
    assert cubin_arch(kernel.cubin) == arch
    res = kernel.resources
    assert res.spills == 0, res
    assert res.smem <= SMEM_LIMIT and res.occupancy.blocks_per_sm >= 1, res
    assert res.threads == config.num_warps * 32


BENCH_SPECS = [
    SparseSpec(heads=h, q_len=t, kv_format=kv, page_size=ps, topk=k)
    for h in (1, 16, 64, 128)
    for t in (1, 4)
    for kv in ("fp8", "bf16")
    for ps in (1, 64)
    for k in (1, 100, 2048)
]


@pytest.mark.parametrize("batch", [1, 32, 128])
def test_default_configs_fit_sm120(batch):
    for spec in BENCH_SPECS:
        config = default_sparse_config(spec, batch, SM120, 188)
        layout = sparse_layout_for(spec, config, SM120)
        assert layout.dynamic_smem <= SMEM_LIMIT
        tiles = -(-spec.topk // config.block_n)
        assert 1 <= config.kv_splits <= max(1, tiles)
        # one wave at most: a few blocks past it would cost a second
        occupancy = SM120.occupancy(layout.threads, layout.registers_estimate, layout.dynamic_smem)
        blocks = batch * spec.q_len * -(-spec.heads // config.heads_per_block)
        wave = 188 * max(1, occupancy.blocks_per_sm)
        assert config.kv_splits == 1 or blocks * config.kv_splits <= wave
        if spec.heads >= 16:
            assert layout.m_tiles * 16 == config.heads_per_block or spec.heads < 32


@pytest.mark.parametrize(
    "spec, config, field, reason",
    [
        (SparseSpec(heads=8), SparseConfig(heads_per_block=16), "heads_per_block", "at most"),
        (
            SparseSpec(heads=16, kv_format="v4_fp8"),
            SparseConfig(col_groups=8, num_warps=8),
            "col_groups",
            "28 k steps",
        ),
        (SparseSpec(heads=16), SparseConfig(block_n=24), "block_n", "multiple of 16"),
        (SparseSpec(heads=16), SparseConfig(block_n=128), "block_n", "up to 64"),
        (
            SparseSpec(heads=16),
            SparseConfig(num_warps=1, col_groups=1, block_n=64),
            "block_n",
            "divide the 32",
        ),
        (
            SparseSpec(heads=16, kv_format="bf16"),
            SparseConfig(dequant="registers"),
            "dequant",
            "fp8 cache",
        ),
        (
            SparseSpec(heads=16),
            SparseConfig(dequant="registers", smem_stages=3),
            "smem_stages",
            ": 2",
        ),
        (SparseSpec(heads=16), SparseConfig(smem_stages=1), "smem_stages", "at least 2"),
        (SparseSpec(heads=16), SparseConfig(col_groups=3), "col_groups", "divide num_warps"),
        (
            SparseSpec(heads=48),
            SparseConfig(heads_per_block=48, num_warps=8, col_groups=4),
            "col_groups",
            "row groups",
        ),
        (
            SparseSpec(heads=32),
            SparseConfig(heads_per_block=32, num_warps=8, block_n=32, smem_stages=3),
            "smem_stages",
            "101376",
        ),
        (
            SparseSpec(heads=128),
            SparseConfig(heads_per_block=128, num_warps=8, col_groups=4),
            "heads_per_block",
            "101376",
        ),
        (SparseSpec(heads=16), SparseConfig(min_blocks=13), "min_blocks", "1536 threads"),
    ],
)
def test_refusals_name_field_and_reason(spec, config, field, reason):
    with pytest.raises(SparseConfigError, match=rf"SparseConfig\.{field}=.*{reason}"):
        sparse_layout_for(spec, config, SM120)


def test_the_pdl_merge_needs_sm90_and_builds_both_kernels_for_sm120():
    with pytest.raises(SparseConfigError, match=r"SparseConfig\.merge='pdl': .*sm_90 or later"):
        sparse_layout_for(SparseSpec(heads=16), SparseConfig(merge="pdl"), ARCHS["sm_80"])
    kernel = build_sparse(SparseSpec(heads=16), SparseConfig(merge="pdl", min_blocks=1), "sm_120")
    assert kernel.binary.program.entry_points == ("mla_sparse_attention", "mla_combine")
    for usage in kernel.binary.usage.values():
        assert usage.spill_stores == usage.spill_loads == 0


def test_sm90_takes_what_sm120_cannot():
    config = SparseConfig(heads_per_block=32, num_warps=8, block_n=32, smem_stages=3)
    sparse_layout_for(SparseSpec(heads=32), config, ARCHS["sm_90"])


@pytest.mark.parametrize(
    "cls, kwargs, field",
    [
        (SparseSpec, {"heads": 16, "kv_format": "fp4"}, "kv_format"),
        (SparseSpec, {"heads": 16, "dtype": "float32"}, "dtype"),
        (SparseSpec, {"heads": 16, "topk": 0}, "topk"),
        (SparseSpec, {"heads": 16, "q_len": 65}, "q_len"),
        (SparseConfig, {"dequant": "global"}, "dequant"),
        (SparseConfig, {"gather_bytes": 2}, "gather_bytes"),
        (SparseConfig, {"num_warps": 6}, "num_warps"),
        (SparseConfig, {"kv_splits": 1025}, "kv_splits"),  # the combine's MAX_SPLITS
    ],
)
def test_bad_fields_are_named(cls, kwargs, field):
    with pytest.raises(ValueError, match=rf"{cls.__name__}\.{field}="):
        cls(**kwargs)


@contextlib.contextmanager
def compiler_disabled():
    def no_compiling(*args, **kwargs):
        raise AssertionError("an invalid config reached the compiler")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(kgen.build, "compile_cubin", no_compiling)
        yield


@settings(max_examples=100)
@given(
    heads=st.sampled_from([1, 3, 16, 64, 128]),
    kv_format=st.sampled_from(["fp8", "bf16"]),
    hpb=st.sampled_from([1, 2, 16, 32, 64, 128]),
    block_n=st.sampled_from([16, 24, 32, 64]),
    stages=st.integers(1, 5),
    warps=st.sampled_from([1, 2, 4, 8, 16]),
    cols=st.sampled_from([1, 2, 4, 8]),
    dequant=st.sampled_from(["shared", "registers"]),
)
def test_invalid_configs_are_refused_before_compiling(
    heads, kv_format, hpb, block_n, stages, warps, cols, dequant
):
    spec = SparseSpec(heads=heads, kv_format=kv_format)
    config = SparseConfig(
        heads_per_block=hpb,
        block_n=block_n,
        smem_stages=stages,
        num_warps=warps,
        col_groups=cols,
        dequant=dequant,
    )
    try:
        layout = sparse_layout_for(spec, config, SM120)
    except ConfigError as err:
        assert str(err).startswith("SparseConfig.")
        with compiler_disabled(), pytest.raises(ConfigError):
            build_sparse(spec, config, arch="sm_120")
    else:  # what no accepted layout may break, checked here and not by the layout's own code
        # hpb need not divide heads: the last head group may be ragged (fewer heads)
        assert hpb <= heads and block_n % 16 == 0 and (32 * warps) % block_n == 0
        assert layout.threads == 32 * warps <= SM120.max_threads_per_block
        assert layout.dynamic_smem <= SM120.smem_per_block
        assert stages == 2 if dequant == "registers" else stages >= 2


def program(spec, config):
    return sparse_program(spec, config, sparse_layout_for(spec, config, SM120))


def test_topk_and_splits_leave_the_source_alone():
    spec, config = SAMPLE[0]
    other = program(replace(spec, topk=7), replace(config, kv_splits=3))
    assert program(spec, config).source == other.source
    assert program(spec, config).meta == other.meta


def test_the_template_binds_the_layout():
    spec, config = SAMPLE[3]
    source = program(spec, config).source
    assert "constexpr int DEQUANT = 1;" in source and "constexpr int GATHER_BYTES = 8;" in source
    assert "using T = __half;" in source and "constexpr int E4M3_DIMS = 512;" in source
    smem = sparse_layout_for(spec, config, SM120).main_smem
    assert f"constexpr int SMEM_BYTES = {smem};" in source


def test_params_struct_offsets_match_ctypes():
    source = "using T = float;\nusing QT = float;\n" + PARAMS.cpp()
    compile_cubin(source + "\n" + PARAMS.offset_checks() + "\n", "sm_120")


def test_former_field_names_still_work_for_a_release_with_a_warning():
    """SparseConfig's split_softmax and pdl_combine became softmax and merge (CHANGELOG.md)."""
    with pytest.warns(DeprecationWarning, match="is now"):
        old = SparseConfig(split_softmax=1, pdl_combine=1)
        assert SparseConfig.from_dict({"split_softmax": 0}).softmax == "warp"
    assert old == SparseConfig(softmax="split", merge="pdl")


@pytest.mark.parametrize("layout", [(41, 64, 656), (36, 256, 576, 256 * 576, 8)], ids=["v32", "v4"])
def test_the_read_only_gather_compiles_for_sm120_without_spills(layout):
    """bench/time_shipped.py --gather's kernel (kgen.tune.gather) builds for sm_120, for V3.2's
    rows and V4's (scale rows after a page's payload)."""
    from kgen.tune.gather import RowLayout, read_rows_program

    program = read_rows_program(RowLayout(*layout))
    usage = kgen.build.build_program(program, "sm_120").usage["read_rows"]
    assert usage.spill_stores == usage.spill_loads == 0
