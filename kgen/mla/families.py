"""The kernel families of the MLA framework, by name (the tuning database's entry["family"])."""

from __future__ import annotations

from kgen.mla.dense import DENSE
from kgen.mla.family import Family
from kgen.mla.sparse.family import SPARSE

FAMILIES: dict[str, Family] = {f.name: f for f in (DENSE, SPARSE)}


def family_of(spec) -> Family:
    """The family whose spec type `spec` is."""
    for family in FAMILIES.values():
        if isinstance(spec, family.spec_type):
            return family
    raise TypeError(f"spec: expected kgen.mla.Spec or SparseSpec, got {type(spec).__name__}")
