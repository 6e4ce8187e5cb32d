"""The sweep's float64 torch oracle agrees with the NumPy reference (on the CPU)."""

import numpy as np
import pytest

from kgen.mla import Spec
from kgen.mla.workload import make_workload
from kgen.tune.baseline import torch_mla
from kgen.tune.reference import torch_reference

from .mla_helpers import reference_for


@pytest.mark.parametrize("mask", ["none", "causal", "tree"])
def test_torch_oracle_matches_numpy_reference(mask):
    spec = Spec(
        heads=3,
        q_len=1 if mask == "none" else 4,
        dtype="bfloat16",
        page_size=5,
        mask=mask,
        latent_dim=32,
        rope_dim=16,
    )
    w = make_workload(spec, [spec.q_len, spec.q_len + 17, spec.q_len + 40], device="cpu", seed=9)
    out, lse = torch_reference(w)
    ref_out, ref_lse = reference_for(w)
    np.testing.assert_allclose(out.numpy(), ref_out, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(lse.numpy(), ref_lse, rtol=1e-12, atol=1e-12)
    base_out, base_lse = torch_mla(torch_mla.prepare(w))  # the plain-torch baseline, in bf16
    assert np.abs(base_out.double().numpy() - ref_out).max() < 0.05
