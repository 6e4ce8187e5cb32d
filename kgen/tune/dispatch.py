"""Trials dealt to the GPUs a sweep times on. Each GPU is a slot: an executor (a worker process
of its own, or a Ray task on one GPU) that runs one trial at a time. A slot that is idle takes
the most urgent job of its GPU kind; two kinds of GPU never share a job, so each kind is tuned
on its own. A job whose worker died (killed, or crashed outright) is tried once more on another
slot of its kind, where there is one, then recorded failed; a job that raised is recorded
failed. Each slot keeps where its time went (verify, time, other work, idle).

With one slot the trials run in the calling thread, one after another, exactly as a sweep on
one GPU always has; with more, each slot has a thread that waits on its executor."""

from __future__ import annotations

import contextlib
import dataclasses
import heapq
import itertools
import queue
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from kgen.tune.worker import TrialCrashed, WorkerDied

ATTEMPTS = 2  # a job whose worker died runs once more, elsewhere


class PlacementError(RuntimeError):
    """The GPUs or the cluster a sweep was sent to cannot be used; the message names the flag."""


@dataclasses.dataclass
class Job:
    """One call of a Trials method. `args` may be left to the dealer's `prepare` hook, which
    builds them when a slot takes the job (a seed drawn then), or skips the job. `pin` names the
    only slot that may run it; `kind` the GPU kind that must (None: any)."""

    method: str
    args: tuple = ()
    kind: str | None = None
    priority: tuple = ()
    pin: str | None = None
    tag: Any = None  # the caller's
    tried: tuple[str, ...] = ()


@dataclasses.dataclass
class Done:
    """A job's end: its value, or the error that ended it (TrialCrashed), or skipped (the
    prepare hook declined it); the slot that ran it."""

    job: Job
    value: Any = None
    error: TrialCrashed | None = None
    slot: str | None = None
    skipped: bool = False
    device: str | None = None  # where it ran: the slot's executor's `where`, else the slot


class Slot:
    """One GPU's executor (anything with call(method, *args) and close(now), `now` when the
    sweep was interrupted) and its time."""

    def __init__(self, label: str, executor, kind: str | None = None):
        self.label = label
        self.executor = executor
        self.kind = kind
        self.trials = 0
        self.failed = 0
        self.busy_s = 0.0
        self.spent: dict[str, float] = {}
        self.state = "starting"
        self.born = time.perf_counter()
        self.job: Job | None = None

    def account(self, seconds: float) -> None:
        self.busy_s += seconds
        for kind, value in (getattr(self.executor, "spent", None) or {}).items():
            self.spent[kind] = self.spent.get(kind, 0.0) + value

    def summary(self, now: float | None = None) -> dict:
        """Where this slot's time went: verify and time (as its trials reported them), other
        (worker start-up, inputs the trials do not count, messages), idle."""
        wall = (now or time.perf_counter()) - self.born
        verify, timing = self.spent.get("verify", 0.0), self.spent.get("time", 0.0)
        return {
            "worker": self.label,
            "gpu": self.kind,
            "trials": self.trials,
            "failed": self.failed,
            "verify_s": verify,
            "time_s": timing,
            "other_s": max(0.0, self.busy_s - verify - timing),
            "idle_s": max(0.0, wall - self.busy_s),
        }


class Dealer:
    """Deal jobs to slots. put() queues a job; results() yields each job's end as it comes
    (the caller may put more meanwhile) until nothing is queued or running; close() ends every
    executor (one mid-trial is killed)."""

    def __init__(
        self,
        slots: list[Slot],
        prepare: Callable[[Job], tuple | None] | None = None,
        on_state: Callable[[Slot], None] | None = None,
    ):
        if not slots:
            raise ValueError("a dealer needs at least one slot")
        self.slots = {s.label: s for s in slots}
        self.prepare = prepare
        self.on_state = on_state or (lambda slot: None)
        self._queue: list = []  # heap of (priority, n, job)
        self._count = itertools.count()
        self._done: queue.Queue = queue.Queue()
        self._running = 0
        self._threaded = len(slots) > 1
        self._inbox: dict[str, queue.Queue] = {}
        self._closed = False
        if self._threaded:
            for slot in slots:
                self._inbox[slot.label] = inbox = queue.Queue()
                threading.Thread(
                    target=self._serve, args=(slot, inbox), daemon=True, name=slot.label
                ).start()
        for slot in slots:
            self._set(slot, "idle")

    def put(self, job: Job) -> None:
        heapq.heappush(self._queue, (job.priority, next(self._count), job))

    def pending(self) -> int:
        return len(self._queue) + self._running

    def results(self) -> Iterator[Done]:
        while True:
            self._assign()
            if not self._running:
                if self._queue:  # jobs no slot may take (their kind has no slot left)
                    raise RuntimeError(f"{len(self._queue)} trials have no GPU to run on")
                return
            done = self._wait()
            if done is not None:
                yield done

    def close(self, now: bool = False) -> None:
        """Stop every slot's executor (`now`: without waiting for an idle one to exit)."""
        self._closed = True
        for inbox in self._inbox.values():
            inbox.put(None)
        for slot in self.slots.values():
            with contextlib.suppress(Exception):  # closing the rest matters more
                slot.executor.close(now)
            self._set(slot, "stopped")

    # --- dealing ---

    def _eligible(self, slot: Slot, job: Job) -> bool:
        if job.pin is not None:
            return job.pin == slot.label
        return (job.kind is None or job.kind == slot.kind) and slot.label not in job.tried

    def _assign(self) -> None:
        for slot in self.slots.values():
            if slot.job is not None:
                continue
            while True:
                job = self._take(slot)
                if job is None:
                    break
                args = job.args if self.prepare is None else self.prepare(job)
                if args is None:
                    self._done.put(Done(job, skipped=True))
                    self._running += 1  # counted down when the skip is read back
                    continue
                job.args = args
                self._start(slot, job)
                break

    def _take(self, slot: Slot) -> Job | None:
        passed, job = [], None
        while self._queue:
            entry = heapq.heappop(self._queue)
            if self._eligible(slot, entry[2]):
                job = entry[2]
                break
            passed.append(entry)
        for entry in passed:
            heapq.heappush(self._queue, entry)
        return job

    def _start(self, slot: Slot, job: Job) -> None:
        slot.job = job
        self._running += 1
        self._set(slot, f"{job.method} {describe(job)}")
        if self._threaded:
            self._inbox[slot.label].put(job)
        else:
            self._done.put(self._run(slot, job))

    def _run(self, slot: Slot, job: Job) -> Done:
        began = time.perf_counter()
        try:
            value = slot.executor.call(job.method, *job.args)
            done = Done(job, value=value, slot=slot.label)
        except TrialCrashed as crash:
            done = Done(job, error=crash, slot=slot.label)
        finally:
            slot.account(time.perf_counter() - began)
        done.device = getattr(slot.executor, "where", None) or slot.label
        return done

    def _serve(self, slot: Slot, inbox: queue.Queue) -> None:
        while (job := inbox.get()) is not None:
            try:
                done = self._run(slot, job)
            except BaseException as err:  # noqa: BLE001 - the caller's thread decides
                if self._closed:
                    return
                done = Done(job, value=err, slot=slot.label)
            self._done.put(done)

    def _wait(self) -> Done | None:
        while True:
            try:
                done = self._done.get(timeout=0.5)  # short waits: Ctrl-C reaches this thread
                break
            except queue.Empty:
                continue
        self._running -= 1
        if done.slot is None:  # skipped
            return done
        slot = self.slots[done.slot]
        slot.job = None
        slot.trials += 1
        self._set(slot, "idle")
        if isinstance(done.value, BaseException) and done.error is None:
            raise done.value  # an interrupt or a bug in a slot's thread
        if isinstance(done.error, WorkerDied):
            job = done.job
            job.tried = (*job.tried, slot.label)
            others = [s for s in self.slots.values() if self._eligible(s, job)]
            if len(job.tried) < ATTEMPTS and others and job.pin is None:
                self.put(job)
                return None
        if done.error is not None:
            slot.failed += 1
        return done

    def _set(self, slot: Slot, state: str) -> None:
        slot.state = state
        self.on_state(slot)


def describe(job: Job) -> str:
    """A few words for a job in a worker's status line."""
    return str(job.tag[0]) if isinstance(job.tag, tuple) and job.tag else ""
