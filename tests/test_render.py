"""Rendering: StrictUndefined, only validated values reach a template, Params hashing."""

import pytest

from kgen.compiler import CompileError
from kgen.mla import Config, Spec
from kgen.params import ParamError
from kgen.render import CType, cpp_literal, render

from .axpy import axpy_program
from .conftest import TEMPLATES


def test_missing_template_value_is_an_error():
    with pytest.raises(ValueError, match="items"):
        render("axpy.cu.jinja", {"dtype": CType.FLOAT32}, search_path=TEMPLATES)


def test_strings_never_reach_a_template():
    with pytest.raises(TypeError, match="str"):
        render(
            "axpy.cu.jinja",
            {"dtype": 'float; system("rm -rf /")', "items": 2},
            search_path=TEMPLATES,
        )


@pytest.mark.parametrize(
    "value, text", [(True, "true"), (7, "7"), (0.5, "0.5f"), (CType.BFLOAT16, "__nv_bfloat16")]
)
def test_cpp_literals(value, text):
    assert cpp_literal(value) == text


def test_non_finite_float_refused():
    with pytest.raises(ValueError):
        cpp_literal(float("inf"))


def test_rendered_program_binds_values():
    program = axpy_program(CType.BFLOAT16, items=4)
    assert "using T = __nv_bfloat16;" in program.source
    assert "constexpr int ITEMS = 4;" in program.source
    assert program.entry_points == ("axpy",)


def test_params_hash_is_deterministic_and_value_based():
    a, b = Config(heads_per_block=2), Config(heads_per_block=2)
    assert a.key() == b.key() and hash(a) == hash(b)
    assert a.key() != Config(heads_per_block=4).key()
    assert Spec(heads=8).key() != Config().key()
    assert Config.from_dict(a.to_dict()) == a
    # a fixed value, so a change in how keys are made is seen (it would orphan tuned results)
    assert Spec(heads=8).key()[:12] == "c90c63fe7de3"


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"heads": 0}, "heads"),
        ({"heads": 8, "q_len": 65}, "q_len"),
        ({"heads": 8, "dtype": "float64"}, "dtype"),
        ({"heads": 8, "mask": "sliding"}, "mask"),
        ({"heads": 8, "q_len": 4}, "mask"),
        ({"heads": 8, "page_size": 0}, "page_size"),
        ({"heads": 8.0}, "heads"),
    ],
)
def test_invalid_spec_names_the_field(kwargs, field):
    with pytest.raises(ParamError, match=rf"Spec\.{field}="):
        Spec(**kwargs)


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"vec_width": 3}, "vec_width"),
        ({"num_warps": 3}, "num_warps"),
        ({"kv_splits": 0}, "kv_splits"),
        ({"smem_stages": -1}, "smem_stages"),
        ({"block_n": 0}, "block_n"),
        ({"heads_per_block": True}, "heads_per_block"),
    ],
)
def test_invalid_config_names_the_field(kwargs, field):
    with pytest.raises(ParamError, match=rf"Config\.{field}="):
        Config(**kwargs)


def test_generated_params_struct_matches_ctypes_field_by_field():
    """The kernel's Params comes from KernelParams' field list; NVRTC checks every offset."""
    from kgen.compiler import compile_cubin
    from kgen.mla.program import PARAMS

    types = "using T = float;\nusing QT = float;\n"
    source = types + PARAMS.cpp() + "\n" + PARAMS.offset_checks() + "\n"
    compile_cubin(source + 'extern "C" __global__ void k(Params p) { *p.lse = 0.f; }', "sm_120")
    swapped = PARAMS.offset_checks().replace("== 0,", "== 8,", 1)  # a wrong offset must fail
    with pytest.raises(CompileError, match="static assertion failed"):
        compile_cubin(source.replace(PARAMS.offset_checks(), "") + swapped, "sm_120")
