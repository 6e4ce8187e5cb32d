"""A sweep on the real GPUs of the machine through `--devices` (one worker process per GPU, each
seeing its GPU alone): trials land on every GPU, each row names its device, the winners reach
the tuning database under the GPU's name; a worker killed with SIGKILL mid-trial loses at most
that trial and the sweep finishes. With one GPU, `--devices 0` times what a plain sweep times."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from kgen.mla import Spec
from kgen.mla.dense import bucket
from kgen.mla.tuning import TuningDB
from kgen.tune.space import Axes, Case
from kgen.tune.sweep import Devices, SweepOptions, gpu_count, run_sweep

pytestmark = pytest.mark.gpu
CASES = [
    Case("tiny", Spec(heads=4, q_len=2, mask="causal"), batch=2, prefix=900),
    Case("tiny-long", Spec(heads=4, q_len=2, mask="causal"), batch=4, prefix=4000),
]
AXES = Axes(
    num_warps=(4,),
    stage_tiles=((2, 16),),
    col_groups=(4,),
    softmax=("split",),
    min_blocks=(0,),
    qk_ahead=(0,),
    body=("rows",),
)


def options(tmp_path: Path, placement) -> SweepOptions:
    return SweepOptions(
        compile_only=False,
        axes=AXES,
        reps=5,
        db_path=tmp_path / "db.json",
        placement=placement,
        worker_status=True,
    )


def rows(report: dict) -> list[dict]:
    return [t for entry in report["cases"] for t in entry["trials"]]


def test_a_sweep_on_every_gpu_times_on_each_and_records_the_winners(tmp_path):
    report = run_sweep(CASES, tmp_path / "out", options(tmp_path, Devices(None)))
    count = gpu_count()
    devices = {r["device"] for r in rows(report)}
    assert devices <= {f"cuda:{i}" for i in range(count)}
    if count > 1:  # every GPU took trials (at least two cases' worth of them to deal)
        assert len(devices) == count
    assert all(r["status"] == "ok" for r in rows(report)), [
        r.get("detail") for r in rows(report) if r["status"] != "ok"
    ]
    db = TuningDB(tmp_path / "db.json")
    for case, entry in zip(CASES, report["cases"], strict=False):
        found = db.lookup(
            entry["gpu"],
            report["meta"]["arch"],
            case.spec,
            bucket(case.batch, case.max_len),
            report["meta"]["nvrtc"],
        )
        assert found is not None and found.config.to_dict() == entry["best"]["config"]
    workers = report["meta"]["time"]["gpu_workers"]
    assert len(workers) == count and all(w["time_s"] > 0 for w in workers)


def test_one_gpu_through_devices_times_what_a_plain_sweep_times(tmp_path):
    plain = run_sweep(CASES[:1], tmp_path / "plain", options(tmp_path, None))
    device = run_sweep(CASES[:1], tmp_path / "device", options(tmp_path, Devices((0,))))

    def timed(report):
        return sorted(json.dumps(r["config"], sort_keys=True) for r in rows(report))

    assert timed(plain) == timed(device)
    assert {r["device"] for r in rows(device)} == {"cuda:0"}
    best = plain["cases"][0]["best"]["median_us"], device["cases"][0]["best"]["median_us"]
    assert max(best) < 1.5 * min(best)  # the same GPU measures alike (noise aside)


def gpu_workers() -> list[int]:
    """This process's worker processes (spawned; not the resource tracker)."""
    found = []
    for task in Path(f"/proc/{os.getpid()}/task").glob("*"):
        try:
            pids = (task / "children").read_text().split()
        except OSError:
            continue
        for pid in pids:
            try:
                line = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if b"spawn_main" in line and b"resource_tracker" not in line:
                found.append(int(pid))
    return found


def test_a_gpu_worker_killed_mid_trial_loses_at_most_that_trial(tmp_path):
    out = tmp_path / "out"
    killed = []

    def kill_one():
        progress = out / "progress.jsonl"
        deadline = time.time() + 300
        while time.time() < deadline:
            if progress.exists() and '"kind": "variant"' in progress.read_text():
                workers = gpu_workers()
                if workers:
                    os.kill(workers[0], signal.SIGKILL)
                    killed.append(workers[0])
                    return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_one, daemon=True)
    killer.start()
    report = run_sweep(CASES, out, options(tmp_path, Devices(None)))
    killer.join(timeout=5)
    assert killed, "no worker to kill"
    failed = [r for r in rows(report) if r["status"] != "ok"]
    # the killed trial was retried on another GPU, or (one GPU) recorded failed: one trial's rows
    compiled = [{k: v for k, v in r["config"].items() if k != "kv_splits"} for r in failed]
    assert len({json.dumps(c, sort_keys=True) for c in compiled}) <= 1
    assert all("worker died" in r.get("detail", "") for r in failed)
    assert all(entry["best"] for entry in report["cases"])
