"""examples/deepseek_v3_decode.py: kgen decodes a DeepSeek-V3 attention layer from transformers
(absorbed weights, paged cache, draft tree) like the layer's own eager forward. Skipped where
transformers (an optional extra) or its DeepSeek-V3 model is not installed."""

import importlib.util
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu
EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "deepseek_v3_decode.py"


@pytest.fixture(scope="module")
def example():
    pytest.importorskip("transformers.models.deepseek_v3.modeling_deepseek_v3")
    spec = importlib.util.spec_from_file_location("deepseek_v3_decode", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("dtype, tolerance", [("float32", 1e-4), ("bfloat16", 2e-2)])
def test_kgen_decodes_a_deepseek_v3_layer_like_its_own_forward(example, dtype, tolerance):
    import torch

    got, expected = example.decode_step(dtype=getattr(torch, dtype))
    assert got.shape == expected.shape == (2, 4, 256)
    assert example.relative_error(got, expected) < tolerance
    # the comparison can fail: each draft's row differs from its neighbour's
    assert example.relative_error(got, expected.roll(1, dims=1)) > 10 * tolerance
