"""Every fp8 spec (both formats) has a heuristic default on the mma path that compiles (CPU
only) for sm_90 and sm_120 without spills and within sm_120's 99 KB of shared memory a block; its
rendered source reads the raw stages, as float16 MMA fragments for bfloat16 q on "fp8_tensor"
(one conversion a pair: kgen.mla.program.tile_dtype) and widened into a bfloat16 tile on
DeepSeek-V3.2's rows (no kernel reads e4m3 bytes as 16-bit values), and the layout model's shared
memory is the compiled kernel's."""

from __future__ import annotations

import pytest

from kgen.arch import resolve_arch, usual_sm_count
from kgen.mla.dense import DENSE, build, compiled_default
from kgen.mla.layout import layout_for
from kgen.mla.spec import Spec

SMEM_LIMIT = 99 * 1024  # sm_120's per block, the smaller of the two
SPECS = [
    Spec(heads=heads, q_len=q_len, mask=mask, kv_format=kv_format)
    for kv_format in ("fp8_tensor", "fp8")
    for heads in (8, 16, 64, 128)
    for q_len, mask in ((1, "none"), (4, "tree"))
]


@pytest.mark.parametrize("arch_name", ["sm_90", "sm_120"])
@pytest.mark.parametrize("spec", SPECS, ids=lambda spec: spec.short_name())
def test_the_default_compiles_without_spills_within_99_kb(spec, arch_name):
    arch = resolve_arch(arch_name)
    config = compiled_default(spec, 8, 4096, arch, usual_sm_count(arch))
    assert config.compute == "mma" and config.qk_ahead == 0 and config.ring_slack == 0
    resources = build(spec, config, arch).resources
    assert resources.spill_stores == 0 and resources.spill_loads == 0, resources
    assert resources.dynamic_smem == layout_for(spec, config, arch).dynamic_smem
    assert resources.dynamic_smem <= SMEM_LIMIT, resources
    source = DENSE.render(spec, config, arch).source
    fragments = spec.kv_format == "fp8_tensor"
    assert ("widen_tile(tile, wide)" in source) != fragments
    assert "with_scales(p, q_into_t(" in source
    assert ("qk_fragments(acc, a, tile, ks, ln.lane);" in source) == fragments
    assert f"constexpr bool FRAGMENTS = {'true' if fragments else 'false'};" in source
    tile = "__half" if fragments else "__nv_bfloat16"
    assert f"using T = {tile};" in source and "using QT = __nv_bfloat16;" in source
    group = 0 if spec.kv_format == "fp8_tensor" else 128  # V3.2's rows: a scale a 128 values
    assert f"constexpr int SCALE_GROUP = {group};" in source


def test_the_layout_counts_the_raw_stages_and_the_16_bit_tile():
    arch = resolve_arch("sm_90")
    spec16 = Spec(heads=16)
    tensor, v32 = Spec(heads=16, kv_format="fp8_tensor"), Spec(heads=16, kv_format="fp8")
    config = compiled_default(tensor, 8, 4096, arch, usual_sm_count(arch))
    wide = config.block_n * 1152  # one tile of 576 16-bit values a position
    assert layout_for(spec16, config, arch).stage_bytes == config.smem_stages * wide
    # fp8_tensor's raw stages are read as fragments: no 16-bit tile
    assert layout_for(tensor, config, arch).stage_bytes == config.smem_stages * wide // 2
    raw = config.smem_stages * config.block_n * 656  # V3.2's rows
    assert layout_for(v32, config, arch).stage_bytes == raw + wide


def test_raw_stages_that_do_not_fit_are_refused_before_compiling():
    from kgen.mla.spec import Config
    from kgen.params import ConfigError

    config = Config(compute="mma", heads_per_block=16, block_n=64, smem_stages=4, softmax="split")
    with pytest.raises(ConfigError, match="smem_stages.*with the 16-bit tile"):
        layout_for(Spec(heads=16, kv_format="fp8"), config, resolve_arch("sm_120"))
    config = Config(compute="mma", heads_per_block=16, block_n=64, smem_stages=8, softmax="split")
    with pytest.raises(ConfigError, match=r"smem_stages.*8 KV stages \d+, scores"):
        layout_for(Spec(heads=16, kv_format="fp8_tensor"), config, resolve_arch("sm_120"))


def test_where_the_rules_refuse_every_candidate_the_error_says_why(monkeypatch):
    """config='auto' for a spec no block serves says the first candidate's refusal, not only
    that nothing fits."""
    from kgen.mla import heuristic
    from kgen.mla.choose import default_config
    from kgen.params import ConfigError

    def refuse(spec, config, arch):
        raise ConfigError(f"Config.compute={config.compute!r}: no block reads this (a test)")

    monkeypatch.setattr(heuristic, "layout_for", refuse)
    with pytest.raises(ConfigError, match=r"every candidate is refused, the first by Config"):
        default_config(Spec(heads=16), "sm_120")
