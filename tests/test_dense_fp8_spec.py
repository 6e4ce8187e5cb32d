"""The dense Spec's cache format (kv_format): every spec without an fp8 cache keeps its name and
key, the fp8 rows describe a uint8 cache (and k_scale for the tensor-scaled one), and the
configs no kernel reads an fp8 cache with are refused by field."""

from __future__ import annotations

import pytest

from kgen.mla.inputs import operands
from kgen.mla.rules import allows
from kgen.mla.spec import Config, Spec
from kgen.params import ConfigError, ParamError

# Spec(heads=16).key() and a tree fp16 spec's, before Spec had kv_format
KEYS = {
    Spec(heads=16): "2f22ea26f0bdf6ac345e89e9533102182614d7d8a73a1b33179720cd333834d7",
    Spec(heads=128, q_len=4, mask="tree", dtype="float16", page_size=1): (
        "93172b8cd5a7648de03b5540590ab5b2db8f197ba1e05babaa9c3c48acdd0c51"
    ),
}


@pytest.mark.parametrize("spec", list(KEYS))
def test_a_spec_without_an_fp8_cache_keeps_its_key_and_name(spec):
    assert spec.key() == KEYS[spec] and "kv_format" not in spec.to_dict()
    assert Spec.from_dict(spec.to_dict()) == spec
    assert spec.short_name().endswith(("_none", "_tree"))


@pytest.mark.parametrize("name, width", [("fp8_tensor", 576), ("fp8", 656)])
def test_an_fp8_spec_describes_a_uint8_cache(name, width):
    spec = Spec(heads=16, kv_format=name)
    assert spec.short_name() == f"bf16_h16_t1_p64_none_{name}"
    assert Spec.from_dict(spec.to_dict()) == spec and spec.key() != Spec(heads=16).key()
    inputs, _ = operands(spec)
    cache = {op.name: op for op in inputs}["kv_cache"]
    assert (cache.dtype, cache.shape[1:], cache.align) == ("uint8", (64, width), 16)
    (scale,) = [op for op in inputs if op.name == "k_scale"]
    assert (scale.dtype, scale.shape) == ("float32", (1,))
    assert bool(scale.absent) == (width != 576)  # the V3.2 rows carry their scales


def test_an_fp8_spec_is_refused_where_it_cannot_be_read():
    with pytest.raises(ParamError, match="kv_format='fp8_tensor'.*latent_dim=512, rope_dim=64"):
        Spec(heads=16, rope_dim=0, kv_format="fp8_tensor")
    with pytest.raises(ParamError, match="kv_format='fp8'.*not float32"):
        Spec(heads=16, dtype="float32", kv_format="fp8")
    with pytest.raises(ParamError, match="kv_format"):
        Spec(heads=16, kv_format="v4_fp8")
    spec, config = Spec(heads=16, kv_format="fp8_tensor"), Config(compute="fma")
    assert allows(Spec(heads=16), config) and not allows(spec, config)
    from kgen.mla.dense import build

    with pytest.raises(ConfigError, match="only 'mma' reads an fp8 cache.*fp8_tensor"):
        build(spec, config, "sm_90")


@pytest.mark.parametrize(
    "kv_format, fields, field, why",
    [
        ("fp8", {"qk_ahead": 1, "smem_stages": 3}, "qk_ahead", "one 16-bit tile"),
        ("fp8_tensor", {"body": "specialized", "num_warps": 8, "smem_stages": 4}, "body", "no fp8"),
        ("fp8", {"ring_slack": 1, "smem_stages": 3}, "ring_slack", "one 16-bit tile"),
    ],
)
def test_the_mma_path_refuses_what_it_does_not_read_of_an_fp8_cache(kv_format, fields, field, why):
    config = Config(compute="mma", heads_per_block=16, block_n=16, softmax="split", **fields)
    spec = Spec(heads=16, kv_format=kv_format)
    assert not allows(spec, config) and allows(Spec(heads=16), config)
    from kgen.mla.dense import build

    with pytest.raises(ConfigError, match=f"{field}.*{why}"):
        build(spec, config, "sm_90")


@pytest.mark.parametrize(
    "fields", [{"qk_ahead": 1, "smem_stages": 3}, {"ring_slack": 1, "smem_stages": 3}]
)
def test_fragments_read_the_raw_stages_where_a_16_bit_tile_would_be_shared(fields):
    """fp8_tensor's raw stages are the MMAs' operands (no 16-bit tile): q.K ahead and the ring
    read them as the 16-bit kernel reads its tiles."""
    config = Config(compute="mma", heads_per_block=16, block_n=16, softmax="split", **fields)
    assert allows(Spec(heads=16, kv_format="fp8_tensor"), config)
