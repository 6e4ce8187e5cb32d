"""The element types kgen kernels take, in one table: what a Spec names, how kernel names and
templates spell it, its size, and its torch dtype."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DType:
    name: str  # "bfloat16": the Spec's name for it, and torch's attribute name
    short: str  # "bf16": in kernel and cache file names
    size: int  # bytes per element
    cpp: str  # "__nv_bfloat16": the element type a template is instantiated with

    def torch(self):
        import torch

        return getattr(torch, self.name)


DTYPES: dict[str, DType] = {
    d.name: d
    for d in (
        DType("float32", "f32", 4, "float"),
        DType("float16", "f16", 2, "__half"),
        DType("bfloat16", "bf16", 2, "__nv_bfloat16"),
    )
}


def from_torch(dtype) -> DType | None:
    """The entry of a torch dtype, or None for a dtype kgen kernels do not take."""
    return DTYPES.get(str(dtype).removeprefix("torch."))
