"""The README's examples run as written: the sm_120 build without a GPU here, the ten-line
attention call on a GPU."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), re.S)


def test_the_readme_has_its_two_examples():
    blocks = python_blocks()
    assert len(blocks) == 2
    assert "kgen.mla.attention(" in blocks[0] and 'arch="sm_120"' in blocks[1]


def test_the_sm120_example_builds_without_a_gpu(tmp_path, monkeypatch):
    attention, sm120 = python_blocks()
    monkeypatch.chdir(tmp_path)
    scope: dict = {}
    exec(compile("import kgen\n" + sm120, "README.md", "exec"), scope)
    assert scope["kernel"].resources.spills == 0
    assert (tmp_path / "mla.cubin").read_bytes()[:4] == b"\x7fELF"
    assert "mla_attention" in (tmp_path / "mla.cu").read_text()


@pytest.mark.gpu
def test_the_ten_line_example_runs_and_matches_the_reference():
    import numpy as np
    import torch

    from .reference import mla_reference

    attention, _ = python_blocks()
    scope: dict = {}
    exec(compile(attention, "README.md", "exec"), scope)
    out, lse, q = scope["out"], scope["lse"], scope["q"]
    assert out.shape == (*q.shape[:3], 512) and lse.shape == q.shape[:3]
    tensors = (q, scope["kv_cache"], scope["block_table"], scope["seq_lens"], scope["tree"])
    q64, kv64, table, lens, tree = (t.cpu().float().numpy() for t in tensors)
    ref_out, _ = mla_reference(q64, kv64, table.astype(int), lens, tree.astype(bool), 576**-0.5)
    err = np.linalg.norm(out.float().cpu().numpy() - ref_out) / np.linalg.norm(ref_out)
    assert err < 1e-2 and torch.isfinite(lse).all()
