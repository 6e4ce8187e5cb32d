"""The small test kernel of tests/templates/axpy.cu.jinja, as a Program."""

from kgen.render import CType, render_program

from .conftest import TEMPLATES


def axpy_program(dtype: CType = CType.FLOAT32, items: int = 2, name: str = "axpy"):
    return render_program(
        name,
        "axpy.cu.jinja",
        {"dtype": dtype, "items": items},
        ("axpy",),
        meta={"items": items},
        search_path=TEMPLATES,
    )
