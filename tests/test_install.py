"""What a user meets first, without a GPU: kgen, its command line and a kernel build work with no
torch installed; planning a launch without CUDA says so in kgen's own error; every package and
template of the source tree is one the wheel ships (.ci/wheel_check.py checks the wheel itself)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Run at start-up of every interpreter of the subprocess, the sweep's spawned compilers too:
# a None entry makes `import torch` raise ModuleNotFoundError and find_spec("torch") return None,
# which is what an environment without torch gives.
NO_TORCH = 'import sys\nsys.modules["torch"] = None\n'

BUILD_WITHOUT_TORCH = """
import importlib.util
import kgen, kgen.cli, kgen.mla, kgen.tune, kgen.tune.cli
assert importlib.util.find_spec("torch") is None
assert not hasattr(kgen.mla, "plan")  # the torch-only API is left out, not broken
spec = kgen.mla.Spec(heads=8, q_len=4, dtype="bfloat16", mask="tree")
config = kgen.mla.Config(heads_per_block=8, compute="mma", num_warps=4, col_groups=4, block_n=16)
assert kgen.mla.build(spec, config, arch="sm_120").cubin
sparse = kgen.mla.build_sparse(
    kgen.mla.SparseSpec(heads=16), kgen.mla.SparseConfig(heads_per_block=16), arch="sm_120"
)
assert sparse.cubin
"""


def without_torch(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    (tmp_path / "sitecustomize.py").write_text(NO_TORCH)
    path = os.pathsep.join(p for p in (str(tmp_path), os.environ.get("PYTHONPATH")) if p)
    return subprocess.run(
        [sys.executable, *args],
        env={**os.environ, "PYTHONPATH": path},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_import_and_build_without_torch(tmp_path):
    run = without_torch(tmp_path, "-c", BUILD_WITHOUT_TORCH)
    assert run.returncode == 0, run.stderr


def test_compile_only_sweep_without_torch(tmp_path):
    run = without_torch(tmp_path, "-m", "kgen", "sweep", "--help")
    assert run.returncode == 0 and "--compile-only" in run.stdout, run.stderr
    sweep = ["-m", "kgen", "sweep", "--heads", "8", "--dtype", "float32", "--compute", "fma"]
    sweep += ["--heads-per-block", "8", "--num-warps", "4", "--compile-only", "--jobs", "1"]
    run = without_torch(tmp_path, *sweep, "--out", "out", "--db", "db.json")
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "out" / "results.json").is_file()


def test_plan_without_cuda_raises_no_gpu_error(monkeypatch):
    torch = pytest.importorskip("torch")
    import kgen
    from kgen.device import NoGPUError

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # a CPU build of torch
    for device in (None, 0, "cuda:0"):
        with pytest.raises(NoGPUError, match="needs a CUDA GPU"):
            kgen.mla.plan(kgen.mla.Spec(heads=8), 2, 4, device=device)
    with pytest.raises(NoGPUError, match="needs a CUDA GPU"):
        kgen.mla.plan_sparse(kgen.mla.SparseSpec(heads=16), 2)


def test_every_package_and_template_ships():
    tomllib = pytest.importorskip("tomllib")
    setup = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    packages = {
        ".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "kgen").rglob("__init__.py")
    }
    assert set(setup["packages"]) == packages | {"kgen.templates"}
    assert setup["package-dir"]["kgen.templates"] == "templates"
    assert (ROOT / "templates" / "__init__.py").is_file()  # a regular package: a path on disk
    assert sorted(setup["package-data"]["kgen.templates"]) == ["**/*.cuh", "**/*.jinja"]
    left_out = [
        p
        for p in (ROOT / "templates").rglob("*")
        if p.is_file() and p.suffix not in (".cuh", ".jinja", ".py", ".pyc")
    ]
    assert not left_out, "files under templates/ that the package data leaves out"
