"""The example clients on the GPU. examples/deepseek_v3_decode.py: kgen decodes a DeepSeek-V3
attention layer from transformers (absorbed weights, paged cache, draft tree) like the layer's own
eager forward (skipped where transformers, an optional extra, or its DeepSeek-V3 model is not
installed). examples/deepseek_v4_decode.py: a DeepSeek-V4-style step (two fp8 caches, top-k and
window lists with per-row lengths, a sink, three MTP rows) like its float64 computation."""

import importlib.util
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def load(name: str):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def example():
    pytest.importorskip("transformers.models.deepseek_v3.modeling_deepseek_v3")
    return load("deepseek_v3_decode")


# fp8_tensor: e4m3 keeps 3 mantissa bits (a value within 1/16 of itself), averaged over 576
@pytest.mark.parametrize(
    "dtype, kv_format, tolerance",
    [("float32", "dtype", 1e-4), ("bfloat16", "dtype", 2e-2), ("bfloat16", "fp8_tensor", 6e-2)],
)
def test_kgen_decodes_a_deepseek_v3_layer_like_its_own_forward(
    example, dtype, kv_format, tolerance
):
    import torch

    got, expected = example.decode_step(dtype=getattr(torch, dtype), kv_format=kv_format)
    assert got.shape == expected.shape == (2, 4, 256)
    assert example.relative_error(got, expected) < tolerance
    # the comparison can fail: each draft's row differs from its neighbour's by far more than
    # any tolerance here (about 0.6 in relative error)
    assert example.relative_error(got, expected.roll(1, dims=1)) > 0.3


def test_kgen_runs_a_deepseek_v4_decode_step_like_its_float64_computation():
    import torch

    from kgen.mla.check import check_attention

    example = load("deepseek_v4_decode")
    result = example.decode_step()
    (out, lse, layer), (ref_out, ref_lse, ref_layer) = result["kgen"], result["reference"]
    assert out.shape == ref_out.shape == (3, 3, 16, 512) and layer.shape == (3, 3, 256)
    check_attention(*(x.double().cpu().numpy() for x in (out, lse, ref_out, ref_lse)), "bfloat16")
    assert example.relative_error(layer, ref_layer) < 1e-2
    # the comparison can fail: the rows' lists, the sink and the lengths each change the result
    inputs = result["inputs"]
    assert example.relative_error(out, ref_out.roll(1, dims=1)) > 0.1
    no_sink = ref_out * (1 + torch.exp(inputs["sink"] - ref_lse))[..., None]
    assert example.relative_error(out, no_sink) > 0.1
    whole = tuple(torch.full_like(n, 1 << 20) for n in inputs["lengths"])
    assert example.relative_error(out, example.reference(**{**inputs, "lengths": whole})[0]) > 0.1
