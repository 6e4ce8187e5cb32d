"""Trials in a worker process: a launch failure or illegal address kills the worker, not the
sweep. The parent records the trial as failed and starts a fresh worker. Worker processes ignore
SIGINT: a Ctrl-C at the terminal reaches every process of the sweep, and only the parent decides
what it means (it ends its workers and keeps what finished).

A worker may be bound to one GPU (`device`, an index among those the parent sees): it then sees
that GPU alone (CUDA_VISIBLE_DEVICES, set before CUDA starts), so it holds one CUDA context and
nothing in it assumes which GPU it is. What runs the trials is named by `trials` ("module:Class",
kgen.tune.trials.Trials by default), so that a test can put a timing function of its own into
real worker processes."""

from __future__ import annotations

import contextlib
import importlib
import multiprocessing as mp
import os
import signal
import threading
import time
import traceback
from collections.abc import Iterator
from typing import Any

TRIAL_TIMEOUT_S = 300
TRIALS = "kgen.tune.trials:Trials"


class TrialCrashed(RuntimeError):
    """The worker died or raised while running a trial."""


class WorkerDied(TrialCrashed):
    """The worker process ended during a trial (killed, or crashed outright): the trial itself
    may be sound, so a sweep with another GPU of the kind retries it there."""


def ignore_sigint() -> None:
    """A worker process's first step: leave Ctrl-C to the parent."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextlib.contextmanager
def sigint_ignored() -> Iterator[None]:
    """Ignore SIGINT in this process while it starts workers, so that they start with it ignored
    (a disposition a spawned process inherits) and a Ctrl-C during their start-up is not
    reported by each of them."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def visible_device(index: int) -> str:
    """CUDA_VISIBLE_DEVICES for a worker that is to see the parent's GPU `index` alone (the
    parent's own CUDA_VISIBLE_DEVICES, where set, renumbers the GPUs it sees)."""
    seen = os.environ.get("CUDA_VISIBLE_DEVICES")
    if seen is None or not seen.strip():
        return str(index)
    names = [name.strip() for name in seen.split(",") if name.strip()]
    if index >= len(names):
        raise ValueError(f"device {index}: CUDA_VISIBLE_DEVICES={seen!r} shows {len(names)} GPUs")
    return names[index]


def load_trials(path: str) -> type:
    """The class a "module:Class" path names."""
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def _serve(conn, device: int | None, trials_path: str) -> None:
    ignore_sigint()
    if device is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = visible_device(device)
    trials = load_trials(trials_path)()
    while True:
        method, args = conn.recv()
        if method == "stop":
            return
        try:
            conn.send(("ok", getattr(trials, method)(*args), _spent(trials)))
        except BaseException:  # noqa: BLE001 - reported to the parent, then this context is suspect
            conn.send(("error", traceback.format_exc(), _spent(trials)))
            return


def _spent(trials) -> dict:
    """Seconds the trial object spent per kind of work since last asked ({} where it keeps
    none): what the sweep's summary of where time went adds up."""
    take = getattr(trials, "take_spent", None)
    return take() if take else {}


class WorkerExecutor:
    """Runs Trials methods in a spawned process (bound to GPU `device` where given),
    restarting it after a crash."""

    def __init__(self, device: int | None = None, trials: str = TRIALS):
        self._ctx = mp.get_context("spawn")
        self.device = device
        if device is not None:
            visible_device(device)  # a device the parent cannot see fails here, not in the child
        self._trials = trials
        self._proc = None
        self._conn = None
        self._busy = False  # a call is in flight (still so after one cut short by an interrupt)
        self.spent: dict[str, float] = {}  # seconds of each kind of work the last call reported
        self.started_s = 0.0  # seconds spent starting worker processes

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def start(self) -> None:
        """Start the worker process now (a call starts it otherwise); called from the main
        thread, it starts with SIGINT ignored (a Ctrl-C during its start-up is the parent's)."""
        if self._proc is None or not self._proc.is_alive():
            self._start()

    def _start(self) -> None:
        began = time.perf_counter()
        parent, child = self._ctx.Pipe()
        self._proc = self._ctx.Process(
            target=_serve, args=(child, self.device, self._trials), daemon=True
        )
        with sigint_ignored():
            self._proc.start()
        child.close()  # the parent's copy: EOF reaches it when the worker ends
        self._conn = parent
        self.started_s += time.perf_counter() - began

    def _stop_dead(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.join()
        self._proc = self._conn = None
        self._busy = False

    def call(self, method: str, *args) -> Any:
        if self._proc is None or not self._proc.is_alive():
            self._start()
        self._busy = True
        self.spent = {}
        try:
            self._conn.send((method, args))
        except (BrokenPipeError, ConnectionResetError, OSError):
            self._stop_dead()
            raise WorkerDied(f"worker died before {method}") from None
        if not self._conn.poll(TRIAL_TIMEOUT_S):
            self._stop_dead()
            raise TrialCrashed(f"{method} timed out after {TRIAL_TIMEOUT_S} s")
        try:
            status, value, self.spent = self._conn.recv()
        except (EOFError, OSError):
            proc = self._proc
            if proc is not None:
                proc.join(timeout=5)
            code = proc.exitcode if proc is not None else None
            self._stop_dead()
            raise WorkerDied(f"worker died during {method} (exit code {code})") from None
        self._busy = False
        if status == "error":
            self._stop_dead()
            raise TrialCrashed(value)
        return value

    def close(self, now: bool = False) -> None:
        """Stop the worker: when idle, let it finish; mid-trial, or `now` (the sweep was
        interrupted: an idle worker's own clean exit, torch's included, would hold the stop up
        for seconds), kill it at once."""
        if self._proc is not None and self._proc.is_alive() and not self._busy and not now:
            with contextlib.suppress(OSError):
                self._conn.send(("stop", ()))
            self._proc.join(timeout=30)
        self._stop_dead()


class InProcessExecutor:
    """Runs trials in this process (tests, debugging): a crash is reported but not contained."""

    def __init__(self):
        from kgen.tune.trials import Trials

        self.trials = Trials()
        self.spent: dict[str, float] = {}

    def call(self, method: str, *args) -> Any:
        try:
            return getattr(self.trials, method)(*args)
        except Exception as err:  # noqa: BLE001 - same contract as the worker
            raise TrialCrashed(traceback.format_exc()) from err
        finally:
            self.spent = _spent(self.trials)

    def close(self, now: bool = False) -> None:
        pass
