"""Trials in a worker process: a launch failure or illegal address kills the worker, not the
sweep. The parent records the trial as failed and starts a fresh worker. Worker processes ignore
SIGINT: a Ctrl-C at the terminal reaches every process of the sweep, and only the parent decides
what it means (it ends its workers and keeps what finished)."""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import signal
import threading
import traceback
from collections.abc import Iterator
from typing import Any

TRIAL_TIMEOUT_S = 300


class TrialCrashed(RuntimeError):
    """The worker died or raised while running a trial."""


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


def _serve(conn) -> None:
    ignore_sigint()
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
        self._busy = False  # a call is in flight (still so after one cut short by an interrupt)

    def _start(self) -> None:
        parent, child = self._ctx.Pipe()
        self._proc = self._ctx.Process(target=_serve, args=(child,), daemon=True)
        with sigint_ignored():
            self._proc.start()
        self._conn = parent

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
        self._busy = False
        if status == "error":
            self._stop_dead()
            raise TrialCrashed(value)
        return value

    def close(self) -> None:
        """Stop the worker: when idle, let it finish; mid-trial (the sweep was interrupted),
        kill it at once."""
        if self._proc is not None and self._proc.is_alive() and not self._busy:
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
