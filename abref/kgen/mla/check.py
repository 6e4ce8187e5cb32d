"""Whether an MLA result matches its reference within semantics.md's tolerances.

Used by the tests (against the float64 NumPy reference in tests/) and by the sweep (against a
float64 reference computed on the GPU), so a wrong variant fails the same way in both.
"""

from __future__ import annotations

import numpy as np

TOLERANCE = {
    "float32": 1e-5,
    "float16": 2e-3,
    "bfloat16": 1e-2,
}  # ||out - ref|| / ||ref|| per (b, t)
LSE_TOLERANCE = {"float32": 1e-3, "float16": 2e-2, "bfloat16": 2e-2}  # absolute


def relative_errors(out, ref_out) -> np.ndarray:
    """||out - ref|| / ||ref|| for each (b, t) row; a row whose reference is all zero must be 0."""
    out = np.asarray(out, dtype=np.float64)
    ref_out = np.asarray(ref_out, dtype=np.float64)
    diff = np.linalg.norm((out - ref_out).reshape(*out.shape[:2], -1), axis=-1)
    norm = np.linalg.norm(ref_out.reshape(*ref_out.shape[:2], -1), axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(norm > 0, diff / np.where(norm > 0, norm, 1), np.where(diff > 0, np.inf, 0))


def _same_nans(name: str, got: np.ndarray, ref: np.ndarray) -> None:
    mismatch = np.isnan(got) != np.isnan(ref)
    if mismatch.any():
        where = tuple(np.argwhere(mismatch)[0])
        raise AssertionError(
            f"NaN mismatch in {name} at {where}: got {got[where]}, reference {ref[where]}"
        )


def check_attention(out, lse, ref_out, ref_lse, dtype: str) -> float:
    """Raise AssertionError unless (out, lse) matches the reference within dtype's tolerance.

    NaN must appear exactly where the reference has NaN (rows the reference leaves finite must be
    finite, which also catches unwritten poisoned outputs). Returns the worst relative error.
    """
    out = np.asarray(out, dtype=np.float64)
    lse = np.asarray(lse, dtype=np.float64)
    ref_out = np.asarray(ref_out, dtype=np.float64)
    ref_lse = np.asarray(ref_lse, dtype=np.float64)
    assert out.shape == ref_out.shape, f"out shape {out.shape} != {ref_out.shape}"
    assert lse.shape == ref_lse.shape, f"lse shape {lse.shape} != {ref_lse.shape}"
    _same_nans("out", out, ref_out)
    _same_nans("lse", lse, ref_lse)
    nan_ref = np.isnan(ref_out)
    errors = relative_errors(np.where(nan_ref, 0, out), np.where(nan_ref, 0, ref_out))
    worst = float(errors.max()) if errors.size else 0.0
    if worst > TOLERANCE[dtype]:
        b, t = np.argwhere(errors == worst)[0]
        raise AssertionError(
            f"out row (b={b}, t={t}) relative error {worst:.3g} > {TOLERANCE[dtype]} ({dtype})"
        )
    inf_mismatch = np.isinf(ref_lse) != np.isinf(lse)
    same_inf = np.where(np.isinf(ref_lse), lse == ref_lse, True)
    if inf_mismatch.any() or not same_inf.all():
        where = np.argwhere(inf_mismatch | ~same_inf)[0]
        raise AssertionError(
            f"lse at {tuple(where)}: got {lse[tuple(where)]}, reference {ref_lse[tuple(where)]}"
        )
    finite = np.isfinite(ref_lse)
    lse_err = np.abs(lse[finite] - ref_lse[finite])
    if lse_err.size and lse_err.max() > LSE_TOLERANCE[dtype]:
        raise AssertionError(
            f"lse absolute error {lse_err.max():.3g} > {LSE_TOLERANCE[dtype]} ({dtype})"
        )
    return worst
