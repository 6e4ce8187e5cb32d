"""A sweep on several GPUs, without one: real worker processes, one per (fake) GPU, run
tests/fake_trials.py's trials (times from a formula, a trial that SIGKILLs its own worker). The
driver deals trials to idle workers, retries a trial whose worker died once on another GPU of its
kind, keeps two GPU kinds apart, merges every row into results.json and progress.jsonl and the
winners into one tuning database, and says where each worker's time went; Ctrl-C stops every
worker and the same sweep resumes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from kgen.mla.dense import bucket
from kgen.mla.tuning import TuningDB
from kgen.tune.dispatch import Dealer, Job, Slot
from kgen.tune.report import summary_table
from kgen.tune.sweep import SweepOptions, run_sweep
from kgen.tune.worker import TrialCrashed, WorkerDied
from tests.conftest import interrupt_and_wait
from tests.fake_trials import AXES, CASES, options

ROOT = Path(__file__).resolve().parent.parent
FAKE = "tests.fake_trials:FakeTrials"


@pytest.fixture(scope="module")
def compiled(tmp_path_factory) -> list[str]:
    """progress.jsonl's compile lines of CASES for sm_90 (compiled once, for every test)."""
    out = tmp_path_factory.mktemp("compiled")
    run_sweep(CASES, out, SweepOptions(arch="sm_90", compile_only=True, axes=AXES, jobs=2))
    return (out / "progress.jsonl").read_text().splitlines()


@pytest.fixture
def out(tmp_path, compiled) -> Path:
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "progress.jsonl").write_text("\n".join(compiled) + "\n")
    return folder


def trials(report: dict) -> list[dict]:
    return [t for case in report["cases"] for t in case["trials"]]


def test_trials_are_dealt_to_idle_gpus_and_merged(out, monkeypatch):
    monkeypatch.setenv("KGEN_FAKE_TRIAL_S", "0.1")
    monkeypatch.setenv("KGEN_FAKE_SLOW", "1:4")  # GPU 1 takes four times as long a trial
    report = run_sweep(CASES, out, options((0, 1), out / "db.json"))
    rows = trials(report)
    by_device = Counter(r["device"] for r in rows)
    assert set(by_device) == {"cuda:0", "cuda:1"}
    assert by_device["cuda:0"] > by_device["cuda:1"]  # the idle GPU takes the next trial
    # each row ran where its worker says it did (CUDA_VISIBLE_DEVICES picked its GPU)
    assert all(r["device"] == f"cuda:{r['gpu_index']}" for r in rows)
    ids = [json.loads(line)["id"] for line in (out / "progress.jsonl").read_text().splitlines()]
    assert len(ids) == len(set(ids))  # each trial once, written by the driver alone
    for case, entry in zip(CASES, report["cases"], strict=True):
        assert entry["best"]["config"]["heads_per_block"] == 4 and entry["gpu"] == "Fake GPU"
        assert entry["torch"]["median_us"] == 500.0 and entry["best"]["graph"]["median_us"] == 7.0
        found = TuningDB(out / "db.json").lookup(
            "Fake GPU",
            "sm_90",
            case.spec,
            bucket(case.batch, case.max_len),
            report["meta"]["nvrtc"],
        )
        assert found is not None and found.config.heads_per_block == 4
    workers = report["meta"]["time"]["gpu_workers"]
    assert [w["worker"] for w in workers] == ["cuda:0", "cuda:1"]
    assert sum(w["trials"] for w in workers) >= len(rows) // 2  # variant calls hold several rows
    assert all(w["verify_s"] > 0 and w["time_s"] > 0 and w["idle_s"] >= 0 for w in workers)


def test_a_worker_killed_mid_trial_loses_only_its_trial(out, tmp_path, monkeypatch):
    marker = tmp_path / "died"
    monkeypatch.setenv("KGEN_FAKE_DIE_HPB", "2")  # the first hb2 trial SIGKILLs its worker
    monkeypatch.setenv("KGEN_FAKE_DIE_ONCE", str(marker))
    report = run_sweep(CASES, out, options((0, 1), out / "db.json"))
    died = f"cuda:{marker.read_text()}"
    rows = trials(report)
    seen = [(r["device"], r["config"]["heads_per_block"], r["status"]) for r in rows]
    assert all(r["status"] == "ok" for r in rows), seen  # retried on the other GPU, and timed
    retried = [r for r in rows if r["config"]["heads_per_block"] == 2]
    # it came back for more: its next job may be a variant, the torch baseline or a graph replay
    # (whichever was next in the queue when it died), each recorded with the device that ran it
    ran = {r["device"] for r in rows}
    for entry in report["cases"]:
        ran.add(entry["torch"]["device"])
        ran |= {entry[kind]["graph"]["device"] for kind in ("best", "default") if entry.get(kind)}
    assert retried and died in ran, (died, seen)
    assert {r["device"] for r in retried} <= {"cuda:0", "cuda:1"}
    assert all(entry["best"] for entry in report["cases"])


def test_a_trial_that_kills_every_worker_is_recorded_failed_after_one_retry(out, monkeypatch):
    monkeypatch.setenv("KGEN_FAKE_DIE_HPB", "2")  # every hb2 trial SIGKILLs its worker
    report = run_sweep(CASES, out, options((0, 1), out / "db.json"))
    rows = trials(report)
    failed = [r for r in rows if r["status"] == "failed"]
    assert failed and all(r["config"]["heads_per_block"] == 2 for r in failed)
    assert all("worker died" in r["detail"] for r in failed)
    assert all(r["status"] == "ok" for r in rows if r["config"]["heads_per_block"] != 2)
    workers = report["meta"]["time"]["gpu_workers"]
    hb2 = sum(1 for case in report["cases"] for r in case["trials"] if r["status"] == "failed")
    assert sum(w["failed"] for w in workers) <= hb2  # recorded once each, after its retry


def test_two_gpu_kinds_tune_apart(out, monkeypatch):
    monkeypatch.setenv("KGEN_FAKE_GPUS", "Fake A,Fake B,Fake A")
    report = run_sweep(CASES, out, options((0, 1, 2), out / "db.json"))
    assert [e["gpu"] for e in report["cases"]] == ["Fake A"] * 2 + ["Fake B"] * 2
    for entry in report["cases"]:
        devices = {r["device"] for r in entry["trials"]}
        assert devices <= ({"cuda:1"} if entry["gpu"] == "Fake B" else {"cuda:0", "cuda:2"})
    a, b = report["cases"][0], report["cases"][2]
    assert b["best"]["median_us"] == 2 * a["best"]["median_us"]  # each kind its own times
    db = TuningDB(out / "db.json")
    case = CASES[0]
    key = ("sm_90", case.spec, bucket(case.batch, case.max_len), report["meta"]["nvrtc"])
    assert db.lookup("Fake A", *key) and db.lookup("Fake B", *key)
    ids = [json.loads(line)["id"] for line in (out / "progress.jsonl").read_text().splitlines()]
    assert any(i.startswith("Fake B|tiny|variant|") for i in ids)
    assert {"ceilings|Fake A", "ceilings|Fake B"} <= set(ids)
    table = summary_table(report).splitlines()
    assert table.index("-- Fake A") < table.index("-- Fake B")  # each kind's cases under it


class Flaky:
    """An executor whose worker dies on the calls listed (by their first argument)."""

    def __init__(self, dies: set):
        self.dies, self.calls = dies, []

    def call(self, method, *args):
        self.calls.append(args[0])
        if args[0] in self.dies:
            raise WorkerDied("killed")
        if args[0] == "raises":
            raise TrialCrashed("illegal address")
        return args[0]

    def close(self, now=False):
        pass


def test_the_dealer_retries_a_dead_workers_job_once_elsewhere_and_not_one_that_raised():
    a, b = Flaky({"dies-on-a", "dies-anywhere"}), Flaky({"dies-anywhere"})
    dealer = Dealer([Slot("a", a, kind="k"), Slot("b", b, kind="k")])
    for n, name in enumerate(["dies-on-a", "dies-anywhere", "raises", "fine"]):
        dealer.put(Job("variant", (name,), kind="k", priority=(n,)))
    ends = {d.job.args[0]: d for d in dealer.results()}
    dealer.close()
    assert ends["dies-on-a"].error is None and ends["dies-on-a"].slot == "b"
    assert isinstance(ends["dies-anywhere"].error, WorkerDied)
    assert a.calls.count("dies-anywhere") + b.calls.count("dies-anywhere") == 2  # tried twice
    assert isinstance(ends["raises"].error, TrialCrashed)
    assert (a.calls + b.calls).count("raises") == 1  # a trial that raised is not retried
    assert ends["fine"].value == "fine"


def test_the_dealer_alone_on_one_gpu_records_a_dead_workers_job_failed():
    only = Flaky({"dies"})
    dealer = Dealer([Slot("a", only, kind="k")])
    dealer.put(Job("variant", ("dies",), kind="k"))
    (end,) = dealer.results()
    assert isinstance(end.error, WorkerDied) and only.calls == ["dies"]


def children(pid: int) -> set[int]:
    """The child processes of `pid`, whichever of its threads started them."""
    found = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found |= {int(p) for p in (task / "children").read_text().split()}
        except OSError:
            continue
    return found


def test_ctrl_c_stops_every_gpu_worker_and_the_sweep_resumes(out):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KGEN_FAKE_TRIAL_S": "0.4"}
    command = [sys.executable, "-m", "tests.fake_trials", str(out), "0,1,2"]
    proc = subprocess.Popen(command, env=env, cwd=ROOT, stderr=subprocess.PIPE, text=True)
    progress = out / "progress.jsonl"
    workers: set[int] = set()
    deadline = time.time() + 300
    while '"kind": "variant"' not in progress.read_text():
        assert proc.poll() is None and time.time() < deadline, proc.communicate()
        workers |= children(proc.pid)
        time.sleep(0.05)
    workers |= children(proc.pid)
    assert len(workers) >= 3  # a worker per GPU (and the spawn helper)
    stderr, took = interrupt_and_wait(proc, signal.SIGINT, "interrupted: ", workers)
    assert took < 5 and proc.returncode == 130, stderr
    assert "Traceback" not in stderr and "trials timed" in stderr
    before = [json.loads(line)["id"] for line in progress.read_text().splitlines()]

    again = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    ids = [json.loads(line)["id"] for line in progress.read_text().splitlines()]
    assert ids[: len(before)] == before and len(ids) == len(set(ids))  # nothing timed twice
    report = json.loads((out / "results.json").read_text())
    assert all(entry["best"] for entry in report["cases"])
