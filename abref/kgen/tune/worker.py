"""Trials in a worker process: a launch failure or illegal address kills the worker, not the
sweep. The parent records the trial as failed and starts a fresh worker."""

from __future__ import annotations

import multiprocessing as mp
import traceback
from typing import Any

TRIAL_TIMEOUT_S = 300


class TrialCrashed(RuntimeError):
    """The worker died or raised while running a trial."""


def _serve(conn) -> None:
    from kgen.tune.trials import Trials

    trials = Trials()
    while True:
        method, args = conn.recv()
        if method == "stop":
            return
        try:
            conn.send(("ok", getattr(trials, method)(*args)))
        except BaseException:  # noqa: BLE001 - reported to the parent, then this context is suspect
            conn.send(("error", traceback.format_exc()))
            return


class WorkerExecutor:
    """Runs Trials methods in a spawned process, restarting it after a crash."""

    def __init__(self):
        self._ctx = mp.get_context("spawn")
        self._proc = None
        self._conn = None

    def _start(self) -> None:
        parent, child = self._ctx.Pipe()
        self._proc = self._ctx.Process(target=_serve, args=(child,), daemon=True)
        self._proc.start()
        self._conn = parent

    def _stop_dead(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.join()
        self._proc = self._conn = None

    def call(self, method: str, *args) -> Any:
        if self._proc is None or not self._proc.is_alive():
            self._start()
        self._conn.send((method, args))
        if not self._conn.poll(TRIAL_TIMEOUT_S):
            self._stop_dead()
            raise TrialCrashed(f"{method} timed out after {TRIAL_TIMEOUT_S} s")
        try:
            status, value = self._conn.recv()
        except EOFError:
            code = self._proc.exitcode if self._proc else None
            self._stop_dead()
            raise TrialCrashed(f"worker died during {method} (exit code {code})") from None
        if status == "error":
            self._stop_dead()
            raise TrialCrashed(value)
        return value

    def close(self) -> None:
        if self._proc is not None and self._proc.is_alive():
            self._conn.send(("stop", ()))
            self._proc.join(timeout=30)
        self._stop_dead()


class InProcessExecutor:
    """Runs trials in this process (tests, debugging): a crash is reported but not contained."""

    def __init__(self):
        from kgen.tune.trials import Trials

        self.trials = Trials()

    def call(self, method: str, *args) -> Any:
        try:
            return getattr(self.trials, method)(*args)
        except Exception as err:  # noqa: BLE001 - same contract as the worker
            raise TrialCrashed(traceback.format_exc()) from err

    def close(self) -> None:
        pass
