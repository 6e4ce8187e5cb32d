"""The sweep's machinery without a GPU: enumeration, pruning, split candidates, the tuning
database (keys, staleness), resume and crash handling (with a stub trial executor), and the
compile-only path of `kgen sweep`."""

import json
import os
import subprocess
import sys
import time
from dataclasses import fields, replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kgen import __version__
from kgen.arch import ARCHS
from kgen.mla import Config, Spec, layout_for
from kgen.mla.dense import bucket
from kgen.mla.heuristic import default_config
from kgen.mla.rules import DENSE
from kgen.mla.tuning import TuningDB, code_stamp, staleness
from kgen.tune.space import (
    Axes,
    Case,
    enumerate_configs,
    load_grid,
    parse_case_overrides,
    prune,
    split_candidates,
)
from kgen.tune.sweep import SweepOptions, run_sweep
from kgen.tune.worker import TrialCrashed

ROOT = Path(__file__).resolve().parent.parent
GRID = load_grid(family="dense")


def test_grid_loads_every_case():
    assert len(GRID) == 14 and len(load_grid()) == 38
    tree = next(c for c in GRID if c.name == "kimi-tp1-verify-tree")
    assert (tree.spec.heads, tree.spec.q_len, tree.spec.mask, tree.batch, tree.prefix) == (
        64,
        16,
        "tree",
        1,
        16384,
    )
    assert next(c for c in GRID if c.name == "page1-decode").spec.page_size == 1


def test_enumeration_and_pruning():
    spec = Spec(heads=16, q_len=4, mask="causal")
    configs = enumerate_configs(spec, Axes())
    fma = [c for c in configs if c.compute == "fma"]
    mma = [c for c in configs if c.compute == "mma"]
    assert len(fma) == 5 * 2 * 6  # divisors of 16 x warps x (stages, block_n)
    # divisors x (warps, col_groups <= warps) x (tiles, q.K ahead where 3+ stages) x min_blocks
    # x softmax (every default col_groups is > 1); and specialized: divisors x (w8 c4, w4
    # c2) x the 3+ stage tiles x min_blocks (split softmax, no q.K ahead); and the 12-warp
    # three-row-group blocks: 12 heads (48 rows, ragged: 12 and 4) x (tiles, q.K ahead) x
    # min_blocks x softmax
    assert len(mma) == 5 * (2 + 3) * (3 * 2 + 1) * 2 * 2 + 5 * 2 * 3 * 2 + (3 * 2 + 1) * 2 * 2
    assert sum(c.body == "specialized" for c in mma) == 5 * 2 * 3 * 2
    twelve = [c for c in mma if c.num_warps == 12]
    assert {(c.heads_per_block, c.col_groups) for c in twelve} == {(12, 4)} and len(twelve) == 28
    pruned = prune(spec, configs, ARCHS["sm_120"])
    assert pruned.kept and pruned.refused
    assert {c.compute for c in pruned.kept} == {"fma", "mma"}
    # Named decisions, each for its own reason: a warp grid that cannot split the rows (hard), a
    # register estimate over sm_120's 255 (soft), and a plain pipeline that fits (kept).
    refused = dict(pruned.refused)
    mma_c2 = Config(
        heads_per_block=1, smem_stages=3, num_warps=4, block_n=16, compute="mma", col_groups=2
    )
    assert refused[mma_c2].startswith("Config.col_groups=2: 2 row groups")
    fma_wide = Config(heads_per_block=4, smem_stages=0, num_warps=4, block_n=4)
    assert refused[fma_wide].startswith("soft: about 272 registers per thread")
    assert Config(heads_per_block=1, smem_stages=2, num_warps=4, block_n=16) in pruned.kept
    # the rules between axes were applied once, by the enumeration: pruning refuses by resources
    reasons = [rule.reason.split("{")[0] for rule in DENSE]
    assert not [r for _, r in pruned.refused if any(x in r for x in reasons)]
    hard = [r for _, r in pruned.refused if r.startswith("Config.")]
    soft = [r for _, r in pruned.refused if r.startswith("soft: ")]
    assert hard and soft and len(hard) + len(soft) == len(pruned.refused)
    assert len(pruned.kept) + len(pruned.refused) == len(configs)
    assert not enumerate_configs(Spec(heads=4, dtype="float32"), Axes(computes=("mma",)))


def test_split_candidates_stay_within_tiles():
    case = Case("c", Spec(heads=8), batch=1, prefix=100)
    for config in (Config(heads_per_block=8, block_n=32), Config(heads_per_block=1, block_n=16)):
        splits = split_candidates(case, config, sm_count=132)
        assert splits == sorted(splits) and len(splits) <= 4
        assert max(splits) <= -(-case.max_len // config.block_n)


def test_case_overrides_parse_into_config_fields():
    assert parse_case_overrides("dsv3-tp1-batch") == ("dsv3-tp1-batch", {})
    assert parse_case_overrides("c:min_blocks=2,kv_splits=8") == (
        "c",
        {"min_blocks": 2, "kv_splits": 8},
    )
    assert parse_case_overrides("c:dequant=shared,block_n=16") == (
        "c",
        {"dequant": "shared", "block_n": 16},
    )


def test_split_candidates_fill_whole_waves_of_the_compiled_occupancy():
    # dsv3-tp8-decode-long: 32 sequences x 1 head group; 3 blocks per SM of 132 hold 12 splits
    # (384 blocks) in one wave, 13 would leave a tail
    case = Case("c", Spec(heads=16), batch=32, prefix=16384)
    config = Config(heads_per_block=16, block_n=16, compute="mma", col_groups=4)
    assert split_candidates(case, config, sm_count=132, blocks_per_sm=3) == [3, 6, 12, 24]
    assert split_candidates(case, config, sm_count=132, blocks_per_sm=1) == [1, 2, 4, 8]
    # 8 blocks a split (seed-fp32-verify's head groups): one wave holds 16 splits and leaves 4
    # slots idle; two whole waves hold 33 splits, not 2 x 16
    verify = Case("v", Spec(heads=64, q_len=8, dtype="float32", mask="tree"), batch=1, prefix=16384)
    tiled = Config(heads_per_block=8, block_n=64, compute="tiled", vec_width=4, num_warps=8)
    assert split_candidates(verify, tiled, sm_count=132, blocks_per_sm=1) == [4, 8, 16, 33]


def test_float32_defaults_take_the_tiled_path_where_a_block_holds_32_rows():
    arch = ARCHS["sm_120"]
    verify = default_config(
        Spec(heads=64, q_len=8, dtype="float32", mask="tree"), 1, 4096, arch, 188
    )
    assert (verify.compute, verify.heads_per_block, verify.smem_stages) == ("tiled", 8, 2)
    # 8 blocks a split: two whole waves of 188 SMs hold 47 splits (one wave, 23, leaves 4 idle);
    # of 132 SMs 33 (not 16); of 170 SMs two waves fill no better than one (21 splits)
    spec = Spec(heads=64, q_len=8, dtype="float32", mask="tree")
    splits = [default_config(spec, 1, 16384, arch, sms).kv_splits for sms in (188, 132, 170)]
    assert splits == [47, 33, 21]
    # 16 heads of one token: a tiled block would be three quarters padding
    decode = default_config(Spec(heads=16, dtype="float32"), 4, 4096, arch, 188)
    assert decode.compute == "fma"


@pytest.mark.parametrize("case", GRID, ids=lambda c: c.name)
@pytest.mark.parametrize("arch", ["sm_120", "sm_90"])
def test_default_config_is_valid_for_every_grid_case(case, arch):
    config = default_config(case.spec, case.batch, case.max_len, ARCHS[arch], sm_count=132)
    layout_for(case.spec, config, ARCHS[arch])
    assert config.kv_splits >= 1
    assert config.compute == ("tiled" if case.spec.dtype == "float32" else "mma")
    if arch == "sm_120":  # what every sm_120 card runs today: it must fit and not spill
        from kgen.mla import build

        res = build(case.spec, config, arch).resources
        assert res.smem <= ARCHS[arch].smem_per_block and res.spills == 0, res.summary()


@settings(max_examples=8, deadline=None)
@given(
    heads=st.sampled_from([1, 3, 8, 16, 32, 64, 128]),
    mask=st.sampled_from(["none", "causal", "tree"]),
    q_len=st.sampled_from([1, 2, 3, 5, 8, 16]),
    dtype=st.sampled_from(["bfloat16", "float16", "float32"]),
    page_size=st.sampled_from([1, 16, 64]),
    batch=st.sampled_from([1, 4, 32]),
    max_len=st.sampled_from([2048, 16384]),
)
def test_the_sm120_default_of_any_shape_fits_and_does_not_spill(
    heads, mask, q_len, dtype, page_size, batch, max_len
):
    """What config='auto' gives every sm_120 card (no tuned entries there) for shapes off the
    grid too: it compiles within the block's shared memory and without spills."""
    from kgen.mla import build
    from kgen.mla.dense import compiled_default

    q_len = 1 if mask == "none" else q_len
    spec = Spec(heads=heads, q_len=q_len, dtype=dtype, page_size=page_size, mask=mask)
    arch = ARCHS["sm_120"]
    config = compiled_default(spec, batch, max_len, arch, sm_count=188)
    res = build(spec, config, arch).resources
    assert res.smem <= arch.smem_per_block and res.spills == 0, (config.short_name(), res.summary())


def test_the_default_refits_its_splits_to_the_compiled_kernels_blocks_per_sm(monkeypatch):
    from types import SimpleNamespace

    from kgen.mla import dense

    case = next(c for c in GRID if c.name == "dsv3-tp1-batch")  # 64 blocks before splitting
    args = (case.spec, case.batch, case.max_len, ARCHS["sm_90"], 132)
    estimated = default_config(*args)
    assert estimated.kv_splits == 6  # the layout model's 3 blocks per SM: 396 slots
    compiled = SimpleNamespace(
        resources=SimpleNamespace(occupancy=SimpleNamespace(blocks_per_sm=2), spills=0)
    )
    monkeypatch.setattr(dense, "build", lambda spec, config, arch: compiled)
    assert dense.compiled_default(*args) == replace(estimated, kv_splits=4)  # 264 slots
    monkeypatch.undo()
    # sm_120's defaults are bound by shared memory, which the model knows exactly: no change
    sm120 = (case.spec, case.batch, case.max_len, ARCHS["sm_120"], 188)
    assert dense.compiled_default(*sm120) == default_config(*sm120)


def test_a_default_whose_kernel_spills_is_passed_over(monkeypatch):
    """ptxas may cap an 8-warp FMA block at 128 registers and spill (float32 blocks of 9-12 rows,
    NVRTC 13.5): compiled_default then takes the same rows on 4 warps."""
    from types import SimpleNamespace

    from kgen.mla import dense

    spec = Spec(heads=3, q_len=3, dtype="float32", page_size=64, mask="causal")
    args = (spec, 1, 2048, ARCHS["sm_120"], 188)
    assert default_config(*args).num_warps == 8  # what the layout model picks

    def build(spec, config, arch):  # the 8-warp kernel spills, any other does not
        return SimpleNamespace(
            resources=SimpleNamespace(
                occupancy=SimpleNamespace(blocks_per_sm=2), spills=112 * (config.num_warps == 8)
            )
        )

    monkeypatch.setattr(dense, "build", build)
    chosen = dense.compiled_default(*args)
    assert (chosen.num_warps, chosen.heads_per_block) == (4, 3) and chosen.compute == "fma"


def test_the_default_specialises_small_decode():
    """Decode of at most 16 heads takes the specialised kernel, whether two of its 87 KB blocks
    share an SM (sm_90) or one fills it (sm_120's 100 KB; not sm_80's 164 KB, unmeasured); decode
    of 64 or 128 heads (16-head groups) only where one fills the SM (sm_120) and its one wave
    fills the SMs about as well as the one-role default's; verification never; the PDL merge
    wherever the arch has it (sm_90, sm_120), not on sm_80."""
    by_name = {c.name: c for c in GRID}

    def default(name, arch, sms=132):
        c = by_name[name]
        return default_config(c.spec, c.batch, c.max_len, ARCHS[arch], sms)

    for name in ("dsv3-tp8-decode-batch", "kimi-tp8-decode-long", "page1-decode"):
        for arch, sms in (("sm_90", 132), ("sm_120", 188), ("sm_120", 170)):
            ws = default(name, arch, sms)
            assert (ws.num_warps, ws.col_groups, ws.smem_stages) == (8, 4, 4)
            assert ws.body == "specialized"
            assert ws.softmax == "split" and ws.qk_ahead == 0 and ws.merge == "pdl"
            layout = layout_for(by_name[name].spec, ws, ARCHS[arch])
            blocks = (
                ARCHS[arch]
                .occupancy(layout.threads, layout.registers_estimate, layout.dynamic_smem)
                .blocks_per_sm
            )
            assert blocks == (2 if arch == "sm_90" else 1)
        assert default(name, "sm_80", 108).body == "rows"  # 164 KB: two 3-stage one-role blocks
    for name in ("kimi-tp1-decode", "kimi-tp1-decode-64k", "kimi-tp1-batch", "dsv3-tp1-batch"):
        assert default(name, "sm_90").body == "rows"
        # B x head groups = 4: one 16-head block an SM fills 188 SMs at 47 splits, 132 at 33
        four_blocks_a_split = by_name[name].batch * by_name[name].spec.heads // 16 == 4
        for sms in (132, 188):
            ws = default(name, "sm_120", sms)
            if sms == 188 and not four_blocks_a_split:  # 64 blocks a split: 128 of 188 SMs
                assert ws.body == "rows" and ws.kv_splits == 5  # 320 of 376 two-block slots
                continue
            assert (ws.body, ws.heads_per_block, ws.num_warps) == ("specialized", 16, 8)
            assert ws.smem_stages == 4 and ws.kv_splits == (sms // 4 if four_blocks_a_split else 2)
    for name in ("kimi-tp8-verify-tree", "kimi-tp8-verify-batch", "kimi-tp1-verify-tree"):
        assert default(name, "sm_90").body == "rows"
        assert default(name, "sm_120", 188).body == "rows"
    assert default("kimi-tp1-batch", "sm_120", 188).merge == "pdl"
    assert default("kimi-tp1-batch", "sm_80", 108).merge == "fused"


def test_the_sm120_default_verifies_in_three_row_blocks_where_their_wave_fills_the_sms():
    """Verification on sm_120 takes one 12-warp block of 48 rows (48 / q_len heads, four stages,
    its tile ring on a barrier a stage) where a ragged last head group leaves at most 5% of the
    rows idle and one wave of its blocks fills the SMs about as well as two 4-warp blocks an SM
    do; never on sm_90 (three 4-warp blocks fit an SM there)."""
    by_name = {c.name: c for c in GRID}

    def default(spec, batch, seq_len, arch="sm_120", sms=132):
        return default_config(spec, batch, seq_len, ARCHS[arch], sms)

    tree = by_name[
        "kimi-tp1-verify-tree"
    ]  # H = 64, 16 draft tokens: 22 groups of 3, 1 idle row of 66
    args = (tree.spec, tree.batch, tree.max_len)
    for sms, splits in ((132, 6), (188, 8)):
        config = default(*args, sms=sms)
        assert (config.num_warps, config.heads_per_block, config.smem_stages) == (12, 3, 4)
        assert config.kv_splits == splits and config.softmax == "split"
        assert config.ring_slack == 1 and config.merge == "pdl"  # the tile ring on mbarriers
    # the fused merge (no PDL: sm_80 / 86 / 89) keeps the block barrier a tile
    ada = default(Spec(heads=128, q_len=3, mask="tree"), 1, 16387, arch="sm_89", sms=128)
    assert (ada.num_warps, ada.merge, ada.ring_slack) == (12, "fused", 0)
    assert default(*args, arch="sm_90").num_warps == 4
    # H = 8 and 16 in groups of 3: 1 of 9 or 2 of 18 rows idle (12.5%)
    for name in ("kimi-tp8-verify-tree", "kimi-tp8-verify-batch"):
        c = by_name[name]
        assert default(c.spec, c.batch, c.max_len).num_warps == 4
    assert default(Spec(heads=16, q_len=16, mask="tree"), 1, 16400).num_warps == 4
    # H = 64 at 4 draft tokens: groups of 12 leave 8 of 72 rows idle
    assert default(Spec(heads=64, q_len=4, mask="tree"), 1, 16400).num_warps == 4
    # B = 4: 88 blocks fill 88 of 132 SMs at one split, two blocks an SM 256 of 264 slots
    assert default(Spec(heads=64, q_len=16, mask="tree"), 4, 4112).num_warps == 4
    # every head of a group real, several sequences: 2 draft tokens x 24 heads, 4 splits
    config = default(Spec(heads=48, q_len=2, mask="causal"), 16, 4098)
    assert (config.num_warps, config.heads_per_block, config.kv_splits) == (12, 24, 4)


def test_decode_of_48_head_groups_takes_the_three_row_block_on_its_ring_where_the_merge_is_pdl():
    """Decode whose heads 48 divides: one 12-warp block of 48 heads, on sm_120 four stages and the
    tile ring (3.5-6% faster there than three stages in lock-step, thirty-seventh session); where
    the merge is fused (sm_89) three stages and the block barrier a tile, as measured before."""
    for heads, batch, seq_len in ((48, 16, 4096), (96, 1, 16384), (96, 8, 8192)):
        spec = Spec(heads=heads, q_len=1, mask="none")
        config = default_config(spec, batch, seq_len, ARCHS["sm_120"], 188)
        assert (config.num_warps, config.heads_per_block) == (12, 48)
        assert (config.smem_stages, config.ring_slack, config.merge) == (4, 1, "pdl")
        ada = default_config(spec, batch, seq_len, ARCHS["sm_89"], 128)
        assert (ada.num_warps, ada.heads_per_block) == (12, 48)
        assert (ada.smem_stages, ada.ring_slack, ada.merge) == (3, 0, "fused")
    # 64 heads are not 48-head groups: no three-row decode block
    assert default_config(Spec(heads=64, q_len=1), 16, 4096, ARCHS["sm_120"], 188).num_warps != 12


def test_verification_that_pads_its_m16_tile_takes_the_three_row_block_on_sm90_too():
    """q_len 3, 6 and 12 leave a quarter of a one-tile block's rows padding (12 of 16): there the
    48-row block comes first even where three 4-warp blocks fit an SM (the H200); unpadded
    tiles (q_len 2, 4, 16) keep the 4-warp blocks."""
    sm90 = ARCHS["sm_90"]

    def default(heads, q_len, batch, seq_len):
        return default_config(
            Spec(heads=heads, q_len=q_len, mask="tree"), batch, seq_len, sm90, 132
        )

    for (heads, q_len, batch, seq_len), (hpb, splits) in {
        (128, 3, 1, 16387): (16, 16),
        (64, 6, 4, 8198): (8, 4),
        (16, 12, 8, 4108): (4, 4),
        (64, 3, 8, 4099): (16, 4),
    }.items():
        config = default(heads, q_len, batch, seq_len)
        assert (config.num_warps, config.heads_per_block, config.smem_stages) == (12, hpb, 4)
        assert config.kv_splits == splits and config.ring_slack == 1
    for shape in ((128, 4, 2, 16388), (64, 16, 1, 16400), (128, 2, 8, 8194)):
        assert default(*shape).num_warps == 4


def test_bucket():
    assert bucket(1, 16448) == "b1_l32768"
    assert bucket(32, 4096) == "b32_l4096" and bucket(33, 4097) == "b64_l8192"


def test_database_keys_and_staleness(tmp_path):
    db = TuningDB(tmp_path / "t.json")
    spec, config = Spec(heads=8), Config(heads_per_block=8, kv_splits=12)
    db.record("NVIDIA H200", "sm_90", spec, "b1_l16384", "13.0", config, {"median_us": 9.0})
    assert db.lookup("NVIDIA H200", "sm_90", spec, "b1_l16384", "13.0").config == config
    for other in (
        ("NVIDIA H100", "sm_90", spec, "b1_l16384", "13.0"),
        ("NVIDIA H200", "sm_120", spec, "b1_l16384", "13.0"),
        ("NVIDIA H200", "sm_90", Spec(heads=16), "b1_l16384", "13.0"),
        ("NVIDIA H200", "sm_90", spec, "b2_l16384", "13.0"),
    ):
        assert db.lookup(*other).config is None
    stale = db.lookup("NVIDIA H200", "sm_90", spec, "b1_l16384", "13.5")
    assert stale.config is None and stale.stale
    data = json.loads((tmp_path / "t.json").read_text())
    (entry,) = data["entries"].values()
    entry["kgen"] = "0.0.1"
    (tmp_path / "t.json").write_text(json.dumps(data))
    found = db.lookup("NVIDIA H200", "sm_90", spec, "b1_l16384", "13.0")
    assert found.stale and found.config is None
    assert staleness(found.entry) == f"kgen 0.0.1 (now {__version__})"
    entry["kgen"] = __version__
    entry["code"] = "0" * 16  # measured with other templates or layout models
    (tmp_path / "t.json").write_text(json.dumps(data))
    found = db.lookup("NVIDIA H200", "sm_90", spec, "b1_l16384", "13.0")
    assert found.stale and found.config is None and "kernel code" in staleness(found.entry)
    entry["code"] = code_stamp(spec, config, "sm_90")
    (tmp_path / "t.json").write_text(json.dumps(data))
    assert db.lookup("NVIDIA H200", "sm_90", spec, "b1_l16384", "13.0").config == config


def test_code_stamp_follows_the_generated_source(tmp_path, monkeypatch):
    """An entry goes stale exactly when its own variant's source changes: editing the tensor-core
    header changes an mma variant's stamp, not an FMA variant's; kv_splits changes neither."""
    import shutil

    from kgen import render
    from kgen.mla import tuning as db

    spec = Spec(heads=8)
    mma = Config(heads_per_block=8, compute="mma", smem_stages=3, block_n=16)
    fma = Config(heads_per_block=8)
    copy = tmp_path / "templates"
    shutil.copytree(render.template_dir(), copy)
    monkeypatch.setattr(render, "template_dir", lambda: copy)
    render.environment.cache_clear()
    db._source_stamp.cache_clear()
    before = {c: code_stamp(spec, c, "sm_90") for c in (mma, fma)}
    assert len(set(before.values())) == 2 and "refused" not in before.values()
    assert code_stamp(spec, replace(mma, kv_splits=7), "sm_90") == before[mma]
    path = copy / "mla" / "mma" / "attention.cuh"
    path.write_text(path.read_text() + "// a comment\n/* and   another */\n")
    render.environment.cache_clear()
    db._source_stamp.cache_clear()
    assert code_stamp(spec, mma, "sm_90") == before[mma]  # comments and whitespace are no code
    path.write_text(path.read_text() + "__device__ int edited;\n")
    render.environment.cache_clear()
    db._source_stamp.cache_clear()
    assert code_stamp(spec, mma, "sm_90") != before[mma]
    assert code_stamp(spec, fma, "sm_90") == before[fma]
    assert code_stamp(spec, replace(mma, heads_per_block=9), "sm_90") == "refused"
    monkeypatch.undo()
    render.environment.cache_clear()
    db._source_stamp.cache_clear()


def test_shipped_tuning_is_current_and_fits_sm120():
    """Every shipped entry (dense and sparse) matches today's kernel code, and its config compiles
    for sm_120 within its shared memory and without spills."""
    from kgen.arch import ARCHS
    from kgen.mla import build, build_sparse
    from kgen.mla.sparse.spec import SparseConfig, SparseSpec
    from kgen.mla.tuning import SHIPPED

    entries = TuningDB(SHIPPED).entries()
    assert entries
    for entry in entries.values():
        assert staleness(entry) is None, staleness(entry)
        if entry.get("family") == "sparse":
            spec, config = (
                SparseSpec.from_dict(entry["spec"]),
                SparseConfig.from_dict(entry["config"]),
            )
            kernel = build_sparse(spec, config, "sm_120")
        else:
            config = Config.from_dict(entry["config"])
            kernel = build(
                Spec.from_dict(entry["spec"]), config, "sm_120"
            )  # refuses what cannot fit
        res = kernel.resources  # (the float32 tiled entry too)
        assert res.smem <= ARCHS["sm_120"].smem_per_block and res.spills == 0, res.summary()


def test_every_shipped_trial_name_reads_back_as_its_config(monkeypatch):
    """bench/reselect.py re-picks an entry from its trials' names: every dense trial of the
    shipped database (PDL merges, specialised roles and the tiled path among them) parses back
    to a Config whose short name it is."""
    from kgen.mla.tuning import SHIPPED

    monkeypatch.syspath_prepend(str(ROOT / "bench"))  # (bench/profile.py: not left on the path)
    from reselect import config_named

    trials = [
        (name, splits)
        for entry in TuningDB(SHIPPED).entries().values()
        if entry.get("family", "dense") == "dense"
        for name, splits, _ in entry["trials"]
    ]
    assert any(n.endswith("_pc_ws") for n, _ in trials) and any("_pc" in n for n, _ in trials)
    assert any(n.endswith("_tiled") for n, _ in trials)
    for name, splits in trials:
        config = config_named(name, splits)
        assert (config.short_name(), config.kv_splits) == (name, splits)


def test_the_report_tells_every_config_axis_apart():
    """results.csv has a column per config field of either family, and the table's config names
    differ where any 0/1 axis does (the sweep table would otherwise show two variants alike)."""
    from kgen.mla import SparseConfig
    from kgen.tune.report import COLUMNS, config_name

    for family in (Config, SparseConfig):
        assert {f.name for f in fields(family)} <= set(COLUMNS)
    dense = Config(heads_per_block=8, smem_stages=3, num_warps=8, block_n=16, compute="mma")
    flags = {"qk_ahead": 1, "softmax": "split", "merge": "pdl", "body": "specialized"}
    names = [config_name(dense.to_dict())]
    names += [config_name({**dense.to_dict(), field: v}) for field, v in flags.items()]
    assert len(set(names)) == len(names), names
    sparse = SparseConfig().to_dict()
    assert config_name(sparse) != config_name({**sparse, "merge": "pdl"})


class StubExecutor:
    """Trial results without a GPU: times from a formula, one config always wrong, one crashes."""

    def __init__(self, wrong_hpb=None, crash_hpb=None):
        self.calls = []
        self.wrong_hpb, self.crash_hpb = wrong_hpb, crash_hpb

    def call(self, method, *args):
        self.calls.append(method)
        if method == "gpu":
            return "Stub GPU", 100
        if method == "ceilings":
            return {
                "gpu": "Stub GPU",
                "copy_gbs": 4000.0,
                "read_gbs": 4000.0,
                "bf16_tflops": 700.0,
                "fp32_tflops": 50.0,
            }
        work = {"kv_bytes": 1e6, "bytes": 1.1e6, "flops": 1e9}
        if method == "baseline":
            return {"status": "ok", "median_us": 500.0, "error": 1e-3, **work}
        if method == "graph":
            return {"median_us": 7.0}
        case, config, splits, seed, reps = args
        if config.heads_per_block == self.crash_hpb:
            raise TrialCrashed("illegal address")
        rows = []
        for s in splits:
            cfg = type(config)(**{**config.to_dict(), "kv_splits": s})
            status = "wrong" if config.heads_per_block == self.wrong_hpb else "ok"
            # the wrong config would be the fastest: it must still not be ranked
            t = 1.0 if status == "wrong" else 100.0 / config.heads_per_block + s
            rows.append(
                {"config": cfg.to_dict(), "status": status, "median_us": t, "error": 1e-3, **work}
            )
        return rows

    def close(self, now=False):
        pass


def test_sweep_ranks_only_correct_variants_records_and_resumes(tmp_path):
    case = Case("tiny", Spec(heads=4, q_len=2, mask="causal", dtype="float32"), batch=1, prefix=200)
    axes = Axes(num_warps=(4,), stage_tiles=((2, 16),))
    stub = StubExecutor(wrong_hpb=4, crash_hpb=1)
    options = SweepOptions(
        arch="sm_90",
        compile_only=False,
        axes=axes,
        executor=stub,
        db_path=tmp_path / "db.json",
        jobs=2,
    )
    report = run_sweep([case], tmp_path / "out", options)
    (entry,) = report["cases"]
    assert entry["best"]["config"]["heads_per_block"] == 2  # hb4 is wrong, hb1 crashed
    statuses = {(t["config"]["heads_per_block"], t["status"]) for t in entry["trials"]}
    assert (4, "wrong") in statuses and (1, "failed") in statuses
    assert entry["torch"]["median_us"] == 500.0 and entry["best"]["graph"]["median_us"] == 7.0
    db = TuningDB(tmp_path / "db.json")
    found = db.lookup(
        "Stub GPU", "sm_90", case.spec, bucket(1, case.max_len), report["meta"]["nvrtc"]
    )
    assert found.config.heads_per_block == 2

    resumed = StubExecutor(wrong_hpb=4, crash_hpb=1)
    options.executor = resumed
    again = run_sweep([case], tmp_path / "out", options)
    assert "variant" not in resumed.calls and "baseline" not in resumed.calls
    assert again["cases"][0]["best"] == entry["best"]


class InterruptedExecutor(StubExecutor):
    """A Ctrl-C arrives during the sweep's `at`-th trial (the default's is the first)."""

    def __init__(self, at):
        super().__init__()
        self.at, self.closed = at, False

    def call(self, method, *args):
        if method == "variant" and self.calls.count("variant") + 1 == self.at:
            raise KeyboardInterrupt
        return super().call(method, *args)

    def close(self, now=False):
        self.closed = True


def test_on_kv_format_puts_the_dense_16_bit_cases_on_the_format():
    from kgen.tune.space import on_kv_format

    grid = load_grid()
    fp8 = on_kv_format(grid, "fp8_tensor")
    dense16 = [c for c in grid if isinstance(c.spec, Spec) and c.spec.dtype != "float32"]
    assert [c.name for c in fp8] == [c.name for c in dense16] and fp8
    assert all(c.spec.kv_format == "fp8_tensor" for c in fp8)
    assert [replace(c, spec=replace(c.spec, kv_format="dtype")) for c in fp8] == dense16


def test_a_short_sweep_budget_still_times_variants_of_its_first_cases():
    """--seconds shares what is left among the cases still to start; the per-case reserve for
    baseline and graph replays takes at most half a share, so a budget short for its cases leaves
    none of them with zero seconds of variant trials, and a long one reserves the whole."""
    from kgen.tune.sweep import CASE_RESERVE_S, _case_budget

    now = time.time()
    short = _case_budget(SweepOptions(), now + 13 * 6.0, 13)  # 6 s a case, under the reserve
    assert 2.9 < short <= 3.0
    long = _case_budget(SweepOptions(), now + 2 * 60.0, 2)
    assert 60.0 - CASE_RESERVE_S - 0.1 < long <= 60.0 - CASE_RESERVE_S
    assert _case_budget(SweepOptions(), now - 5.0, 3) == 0.0  # past the deadline
    assert _case_budget(SweepOptions(case_seconds=2.0), now + 600.0, 1) == 2.0
    assert _case_budget(SweepOptions(), None, 4) is None


def test_an_interrupted_timed_sweep_keeps_its_trials_and_resumes(tmp_path):
    from kgen.tune.sweep import SweepInterrupted

    case = Case("tiny", Spec(heads=4, q_len=2, mask="causal", dtype="float32"), batch=1, prefix=200)
    stopping = InterruptedExecutor(at=3)
    options = SweepOptions(
        arch="sm_90",
        compile_only=False,
        axes=Axes(num_warps=(4,), stage_tiles=((2, 16),)),
        executor=stopping,
        db_path=tmp_path / "db.json",
        jobs=2,
    )
    with pytest.raises(SweepInterrupted, match=r"^2 of (\d+) trials timed; progress in ") as stop:
        run_sweep([case], tmp_path / "out", options)
    assert stopping.closed and not (tmp_path / "out" / "results.json").exists()
    total = int(stop.value.done.split()[2])
    options.executor = resumed = StubExecutor()
    (entry,) = run_sweep([case], tmp_path / "out", options)["cases"]
    assert resumed.calls.count("variant") == total - 2  # the two timed before are not again
    timed = [(t["kind"], json.dumps(t["config"], sort_keys=True)) for t in entry["trials"]]
    assert len(timed) == len(set(timed))


def test_a_config_that_only_fits_the_test_gpu_does_not_fit_the_targets():
    """The sweep times its default row unpruned: an FMA default with 110 KB of shared memory runs
    on the H200 but not on sm_120, so it must not become a shipped winner."""
    from kgen.tune.sweep import fits_targets

    spec = Spec(heads=64, q_len=8, mask="tree", dtype="float32")
    fma = Config(heads_per_block=4, num_warps=8, block_n=16, vec_width=4, smem_stages=3)
    assert not fits_targets(spec, fma, ("sm_120",))
    assert fits_targets(spec, fma, ("sm_90",))
    assert fits_targets(spec, replace(fma, smem_stages=2), ("sm_120",))


def test_the_shipped_best_is_the_fastest_that_compiles_spill_free_for_the_target(
    tmp_path, monkeypatch
):
    """A faster config that spills on sm_120 is timed and kept among the trials, not recorded."""
    from kgen.tune import sweep

    case = Case("tiny", Spec(heads=4, q_len=2, mask="causal", dtype="float32"), batch=1, prefix=200)
    checked = []

    def spill_free(case, row, archs):
        checked.append((row["config"]["heads_per_block"], archs))
        return row["config"]["heads_per_block"] != 4  # hb4 is the fastest and "spills"

    monkeypatch.setattr(sweep, "_fits_targets", spill_free)
    options = SweepOptions(
        arch="sm_90",
        compile_only=False,
        axes=Axes(num_warps=(4,), stage_tiles=((2, 16),)),
        executor=StubExecutor(),
        db_path=tmp_path / "db.json",
        jobs=2,
    )
    (entry,) = run_sweep([case], tmp_path / "out", options)["cases"]
    assert entry["best"]["config"]["heads_per_block"] == 2
    # checked fastest first (every hb4 split, then hb2), always for sm_120
    assert [h for h, _ in checked] == [4] * (len(checked) - 1) + [2]
    assert {archs for _, archs in checked} == {("sm_120",)}
    assert any(t["config"]["heads_per_block"] == 4 for t in entry["trials"])


def test_compile_only_cli_writes_the_table_and_files(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = tmp_path / "sweep"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "kgen",
            "sweep",
            "--heads",
            "4",
            "--q-len",
            "2",
            "--mask",
            "causal",
            "--heads-per-block",
            "2",
            "4",
            "--num-warps",
            "4",
            "--col-groups",
            "4",
            "--min-blocks",
            "0",
            "--compile-only",
            "--jobs",
            "2",
            "--out",
            str(out),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr
    assert (
        "compile-only sweep for sm_120" in run.stdout and "refused before compiling" in run.stdout
    )
    report = json.loads((out / "results.json").read_text())
    variants = report["cases"][0]["variants"]
    assert variants and all(v["status"] == "compiled" and v["registers"] > 0 for v in variants)
    assert {v["config"].get("qk_ahead") for v in variants if v["config"]["compute"] == "mma"} == {
        0,
        1,
    }
    assert (out / "results.csv").read_text().startswith("case,kind,heads_per_block")


def test_the_sweep_takes_ring_slack_opt_in_for_three_row_blocks_only():
    """kgen sweep --ring-slack 0 1: the tile ring on a barrier a stage joins the three-row
    12-warp candidates (never with qk_ahead, always with a copy lead of a tile or more); the
    default space has none, and is otherwise the same."""
    spec = Spec(heads=64, q_len=16, dtype="bfloat16", page_size=64, mask="tree")
    plain = enumerate_configs(spec)
    wide = enumerate_configs(spec, Axes(ring_slack=(0, 1)))
    ringed = [c for c in wide if c.ring_slack]
    assert not any(c.ring_slack for c in plain) and ringed
    assert [c for c in wide if not c.ring_slack] == plain
    for c in ringed:
        assert c.num_warps == 12 and not c.qk_ahead and c.smem_stages - 1 - c.ring_slack >= 1
        layout_for(spec, c, ARCHS["sm_90"])  # none that build would refuse for its stages


def test_the_compact_space_holds_every_shipped_winner_and_is_what_the_docs_say():
    """kgen sweep's default space keeps, on the axes it narrows, the values every shipped winner
    takes (the merge aside: neither space sweeps the PDL merge unasked), and is as large as
    docs/cli.md and the README say (1,148 variants of the default grid for sm_120; 4,240 full)."""
    from kgen.mla.tuning import SHIPPED
    from kgen.tune.cli import parse_sweep
    from kgen.tune.family import family_of
    from kgen.tune.space import COMPACT_AXES
    from kgen.tune.sparse_space import COMPACT_SPARSE_AXES, SparseAxes
    from kgen.tune.sweep import sweep_variants

    compact = SweepOptions(axes=COMPACT_AXES, sparse_axes=COMPACT_SPARSE_AXES)
    full = SweepOptions(axes=Axes(), sparse_axes=SparseAxes())
    grid = {case.name: case for case in load_grid()}
    entries = TuningDB(SHIPPED).entries().values()
    assert {entry["case"] for entry in entries} <= set(grid)
    for entry in entries:
        case = grid[entry["case"]]
        family = family_of(case.spec)
        config = family.config_type.from_dict({**entry["config"], "kv_splits": 1, "merge": "fused"})
        assert config in family.enumerate(case.spec, full)
        assert config in family.enumerate(case.spec, compact), (case.name, config.short_name())
    # what the README's main job compiles, as `kgen sweep` plans it
    for argv, size in (([], 1148), (["--space", "full"], 4240)):
        cases, options = parse_sweep(argv)
        assert [c.name for c in cases] == list(grid) and options.arch is None
        pairs, _ = sweep_variants(cases, options, ARCHS["sm_120"])
        assert len(pairs) == len(set(pairs)) == size


def test_draft_rows_past_three_tiles_are_swept_in_token_groups_that_fit_sm120():
    """q_len 49-64: the space holds token-grouped blocks (the heuristic's default there), and
    sm_120's pruning keeps some; shorter drafts get none."""
    from kgen.tune.space import COMPACT_AXES

    long = Spec(heads=16, q_len=57, mask="tree", dtype="bfloat16")
    kept = prune(long, enumerate_configs(long, COMPACT_AXES), ARCHS["sm_120"]).kept
    assert kept and any(c.token_groups == 2 for c in kept)
    short = Spec(heads=16, q_len=16, mask="tree", dtype="bfloat16")
    assert all(c.token_groups == 1 for c in enumerate_configs(short))
