"""k_scale through plan/run without a GPU: a Runner of an fp8 spec on CPU tensors with the launch
recorded instead of sent (as tests/test_runner.py does). The "fp8_tensor" cache's scale is bound
into the kernel's parameters on the fast path and the checked one; a missing, extra or wrong
k_scale is refused naming it; the fp8 parameter struct extends the 16-bit one field by field."""

from __future__ import annotations

import ctypes
import types

import pytest
import torch

from kgen.arch import ARCHS
from kgen.mla import Config, Spec, layout_for, running
from kgen.mla import runner as runner_module
from kgen.mla.api import spec_for
from kgen.mla.inputs import InputError, check_inputs
from kgen.mla.program import FP8_PARAMS, FP8KernelParams, KernelParams, params_type
from kgen.mla.runner import Runner

from .mla_helpers import RecordedLaunch

CONFIG = Config(compute="mma", heads_per_block=16, kv_splits=2, block_n=16)
BATCH, MAX_PAGES, PAGES, PAGE = 2, 3, 7, 16
CPU = torch.device("cpu")
WIDTH = {"fp8_tensor": 576, "fp8": 656, "dtype": 576}


def make_runner(monkeypatch, kv_format: str) -> Runner:
    monkeypatch.setattr(Runner, "_packed_launch", lambda self, grid: RecordedLaunch(self._params))
    monkeypatch.setattr(runner_module, "current_stream", lambda index: 1234)
    monkeypatch.setattr(running, "current_device", lambda: -1)
    spec = Spec(heads=16, page_size=PAGE, kv_format=kv_format)
    # what a Runner reads of an MLAKernel; nothing compiled (the layout's rows and threads
    # are the 16-bit spec's: the runner reads nothing of it that the cache format changes)
    layout = layout_for(Spec(heads=16, page_size=PAGE), CONFIG, ARCHS["sm_90"])
    kernel = types.SimpleNamespace(spec=spec, config=CONFIG, layout=layout, binary=None)
    return Runner(kernel, BATCH, MAX_PAGES, torch.device("cpu"), scale=0.25)


def tensors(kv_format: str) -> dict:
    cache = (
        torch.randn(PAGES, PAGE, 576).to(torch.bfloat16)
        if kv_format == "dtype"
        else torch.randint(0, 255, (PAGES, PAGE, WIDTH[kv_format]), dtype=torch.uint8)
    )
    return {
        "q": torch.randn(BATCH, 1, 16, 576).to(torch.bfloat16),
        "kv_cache": cache,
        "block_table": torch.arange(BATCH * MAX_PAGES, dtype=torch.int32).view(BATCH, -1),
        "seq_lens": torch.tensor([20, 33], dtype=torch.int32),
    }


def test_the_tensor_scale_is_bound_on_the_fast_path_and_the_checked_one(monkeypatch):
    runner = make_runner(monkeypatch, "fp8_tensor")
    assert type(runner._params) is FP8KernelParams and "k_scale" in runner.fast_path_source
    args, scale = tensors("fp8_tensor"), torch.tensor([0.5])
    runner.run(**args, k_scale=scale)
    sent = runner._launch.sent[-1]
    assert (sent["k_scale"], sent["kv"]) == (scale.data_ptr(), args["kv_cache"].data_ptr())
    assert (sent["kv_sp"], sent["kv_sr"], sent["num_pages"]) == (PAGE * 576, 576, PAGES)
    assert not runner._odd_strides  # the fast path took them
    padded = torch.zeros(PAGES, PAGE + 1, 576, dtype=torch.uint8)[:, 1:]  # pages further apart
    other = torch.tensor([0.25, 9.0])[:1]
    runner.run(**{**args, "kv_cache": padded}, k_scale=other)  # the checked path
    sent = runner._launch.sent[-1]
    assert (sent["k_scale"], sent["kv_sp"]) == (other.data_ptr(), (PAGE + 1) * 576)


@pytest.mark.parametrize(
    "kv_format, k_scale, message",
    [
        ("fp8_tensor", None, r"k_scale: expected a torch.Tensor, got NoneType"),
        ("fp8_tensor", torch.tensor([0.5], dtype=torch.float16), r"k_scale: expected dtype"),
        ("fp8_tensor", torch.tensor([0.5, 1.0]), r"k_scale: expected shape \[1\]"),
        ("fp8_tensor", torch.tensor(0.5), r"k_scale: expected 1 dimensions"),
        ("fp8", torch.tensor([0.5]), r"k_scale: expected None \(a kv_format='fp8' cache"),
        ("dtype", torch.tensor([0.5]), r"k_scale: expected None \(a kv_format='dtype' cache"),
    ],
)
def test_a_missing_extra_or_wrong_k_scale_is_refused_by_name(
    monkeypatch, kv_format, k_scale, message
):
    runner = make_runner(monkeypatch, kv_format)
    with pytest.raises(InputError, match=message):
        runner.run(**tensors(kv_format), k_scale=k_scale)
    assert not runner._launch.sent
    spec = runner.spec
    with pytest.raises(InputError, match=message):  # the one-call forms' checks
        check_inputs(spec, 1, **tensors(kv_format), mask=None, device=CPU, k_scale=k_scale)


@pytest.mark.parametrize("kv_format", ["fp8", "dtype"])
def test_a_cache_without_a_tensor_scale_runs_without_one(monkeypatch, kv_format):
    runner = make_runner(monkeypatch, kv_format)
    runner.run(**tensors(kv_format))
    (sent,) = runner._launch.sent
    assert not sent.get("k_scale")  # (a null pointer reads back as None)
    assert type(runner._params) is params_type(runner.spec)


def test_a_uint8_cache_names_its_format_by_its_token_bytes():
    q = torch.zeros(1, 1, 16, 576, dtype=torch.bfloat16)
    for kv_format, width in (("fp8_tensor", 576), ("fp8", 656)):
        cache = torch.zeros(3, 64, width, dtype=torch.uint8)
        assert spec_for(q, cache).kv_format == kv_format
    assert spec_for(q, torch.zeros(3, 64, 576, dtype=torch.bfloat16)).kv_format == "dtype"
    with pytest.raises(InputError, match="kv_cache: a uint8 .* 576 bytes .* or 656"):
        spec_for(q, torch.zeros(3, 64, 584, dtype=torch.uint8))


def test_the_fp8_struct_extends_the_16_bit_one_field_by_field():
    shared = KernelParams._fields_
    assert FP8KernelParams._fields_[: len(shared)] == shared
    for name, _ in shared:
        assert getattr(FP8KernelParams, name).offset == getattr(KernelParams, name).offset
    assert FP8KernelParams._fields_[-1] == ("k_scale", ctypes.c_void_p)
    from kgen.compiler import CompileError, compile_cubin

    struct = FP8_PARAMS.cpp() + "\n" + FP8_PARAMS.offset_checks()
    source = "using T = float;\nusing QT = float;\n" + struct + "\n"
    compile_cubin(
        source + 'extern "C" __global__ void k(Params p) { *p.lse = *p.k_scale; }', "sm_90"
    )
    wrong = FP8_PARAMS.offset_checks().replace(
        f"== {FP8KernelParams.k_scale.offset},", f"== {FP8KernelParams.k_scale.offset + 8},"
    )
    with pytest.raises(CompileError, match="static assertion failed"):
        compile_cubin(source.replace(FP8_PARAMS.offset_checks(), wrong), "sm_90")


def test_the_op_schema_takes_k_scale():
    import kgen.mla.op  # noqa: F401  (registers the op)

    schema = str(torch.ops.kgen.mla_attention.default._schema)
    assert "Tensor? k_scale=None" in schema


@pytest.mark.parametrize("value", [float("nan"), float("inf"), 0.0, -1.0])
def test_validate_refuses_a_scale_that_is_not_finite_and_positive(value):
    from kgen.mla.inputs import validate_on_device

    spec, args = Spec(heads=16, page_size=PAGE, kv_format="fp8_tensor"), tensors("fp8_tensor")
    table, lens = args["block_table"], args["seq_lens"]
    validate_on_device(spec, args["kv_cache"], table, lens, torch.tensor([0.5]))
    with pytest.raises(InputError, match=r"k_scale\[0\]=.*must be finite and > 0"):
        validate_on_device(spec, args["kv_cache"], table, lens, torch.tensor([value]))
