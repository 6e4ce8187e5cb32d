"""config='auto' without tuned entries (every sm_120 card's case): every valid spec gets a default
on every supported arch, the choice does not depend on what the process built before, and it is
never made on a kernel whose resources ptxas did not report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kgen import build as build_module
from kgen.arch import ARCHS
from kgen.build import MissingReportError, build_program
from kgen.compiler import DEFAULT_OPTIONS, CompileResult
from kgen.mla import PerformanceWarning, Spec, build, layout_for
from kgen.mla.dense import compiled_default
from kgen.mla.heuristic import default_config
from kgen.mla.program import mla_program

ROOT = Path(__file__).resolve().parent.parent
SUPPORTED = ["sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"]


@st.composite
def any_specs(draw):
    """The whole dense spec space: H 1-128, T 1-64, every mask, dtype and page size."""
    mask = draw(st.sampled_from(["none", "causal", "tree"]))
    return Spec(
        heads=draw(st.integers(1, 128)),
        q_len=1 if mask == "none" else draw(st.integers(1, 64)),
        dtype=draw(st.sampled_from(["float32", "float16", "bfloat16"])),
        page_size=draw(st.sampled_from([1, 2, 3, 16, 32, 64, 128, 256])),
        mask=mask,
    )


@settings(max_examples=300, deadline=None)
@given(
    spec=any_specs(),
    arch=st.sampled_from(SUPPORTED),
    batch=st.integers(1, 256),
    max_len=st.integers(1, 1 << 17),
    sm_count=st.sampled_from([28, 84, 132, 170, 188]),
)
def test_every_valid_spec_has_a_default_the_layout_accepts_on_every_arch(
    spec, arch, batch, max_len, sm_count
):
    max_len = max(max_len, spec.q_len)
    config = default_config(spec, batch, max_len, ARCHS[arch], sm_count)
    layout_for(spec, config, ARCHS[arch])  # raises ConfigError if it cannot work
    assert 1 <= config.kv_splits <= 256


# The corners the rules of thumb once left without a config (T = 64 trees, float32 at one head
# and one token), and draft rows past two m16 tiles, on the tensor-core path.
CORNERS = [
    ("sm_90", Spec(heads=1, q_len=64, dtype="bfloat16", page_size=16, mask="tree")),
    ("sm_90", Spec(heads=16, q_len=64, dtype="float16", page_size=128, mask="tree")),
    ("sm_90", Spec(heads=1, q_len=1, dtype="float32", page_size=64, mask="none")),
    ("sm_120", Spec(heads=1, q_len=1, dtype="float32", page_size=64, mask="none")),
    ("sm_120", Spec(heads=16, q_len=40, dtype="bfloat16", page_size=128, mask="tree")),
    ("sm_120", Spec(heads=2, q_len=33, dtype="float16", page_size=1, mask="causal")),
]


@pytest.mark.parametrize(
    ("arch", "spec"), CORNERS, ids=[f"{a}-{s.short_name()}" for a, s in CORNERS]
)
def test_corner_shapes_get_a_spill_free_compiled_default(arch, spec):
    with warnings.catch_warnings():
        warnings.simplefilter("error", PerformanceWarning)
        config = compiled_default(spec, 4, 4096 + spec.q_len, ARCHS[arch], sm_count=132)
    res = build(spec, config, arch).resources
    assert res.spills == 0 and res.smem <= ARCHS[arch].smem_per_block, res.summary()
    if spec.dtype != "float32":
        assert config.compute == "mma", config.short_name()


# Draft rows past three m16 tiles of one head (T = 49-64) where no block of them fits 99 KB and
# the register file unspilled: the draft tokens cut into token groups, each a two-tile block.
TOKEN_GROUPED = [
    ("sm_120", Spec(heads=1, q_len=64, dtype="bfloat16", page_size=16, mask="tree")),
    ("sm_120", Spec(heads=128, q_len=49, dtype="float16", page_size=64, mask="causal")),
    ("sm_86", Spec(heads=8, q_len=57, dtype="bfloat16", page_size=1, mask="tree")),
]


@pytest.mark.parametrize(
    ("arch", "spec"), TOKEN_GROUPED, ids=[f"{a}-{s.short_name()}" for a, s in TOKEN_GROUPED]
)
def test_draft_rows_past_three_m16_tiles_on_small_sms_take_token_groups_unspilled(arch, spec):
    with warnings.catch_warnings():
        warnings.simplefilter("error", PerformanceWarning)
        config = compiled_default(spec, 1, 4160, ARCHS[arch], sm_count=188)
    assert config.compute == "mma" and config.token_groups == 2, config.short_name()
    res = build(spec, config, arch).resources
    assert res.spills == 0 and res.smem <= ARCHS[arch].smem_per_block, res.summary()


@settings(max_examples=4, deadline=None)
@given(spec=any_specs(), batch=st.sampled_from([1, 8, 64]))
def test_the_sm120_default_of_a_random_spec_compiles_without_spills(spec, batch):
    arch = ARCHS["sm_120"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        config = compiled_default(spec, batch, 8192, arch, sm_count=188)
    res = build(spec, config, arch).resources
    assert res.smem <= arch.smem_per_block
    assert res.spills == 0 and not caught, (config.short_name(), res.summary())


_CHOOSE = textwrap.dedent(
    """
    import json, sys
    from kgen.arch import ARCHS
    from kgen.mla import Spec
    from kgen.mla.dense import compiled_default
    specs = [Spec(**s) for s in json.loads(sys.argv[1])]
    print(json.dumps([
        compiled_default(s, 8, 8192, ARCHS["sm_90"], 132).to_dict() for s in specs
    ]))
    """
)


def _choose_in_a_process(specs: list[dict], cache: Path) -> list[dict]:
    env = {**os.environ, "KGEN_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", _CHOOSE, json.dumps(specs)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    return json.loads(done.stdout)


def test_the_default_is_the_same_in_every_process_whatever_ran_before(tmp_path):
    """The same shapes asked in two orders in two processes with fresh caches, then again from a
    warm cache: the same configs every time."""
    specs = [
        dict(heads=128, q_len=1, dtype="bfloat16", mask="none"),
        dict(heads=8, q_len=1, dtype="bfloat16", mask="none"),
        dict(heads=8, q_len=8, dtype="bfloat16", mask="tree"),
    ]
    forward = _choose_in_a_process(specs, tmp_path / "a")
    backward = _choose_in_a_process(specs[::-1], tmp_path / "b")[::-1]
    warm = _choose_in_a_process(specs[::-1], tmp_path / "a")[::-1]
    assert forward == backward == warm


def _program():
    spec = Spec(heads=8, q_len=1, dtype="bfloat16", mask="none")
    config = default_config(spec, 1, 4096, ARCHS["sm_90"], 132)
    return mla_program(spec, config, layout_for(spec, config, ARCHS["sm_90"]))


def test_a_compile_log_without_ptxas_report_is_refused_not_guessed(fresh_cache, monkeypatch):
    calls = []

    def no_report(source, arch, options, name):
        calls.append(options)
        return CompileResult(cubin=b"\x7fELF", log="")  # what NVRTC's cache hit returns

    monkeypatch.setattr(build_module, "compile_cubin", no_report)
    with pytest.raises(MissingReportError, match="no ptxas report for mla_attention"):
        build_program(_program(), "sm_90")
    assert len(calls) == 1
    assert not list(fresh_cache.rglob("*.json"))  # and nothing was cached


def test_nvrtcs_own_cache_is_off_and_a_cache_entry_without_report_is_a_miss(
    fresh_cache, monkeypatch
):
    assert "--no-cache" in DEFAULT_OPTIONS  # (a program NVRTC finds in its cache skips ptxas)
    binary = build_program(_program(), "sm_90")
    assert set(binary.program.entry_points) <= set(binary.usage)
    (meta_path,) = fresh_cache.rglob(f"{binary.stem}.json")
    meta = json.loads(meta_path.read_text())
    meta["usage"] = {}
    meta_path.write_text(json.dumps(meta))
    monkeypatch.setattr(build_module, "_memo", {})
    with pytest.warns(UserWarning):
        again = build_program(_program(), "sm_90")
    assert again.origin == "compiled" and again.usage == binary.usage


def test_the_default_is_public_and_needs_no_gpu():
    """kgen.mla.default_config / default_sparse_config: what config='auto' runs on a card with no
    tuned entries, for the arch's usual card unless told its SM count."""
    import kgen
    from kgen.arch import usual_sm_count
    from kgen.mla import SparseSpec
    from kgen.mla.sparse.heuristic import default_sparse_config

    spec = Spec(heads=8, q_len=4, dtype="bfloat16", mask="tree")
    arch = ARCHS["sm_120"]
    assert kgen.mla.default_config(spec, batch=4, max_seq_len=8192) == compiled_default(
        spec, 4, 8192, arch, usual_sm_count(arch)
    )
    assert kgen.mla.default_config(spec, "sm_90", 4, 8192, sm_count=7) == compiled_default(
        spec, 4, 8192, ARCHS["sm_90"], 7
    )
    sparse = SparseSpec(heads=16, q_len=1, topk=2048)
    assert kgen.mla.default_sparse_config(sparse, batch=32) == default_sparse_config(
        sparse, 32, arch, usual_sm_count(arch)
    )
    with pytest.raises(ValueError, match="batch"):
        kgen.mla.default_config(spec, batch=0)
    with pytest.raises(ValueError, match="max_seq_len"):
        kgen.mla.default_config(spec, max_seq_len=3)
    with pytest.raises(TypeError, match="spec"):
        kgen.mla.default_sparse_config(spec)
    with pytest.raises(ValueError, match="sm_999"):
        kgen.mla.default_config(spec, arch="sm_999")
