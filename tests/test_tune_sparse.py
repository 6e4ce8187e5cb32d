"""The sweep's sparse side without a GPU: grid cases, enumeration and pruning by the sparse layout
model, split candidates, tuning-database keys by (batch, top-k) bucket and their code stamps, a
stub-timed sweep that records its winner, and the compile-only path of `kgen sweep --topk`."""

import json
import math
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kgen.arch import ARCHS
from kgen.mla import SparseConfig, SparseSpec, build_sparse, sparse_layout_for
from kgen.mla.sparse.family import sparse_bucket
from kgen.mla.sparse.heuristic import default_sparse_config
from kgen.mla.sparse.layout import SparseConfigError
from kgen.mla.spec import MAX_SPLITS
from kgen.mla.tuning import TuningDB, code_stamp, entry_key, staleness
from kgen.tune.report import config_name, summary_table
from kgen.tune.space import Case, load_grid
from kgen.tune.sparse_space import (
    SparseAxes,
    enumerate_sparse_configs,
    prune_sparse,
    sparse_split_candidates,
)
from kgen.tune.sweep import SweepOptions, run_sweep

from .test_tune import StubExecutor

ROOT = Path(__file__).resolve().parent.parent
SPARSE_GRID = load_grid(family="sparse")
DSV32_GRID = [c for c in SPARSE_GRID if c.spec.kv_format == "fp8"]  # issue 8's block
DSV4_GRID = [c for c in SPARSE_GRID if c.spec.v4_op]  # issue 53's (tests/test_sparse_v4_build.py)


def test_the_sparse_grid_cases_are_the_issues():
    assert len(DSV32_GRID) + len(DSV4_GRID) == len(SPARSE_GRID)
    shapes = {(c.batch, c.spec.q_len, c.spec.heads) for c in DSV32_GRID}
    assert shapes == {(b, 1, h) for b in (1, 32, 128) for h in (16, 64, 128)} | {(32, 4, 16)}
    for case in DSV32_GRID:
        spec = case.spec
        assert (spec.topk, spec.kv_format, spec.page_size, case.prefix) == (2048, "fp8", 64, 65536)


@pytest.mark.parametrize("spec", sorted({c.spec for c in DSV32_GRID}, key=repr), ids=repr)
def test_default_config_of_every_sparse_grid_spec_fits_sm120_spill_free(spec):
    for batch in (1, 32):  # splits of 2 tiles (whole softmax), of 16+ tiles (split softmax)
        config = default_sparse_config(spec, batch, ARCHS["sm_120"], sm_count=132)
        res = build_sparse(spec, config, "sm_120").resources
        assert res.smem <= ARCHS["sm_120"].smem_per_block and res.spills == 0, res.summary()


@settings(max_examples=6, deadline=None)
@given(
    heads=st.sampled_from([1, 2, 8, 16, 32, 64, 128]),
    q_len=st.sampled_from([1, 2, 4, 8]),
    topk=st.sampled_from([1, 7, 300, 2048]),
    kv_format=st.sampled_from(["fp8", "bf16"]),
    page_size=st.sampled_from([1, 16, 64]),
    dtype=st.sampled_from(["bfloat16", "float16"]),
    batch=st.sampled_from([1, 4, 32, 128]),
)
def test_the_sm120_sparse_default_of_any_shape_fits_and_does_not_spill(
    heads, q_len, topk, kv_format, page_size, dtype, batch
):
    """The sparse default every sm_120 card runs, for shapes off the grid too: it fits the
    block's shared memory and compiles without spills."""
    spec = SparseSpec(
        heads=heads, q_len=q_len, topk=topk, kv_format=kv_format, page_size=page_size, dtype=dtype
    )
    config = default_sparse_config(spec, batch, ARCHS["sm_120"], sm_count=188)
    res = build_sparse(spec, config, "sm_120").resources
    assert res.smem <= ARCHS["sm_120"].smem_per_block and res.spills == 0, res.summary()


def test_default_config_splits_the_softmax_where_splits_hold_several_tiles():
    # measured at sm_120's occupancy: 0.4-7% faster with splits of 16-128 tiles, 0.4-1.1% slower
    # with the B = 1 cases' splits of 2 tiles
    for case in DSV32_GRID:
        for arch, sms in (("sm_90", 132), ("sm_120", 188), ("sm_80", 108)):
            config = default_sparse_config(case.spec, case.batch, ARCHS[arch], sms)
            tiles = math.ceil(math.ceil(case.spec.topk / config.block_n) / config.kv_splits)
            split = "split" if tiles >= 4 else "warp"
            assert config.softmax == split, (case.name, arch, config)
            assert config.softmax == ("split" if case.batch > 1 else "warp"), (case.name, config)


def test_default_config_merges_in_a_pdl_kernel_where_the_arch_has_it():
    spec = SparseSpec(heads=64, topk=2048)
    for arch, sms, pdl in (("sm_90", 132, "pdl"), ("sm_120", 188, "pdl"), ("sm_80", 108, "fused")):
        config = default_sparse_config(spec, 1, ARCHS[arch], sms)
        assert config.kv_splits > 1 and config.merge == pdl, (arch, config)
        build_sparse(spec, config, arch)  # an sm_80 build would refuse the PDL merge


@pytest.mark.parametrize("spec", sorted({c.spec for c in DSV32_GRID}, key=repr), ids=repr)
def test_default_config_fills_the_sms_at_batch_one(spec):
    # the H200 sweep's B = 1 winners run one block per SM with splits of 1-2 tiles; the old rule
    # (splits of 4 tiles, 32 heads per block) left 3/4 of the SMs idle and was 1.3-1.4x slower
    sm_count = 132
    config = default_sparse_config(spec, 1, ARCHS["sm_90"], sm_count)
    head_blocks = spec.q_len * spec.heads // config.heads_per_block
    tiles = -(-spec.topk // config.block_n)
    blocks = head_blocks * config.kv_splits
    # half the SMs busy, or a block for every tile
    assert min(sm_count // 2, head_blocks * tiles) <= blocks <= 2 * sm_count, config
    assert config.kv_splits <= tiles and config.heads_per_block >= 16, config


def test_enumeration_covers_the_axes_and_pruning_names_reasons():
    spec = SparseSpec(heads=64, topk=2048)
    configs = enumerate_sparse_configs(spec)
    assert {c.heads_per_block for c in configs} == {16, 32, 64}
    assert {c.dequant for c in configs} == {"shared", "registers"}
    assert {c.gather_bytes for c in configs} == {8, 16}
    assert {(c.smem_stages, c.block_n) for c in configs if c.dequant == "registers"} == {
        (2, 16),
        (2, 32),
    }
    assert {c.softmax for c in configs} == {"warp", "split"}
    # hpb x (warps, col_groups <= warps) x (6 shared + 2 register pipelines) x gather x min_blocks
    # x softmax
    assert len(configs) == 3 * (2 + 3) * 8 * 2 * 2 * 2
    pruned = prune_sparse(spec, configs, ARCHS["sm_120"])
    assert pruned.kept and len(pruned.kept) + len(pruned.refused) == len(configs)
    refused = dict(pruned.refused)
    too_big = SparseConfig(heads_per_block=16, smem_stages=3, block_n=32, num_warps=4)
    assert "shared memory" in refused[too_big] and "101376" in refused[too_big]  # BLOCK_T 32 x 3
    assert SparseConfig(heads_per_block=16, smem_stages=2, block_n=16) in pruned.kept
    assert SparseConfig(heads_per_block=16, block_n=16, softmax="split") in pruned.kept
    one_group = SparseConfig(heads_per_block=16, num_warps=4, col_groups=1, softmax="split")
    with pytest.raises(SparseConfigError, match="softmax.*col_groups > 1"):
        sparse_layout_for(spec, one_group, ARCHS["sm_120"])
    bf16 = enumerate_sparse_configs(replace(spec, kv_format="bf16"), SparseAxes(num_warps=(4,)))
    assert {c.dequant for c in bf16} == {"shared"}
    assert {c.heads_per_block for c in enumerate_sparse_configs(SparseSpec(heads=4))} == {1, 2, 4}


def test_split_candidates_stay_within_the_topk_tiles():
    case = Case("s", SparseSpec(heads=16, topk=100), batch=1, prefix=1000)
    splits = sparse_split_candidates(case, SparseConfig(heads_per_block=16, block_n=16), 132)
    assert splits == sorted(splits) and len(splits) <= 4 and max(splits) <= 7
    wide = Case("w", SparseSpec(heads=128, topk=2048), batch=128, prefix=65536)
    assert sparse_split_candidates(wide, SparseConfig(heads_per_block=16), 132) == [1, 2]
    # one sequence: the fill count (264) is past the 128 tiles, so fractions of the tiles instead
    one = Case("one", SparseSpec(heads=16, topk=2048), batch=1, prefix=65536)
    assert sparse_split_candidates(one, SparseConfig(heads_per_block=16), 132) == [16, 32, 64, 128]
    # 32 blocks: 8 splits fill 2 blocks per SM in one wave (264 slots); 9 would leave a tail
    batch = Case("b", SparseSpec(heads=16, topk=2048), batch=32, prefix=65536)
    assert sparse_split_candidates(batch, SparseConfig(heads_per_block=16), 132) == [2, 4, 8, 16]
    # 128 blocks: one wave of 2 per SM is 2 splits (3 made 1.45 waves); 3 per SM: still 3
    big = Case("big", SparseSpec(heads=16, topk=2048), batch=128, prefix=65536)
    assert sparse_split_candidates(big, SparseConfig(heads_per_block=16), 132) == [1, 2, 4]
    assert sparse_split_candidates(big, SparseConfig(heads_per_block=16), 132, 3) == [1, 3, 6]
    # 3 per SM: 12 splits; 24 splits of 128 tiles cut 6-tile pieces, 22 of them non-empty
    three = sparse_split_candidates(batch, SparseConfig(heads_per_block=16), 132, 3)
    assert three == [3, 6, 12, 22]
    # never past the combine's MAX_SPLITS, however many SMs and tiles
    huge = Case("huge", SparseSpec(heads=16, topk=1 << 16), batch=1, prefix=1 << 17)
    assert max(sparse_split_candidates(huge, SparseConfig(heads_per_block=16), 4096)) == MAX_SPLITS


def test_database_keys_sparse_entries_by_batch_and_topk_bucket(tmp_path):
    assert sparse_bucket(32, 2048) == "b32_k2048" and sparse_bucket(33, 1500) == "b64_k2048"
    spec = SparseSpec(heads=16, topk=2048)
    same = replace(spec, topk=1500)  # another topk of the same bucket: the same key
    assert entry_key("G", "sm_90", spec, "b32_k2048") == entry_key("G", "sm_90", same, "b32_k2048")
    assert entry_key("G", "sm_90", spec, "b32_k2048") != entry_key(
        "G", "sm_90", replace(spec, kv_format="bf16"), "b32_k2048"
    )
    db = TuningDB(tmp_path / "t.json")
    config = SparseConfig(heads_per_block=16, kv_splits=4, block_n=32)
    db.record("G", "sm_90", spec, "b32_k2048", "13.0", config, {"median_us": 9.0})
    found = db.lookup("G", "sm_90", same, sparse_bucket(32, same.topk), "13.0")
    assert found.config == config and found.entry["family"] == "sparse"
    assert db.lookup("G", "sm_90", spec, "b1_k2048", "13.0").config is None
    assert db.lookup("G", "sm_90", spec, "b32_k4096", "13.0").config is None
    assert staleness(found.entry) is None
    assert found.entry["code"] == code_stamp(spec, replace(config, kv_splits=9), "sm_90")
    data = json.loads((tmp_path / "t.json").read_text())
    (entry,) = data["entries"].values()
    entry["code"] = "0" * 16
    (tmp_path / "t.json").write_text(json.dumps(data))
    assert "kernel code" in staleness(db.lookup("G", "sm_90", spec, "b32_k2048", "13.0").entry)
    refused = SparseConfig(heads_per_block=16, smem_stages=3, block_n=32)
    assert code_stamp(spec, refused, "sm_120") == "refused"


def test_a_stub_timed_sparse_sweep_records_the_fastest_correct_winner(tmp_path):
    case = Case("tiny-sparse", SparseSpec(heads=16, topk=300), batch=2, prefix=1000)
    options = SweepOptions(
        arch="sm_120",
        compile_only=False,
        sparse_axes=SparseAxes(
            heads_per_block=(8, 16),
            num_warps=(4,),
            col_groups=(4,),
            shared_tiles=((2, 16),),
            register_tiles=(),
            gather_bytes=(16,),
            min_blocks=(1,),
            softmax=("warp",),
        ),
        executor=StubExecutor(wrong_hpb=16),
        db_path=tmp_path / "db.json",
        jobs=2,
    )
    report = run_sweep([case], tmp_path / "out", options)
    (entry,) = report["cases"]
    assert entry["family"] == "sparse" and len(entry["variants"]) == 2  # hb8, hb16
    assert entry["best"]["config"]["heads_per_block"] == 8  # hb16 "computes a wrong answer"
    found = TuningDB(tmp_path / "db.json").lookup(
        "Stub GPU", "sm_120", case.spec, sparse_bucket(2, 300), report["meta"]["nvrtc"]
    )
    assert found.config == SparseConfig.from_dict(entry["best"]["config"])
    assert entry["default_config"]["dequant"] in ("shared", "registers")
    table = summary_table(report)
    assert "tiny-sparse" in table and config_name(entry["best"]["config"]) in table


def test_compile_only_sparse_cli_reports_resources_and_sass(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = tmp_path / "sweep"
    args = ["--heads", "16", "--topk", "2048", "--kv-format", "fp8", "--batch", "32"]
    args += ["--num-warps", "4", "--col-groups", "4", "--min-blocks", "0"]
    args += ["--sparse-tiles", "2x16", "3x32", "--register-tiles", "16", "--gather-bytes", "16"]
    args += ["--space", "full"]  # both dequant paths, both softmaxes
    run = subprocess.run(
        [sys.executable, "-m", "kgen", "sweep", *args, "--compile-only", "--jobs", "2"]
        + ["--out", str(out)],
        capture_output=True,
        text=True,
        env=env,
    )
    assert run.returncode == 0, run.stderr
    assert "hb16 n16 st2 g16 w4 c4 sha" in run.stdout and "4 compiled, 2 refused" in run.stdout
    assert "hb16 n16 st2 g16 w4 c4 reg ss" in run.stdout  # the split softmax (default: 0 and 1)
    (case,) = json.loads((out / "results.json").read_text())["cases"]
    assert case["family"] == "sparse" and case["spec"]["topk"] == 2048
    assert {v["config"]["dequant"] for v in case["variants"]} == {"shared", "registers"}
    assert all(v["registers"] > 0 and v["spills"] == 0 for v in case["variants"])
    assert "shared memory" in case["refused"][0]["reason"]
    assert "dequant" in (out / "results.csv").read_text().splitlines()[0]


def test_min_blocks_twins_with_the_same_registers_are_timed_once():
    from kgen.tune.family import SPARSE
    from kgen.tune.sweep import _distinct

    def variant(min_blocks, registers, stages=2):
        config = SparseConfig(smem_stages=stages, min_blocks=min_blocks)
        return {"config": config.to_dict(), "registers": registers, "spills": 0}

    variants = [variant(1, 158), variant(0, 158), variant(0, 128, 3), variant(1, 143, 3)]
    kept, twins = _distinct(SPARSE, variants)
    assert twins == 1 and [(c.smem_stages, c.min_blocks) for c in kept] == [(2, 0), (3, 0), (3, 1)]
    assert _distinct(SPARSE, [{"config": SparseConfig().to_dict()}])[1] == 0  # no figures: kept


class Clock:
    """time.time for the sweep: a second passes at every reading."""

    def __init__(self):
        self.now = 1e9

    def time(self):
        self.now += 1.0
        return self.now


def test_a_budgeted_sweep_times_the_default_first_and_the_table_reads_it(tmp_path, monkeypatch):
    import kgen.tune.sweep as sweep

    monkeypatch.syspath_prepend(str(ROOT / "bench"))  # (bench/profile.py: not left on the path)
    import sparse_table

    grid = tmp_path / "grid.json"
    shape = {"B": 2, "T": 1, "H": 16, "S": 1000, "topk": 300}
    grid.write_text(json.dumps({"cases": [{"name": "tiny-sparse", **shape}]}))
    (case,) = load_grid(grid, "sparse")
    options = SweepOptions(
        arch="sm_120",
        compile_only=False,
        sparse_axes=SparseAxes(
            heads_per_block=(8, 16),
            num_warps=(4,),
            col_groups=(4,),
            shared_tiles=((2, 16),),
            register_tiles=(),
            gather_bytes=(16,),
            min_blocks=(0,),
            softmax=("warp",),
        ),
        executor=StubExecutor(),
        db_path=tmp_path / "db.json",
        jobs=2,
        case_seconds=0.5,
    )
    monkeypatch.setattr(sweep, "time", Clock())
    report = run_sweep([case], tmp_path / "out", options)
    (entry,) = report["cases"]
    assert entry["untimed"] == 2 and {t["kind"] for t in entry["trials"]} == {"default"}
    assert entry["best"]["kind"] == "default"
    table = sparse_table.table(tmp_path / "out", grid)
    assert "tiny-sparse" in table and "(2 untimed)" in table and " *" not in table
    floor, gathered = sparse_table.floor_us(case)
    assert gathered == 2 * 300 * 656 and floor == gathered / 4219.0 / 1e3
    (tmp_path / "out" / "results.json").unlink()  # a sweep cut short: progress.jsonl only
    assert " *" in sparse_table.table(tmp_path / "out", grid)
