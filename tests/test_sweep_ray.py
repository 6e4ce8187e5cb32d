"""`kgen sweep --ray` on a real Ray cluster of two nodes on this machine (a head and a second
node, each `ray start` in a session of its own with one CPU): a compile-only sweep runs through
it, the second node is killed (SIGKILL to its whole process group) while compiles are in flight,
and the sweep still ends with every variant accounted for. Skipped where Ray is not installed
(the `kgen[ray]` extra; `[test]` has it). The cluster is stopped by killing the process groups
the test started, never by name."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# 12 variants of a small dense shape: compiles of about a second each, two at a time
SPACE = ["--heads", "4", "--q-len", "2", "--mask", "causal", "--compute", "mma"]
SPACE += ["--num-warps", "4", "--col-groups", "4", "--min-blocks", "0", "--qk-ahead", "0"]
SPACE += ["--compile-only"]
VARIANTS = 12


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ray_cli() -> str:
    return str(Path(sys.executable).with_name("ray"))


def start_node(args: list[str], env: dict, log: Path) -> int:
    """`ray start ARGS` in a session of its own; the session's id (every process of the node,
    its workers too, stays in it)."""
    with log.open("w") as out:
        proc = subprocess.Popen(
            [ray_cli(), "start", "--num-cpus=1", "--disable-usage-stats", *args],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        assert proc.wait(timeout=300) == 0, log.read_text()
    return proc.pid  # ray start led the session


def session(sid: int) -> list[tuple[int, bytes]]:
    """The processes of session `sid`: (pid, command line)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[3]) == sid:
                found.append((int(stat.parent.name), stat.with_name("cmdline").read_bytes()))
        except (OSError, IndexError, ValueError):
            continue
    return found


def kill_session(sid: int) -> None:
    """SIGKILL every process of session `sid` (a node the test started), each by its id."""
    for pid, _ in session(sid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def compiling(sid: int) -> bool:
    """Whether a process of node session `sid` runs a compile task (Ray names a worker process
    after the task it runs)."""
    return any(title.startswith(b"ray::_compile_task") for _, title in session(sid))


@pytest.fixture
def cluster(tmp_path):
    pytest.importorskip("ray")
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "KGEN_CACHE_DIR": str(tmp_path / "node-cache"),
        "RAY_health_check_period_ms": "500",  # a dead node is noticed within seconds
        "RAY_health_check_failure_threshold": "3",
        "RAY_health_check_timeout_ms": "500",
    }
    port = free_port()
    groups = []
    temp = tempfile.mkdtemp(prefix="kgen-ray-", dir="/tmp")  # short: Ray's socket paths
    try:
        groups.append(
            start_node(
                [
                    "--head",
                    f"--port={port}",
                    f"--temp-dir={temp}",
                    "--include-dashboard=false",
                ],
                env,
                tmp_path / "head.log",
            )
        )
        groups.append(start_node([f"--address=127.0.0.1:{port}"], env, tmp_path / "node.log"))
        yield f"127.0.0.1:{port}", groups[1], env
    finally:
        for sid in reversed(groups):
            kill_session(sid)
        shutil.rmtree(temp, ignore_errors=True)


def test_a_compile_only_sweep_on_two_ray_nodes_survives_losing_one(tmp_path, cluster):
    address, second, env = cluster
    out = tmp_path / "out"
    env = {**env, "KGEN_CACHE_DIR": str(tmp_path / "driver-cache")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "kgen", "sweep", "--ray", address, *SPACE, "--out", str(out)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.time() + 300
    while not compiling(second):  # the second node has taken a compile: kill it mid-task
        assert proc.poll() is None and time.time() < deadline, proc.communicate()
        time.sleep(0.05)
    kill_session(second)
    stdout, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 0, stderr[-3000:]
    assert "on a Ray cluster of 2 nodes" in stdout
    (case,) = json.loads((out / "results.json").read_text())["cases"]
    statuses = [v["status"] for v in case["variants"]]
    # the compile lost with the node ran again on the head (Ray retries a task once)
    assert statuses == ["compiled"] * VARIANTS, statuses
    # every compiled kernel's cache entry came back to the driver's cache
    entries = list((tmp_path / "driver-cache" / "kernels").glob("*.cubin"))
    assert len(entries) == statuses.count("compiled")


def test_importing_the_tuner_does_not_import_ray():
    """Ray is for `--ray` alone: every kgen.tune module but kgen.tune.cluster imports without
    it."""
    modules = sorted(
        f"kgen.tune.{p.stem}"
        for p in (ROOT / "kgen" / "tune").glob("*.py")
        if p.stem not in ("__init__", "cluster")
    )
    code = f"import sys, {', '.join(modules)}; print('ray' in sys.modules)"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert run.returncode == 0 and run.stdout.strip() == "False", run.stderr
