"""Rendering: Jinja templates + validated values -> CUDA C++ source (a Program).

Only integers, booleans, members of `CType` and kgen's own `CStruct` layouts reach a template,
each turned into C++ text here, in one place; no user-supplied string is ever pasted into a kernel.
"""

from __future__ import annotations

import ctypes
import enum
import functools
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import jinja2

from kgen.dtypes import DTYPES

_CHECKOUT_TEMPLATES = Path(__file__).resolve().parent.parent / "templates"


class CType(enum.Enum):
    """Element types a template may be instantiated with, by their C++ spelling."""

    FLOAT32 = "float"
    FLOAT16 = "__half"
    BFLOAT16 = "__nv_bfloat16"

    @classmethod
    def from_dtype(cls, dtype: str) -> CType:
        """The C++ type of a kgen.dtypes name ("bfloat16" -> BFLOAT16)."""
        return cls(DTYPES[dtype].cpp)


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
C_TYPES = {  # the C spellings a generated struct field may have, by ctypes type
    ctypes.c_int32: "int",
    ctypes.c_int64: "long long",
    ctypes.c_float: "float",
}
C_POINTEES = (
    "const T",
    "T",
    "const QT",  # q's and out's type where it differs from the tiles' T
    "QT",
    "const int",
    "int",
    "float",
    "const unsigned long long",
    "const unsigned char",
)


@dataclass(frozen=True)
class CStruct:
    """A C struct generated from a ctypes.Structure, so host and kernel share one field list.

    `pointees` gives the pointed-to C type of each c_void_p field (one of C_POINTEES).
    """

    name: str
    layout: type[ctypes.Structure]
    pointees: tuple[tuple[str, str], ...]

    def cpp(self) -> str:
        """The struct definition and a size check (every NVRTC accepts it)."""
        pointees = dict(self.pointees)
        lines = [f"struct {self.name} {{"]
        for field, kind in self.layout._fields_:
            if not _IDENTIFIER.fullmatch(field):
                raise ValueError(f"struct field {field!r} is not a C identifier")
            if kind is ctypes.c_void_p:
                pointee = pointees[field]
                if pointee not in C_POINTEES:
                    raise ValueError(f"pointer field {field}: {pointee!r} not in {C_POINTEES}")
                lines.append(f"  {pointee}* {field};")
            else:
                lines.append(f"  {C_TYPES[kind]} {field};")
        size = ctypes.sizeof(self.layout)
        lines += ["};", f'static_assert(sizeof({self.name}) == {size}, "{self.name} size");']
        return "\n".join(lines)

    def offset_checks(self) -> str:
        """static_asserts of every field's offset against ctypes' (a CPU test compiles these).

        NVRTC ships no <cstddef> for offsetof, and 13.0 and 13.2 reject __builtin_offsetof (13.5
        takes it); 13.0, 13.2 and 13.5 all fold __INTADDR__, the constant address builtin of
        their EDG front end (what EDG's own offsetof expands to), of a null pointer's member."""
        return "\n".join(
            f"static_assert(__INTADDR__(&(({self.name}*)0)->{field}) == "
            f'{getattr(self.layout, field).offset}, "{field}");'
            for field, _ in self.layout._fields_
        )


Value = bool | int | float | CType | CStruct


def cpp_literal(value: Value) -> str:
    """The C++ spelling of one template value."""
    if isinstance(value, CType):
        return value.value
    if isinstance(value, CStruct):
        return value.cpp()
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"template value {value!r} is not finite")
        return f"{value!r}f"
    raise TypeError(
        "template values must be int, bool, float, CType or CStruct, not "
        f"{type(value).__name__} ({value!r})"
    )


@dataclass(frozen=True)
class Program:
    """A rendered CUDA C++ translation unit, ready to compile.

    name: a readable stem for cache file names ("mla_bf16_h8_t4_..."); entry_points: the
    extern "C" kernels it defines; meta: JSON-able facts (spec, config) stored beside the cubin.
    """

    name: str
    source: str
    entry_points: tuple[str, ...]
    meta: Mapping[str, object]


def template_dir() -> Path:
    """templates/ of the checkout when running from one, else the installed package data."""
    if _CHECKOUT_TEMPLATES.is_dir():
        return _CHECKOUT_TEMPLATES
    installed = resources.files("kgen.templates")
    if not isinstance(installed, Path):  # a zip import: Jinja's FileSystemLoader needs files
        raise RuntimeError(f"kgen's templates are not files on disk ({installed!r})")
    return installed


@functools.cache
def environment(search_path: Path | None = None) -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(search_path or template_dir())),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )


def render(template: str, values: Mapping[str, Value], search_path: Path | None = None) -> str:
    """Render `template` (a path under templates/) with C++ literals made from `values`."""
    literals = {key: cpp_literal(value) for key, value in values.items()}
    try:
        return environment(search_path).get_template(template).render(**literals)
    except jinja2.UndefinedError as exc:
        raise ValueError(f"template {template!r} needs a value that was not given: {exc}") from exc


def render_program(
    name: str,
    template: str,
    values: Mapping[str, Value],
    entry_points: tuple[str, ...],
    meta: Mapping[str, object] | None = None,
    search_path: Path | None = None,
) -> Program:
    """Render a template into a Program whose kernels are `entry_points`."""
    source = render(template, values, search_path)
    return Program(name=name, source=source, entry_points=entry_points, meta=dict(meta or {}))
