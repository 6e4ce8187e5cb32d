"""Test set-up: one place decides whether a GPU is here (marker `gpu`), the hypothesis profiles,
and a private kernel cache for the session."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, settings

TEMPLATES = Path(__file__).parent / "templates"

settings.register_profile(
    "ci",
    deadline=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
settings.register_profile(
    "dev",
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
settings.register_profile(  # one timed device call: a failing example is reported as found,
    "device",  # not shrunk (shrinking can outlast the call, and then nothing is reported)
    deadline=None,
    print_blob=True,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
settings.load_profile(
    os.environ.get("KGEN_HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev")
)


def _gpu_present() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available() and torch.cuda.device_count() > 0


GPU = _gpu_present()


def pytest_collection_modifyitems(config, items):
    if GPU:
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (runs on the device machine)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session", autouse=True)
def session_cache_dir(tmp_path_factory):
    """Kernels built by the tests go to a fresh cache, unless KGEN_CACHE_DIR names one."""
    if "KGEN_CACHE_DIR" in os.environ:
        yield Path(os.environ["KGEN_CACHE_DIR"])
        return
    path = tmp_path_factory.mktemp("kgen-cache")
    os.environ["KGEN_CACHE_DIR"] = str(path)
    yield path
    del os.environ["KGEN_CACHE_DIR"]


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    """An empty cache directory for one test, with the in-process memo emptied too."""
    from kgen import build

    cache = tmp_path / "cache"
    monkeypatch.setenv("KGEN_CACHE_DIR", str(cache))
    monkeypatch.delenv("KGEN_DISABLE_CACHE", raising=False)
    monkeypatch.delenv("KGEN_NO_COMPILE", raising=False)
    monkeypatch.setattr(build, "_memo", {})
    return cache


def running(pid: int) -> bool:
    """Whether process `pid` exists and has not exited (an exited one may wait to be reaped)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def interrupt_and_wait(
    proc: subprocess.Popen, signum: int, says: str, workers: set[int]
) -> tuple[str, float]:
    """Send `signum` to `proc` (its stderr a text pipe) and wait for it to exit, none of its
    `workers` (pids) left running: its stderr, and the seconds from the signal to the stderr line
    holding `says` (inf if none). The process stops there; what follows is the interpreter's own
    exit (torch's clean-up alone takes several seconds on a loaded two-core machine), which a
    stop bound should not count."""
    lines: list[tuple[float, str]] = []

    def read() -> None:
        for line in proc.stderr:
            lines.append((time.time(), line))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    if proc.stdout is not None:  # drained, so that a full pipe cannot hold the process up
        threading.Thread(target=proc.stdout.read, daemon=True).start()
    sent = time.time()
    proc.send_signal(signum)
    proc.wait(timeout=300)
    reader.join(timeout=10)
    exited = time.time()
    while any(running(w) for w in workers) and time.time() < exited + 10:
        time.sleep(0.1)
    assert not [w for w in workers if running(w)], "workers left behind"
    said = [at - sent for at, line in lines if says in line]
    return "".join(line for _, line in lines), said[0] if said else float("inf")
