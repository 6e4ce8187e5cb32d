"""The sweep on a Ray cluster (`kgen sweep --ray auto|ADDRESS`, the `kgen[ray]` extra). Compiles
are Ray tasks on one CPU each; each returns its variant's row and the kernel's cache entry
(cubin, source and metadata, named by content key), which the driver writes into its own disk
cache. Trials run in one Ray actor per GPU of the cluster (num_gpus=1: one CUDA context each),
dealt by kgen.tune.dispatch like local GPU workers; each call carries the cache entries of the
kernels it builds, so a GPU node need not compile what a CPU node did. The driver alone writes
progress.jsonl and the tuning database. A compile lost with its node is run again once by Ray,
then recorded failed (and compiled again by the next run); a trial lost with its node is retried
once on another GPU of its kind by the dealer. Ray is imported here alone, and this module only
for a Ray sweep."""

from __future__ import annotations

import dataclasses
import os
import signal
import socket
import time
import traceback
from collections.abc import Iterator
from typing import Any

import ray
import ray.exceptions

from kgen.build import adopt_entry, cache_entry
from kgen.tune.compiling import compile_variant
from kgen.tune.dispatch import PlacementError, Slot
from kgen.tune.family import family_of
from kgen.tune.worker import TRIAL_TIMEOUT_S, TrialCrashed, WorkerDied, load_trials

# What Ray raises when a task's or actor's process or node is gone (the work itself may be
# sound): anything else a call raises is the trial's own failure.
LOST = (
    ray.exceptions.RayActorError,
    ray.exceptions.WorkerCrashedError,
    ray.exceptions.NodeDiedError,
    ray.exceptions.ObjectLostError,
    ray.exceptions.OwnerDiedError,
)


@ray.remote(num_cpus=1, max_retries=1)
def _compile_task(spec, config, arch: str) -> tuple[dict, dict | None, str, float]:
    """One variant's row and (compiled) its cache entry, where it ran and how long it took."""
    began = time.perf_counter()
    row = compile_variant(spec, config, arch)
    entry = None
    if row["status"] == "compiled":
        entry = cache_entry(family_of(spec).build(spec, config, arch).binary)
    return (
        row,
        entry,
        f"{ray.util.get_node_ip_address()} pid {os.getpid()}",
        (time.perf_counter() - began),
    )


@ray.remote(num_gpus=1, max_restarts=0)
class _TrialActor:
    """A Trials object on one GPU of the cluster."""

    def __init__(self, trials: str):
        self.trials = load_trials(trials)()

    def where(self) -> str:
        return f"{ray.util.get_node_ip_address()} GPU {','.join(map(str, ray.get_gpu_ids()))}"

    def native_arch(self) -> str:
        from kgen.arch import resolve_arch

        return resolve_arch("native").name

    def run(self, method: str, args: tuple, entries: list[dict]) -> tuple[Any, dict]:
        for entry in entries:
            adopt_entry(entry)
        value = getattr(self.trials, method)(*args)
        take = getattr(self.trials, "take_spent", None)
        return value, take() if take else {}


class RayTrialExecutor:
    """A dealer slot's executor: calls on a Ray actor holding one GPU (started on first use,
    again after it died; killed after a trial raised, its CUDA context then suspect)."""

    def __init__(self, trials: str, entries: dict):
        self._trials = trials
        self._entries = entries
        self._actor = None
        self._ref = None
        self.spent: dict[str, float] = {}
        self.where: str | None = None  # the node and GPU of the actor

    def _start(self) -> None:
        if self._actor is None:
            self._actor = _TrialActor.remote(self._trials)
            try:
                self.where = ray.get(self._actor.where.remote(), timeout=TRIAL_TIMEOUT_S)
            except ray.exceptions.GetTimeoutError:  # no GPU came free (its node is gone)
                self.close()
                raise WorkerDied(f"no GPU free for a worker in {TRIAL_TIMEOUT_S} s") from None

    def _carried(self, method: str, args: tuple) -> list[dict]:
        """The cache entries of the kernels a call builds (those the driver holds)."""
        if method not in ("variant", "graph"):
            return []
        case, config = args[0], args[1]
        entry = self._entries.get((case.spec, dataclasses.replace(config, kv_splits=1)))
        return [entry] if entry else []

    def call(self, method: str, *args) -> Any:
        try:
            self._start()
        except LOST as err:
            self._actor = None
            raise WorkerDied(f"Ray could not start a GPU worker: {err}") from None
        self.spent = {}
        self._ref = self._actor.run.remote(method, args, self._carried(method, args))
        try:
            value, self.spent = ray.get(self._ref, timeout=TRIAL_TIMEOUT_S)
        except LOST as err:
            self._actor = None
            raise WorkerDied(f"Ray lost the GPU worker during {method}: {err}") from None
        except ray.exceptions.GetTimeoutError:
            self.close()
            raise TrialCrashed(f"{method} timed out after {TRIAL_TIMEOUT_S} s") from None
        except ray.exceptions.RayTaskError as err:
            self.close()
            raise TrialCrashed(str(err)) from None
        finally:
            self._ref = None
        return value

    def native_arch(self) -> str:
        self._start()
        return ray.get(self._actor.native_arch.remote(), timeout=TRIAL_TIMEOUT_S)

    def close(self, now: bool = False) -> None:  # the actor is killed either way
        if self._ref is not None:
            ray.cancel(self._ref, force=True)
        if self._actor is not None:
            ray.kill(self._actor)
        self._actor = self._ref = None


class RayCompiler:
    """Compile tasks on the cluster's CPUs; each result's cache entry is written into this
    machine's cache and kept for the trials (`entries`)."""

    def __init__(self, entries: dict):
        self.entries = entries
        self._pending: dict = {}

    def run(self, todo: list[tuple], arch: str) -> Iterator[tuple]:
        self._pending = {_compile_task.remote(s, c, arch): (s, c) for s, c in todo}
        while self._pending:
            ready, _ = ray.wait(list(self._pending), num_returns=1, timeout=0.5)
            for ref in ready:
                spec, config = self._pending.pop(ref)
                try:
                    row, entry, worker, seconds = ray.get(ref)
                except ray.exceptions.RayError as err:
                    row, entry, worker, seconds = (
                        {"status": "failed", "detail": _last_line(err)},
                        None,
                        "lost",
                        0.0,
                    )
                if entry is not None:
                    adopt_entry(entry)
                    self.entries[(spec, config)] = entry
                yield spec, config, row, worker, seconds

    def status(self) -> str:
        cpus = int(ray.cluster_resources().get("CPU", 0))
        return f"a Ray cluster of {len(_alive())} nodes, {cpus} CPUs"

    def stop(self) -> None:
        for ref in list(self._pending):
            ray.cancel(ref, force=True)
        self._pending = {}


class RayPlacement:
    """A sweep's compiles and trials on a Ray cluster: "auto" (this machine's, else a new local
    one) or an address."""

    def __init__(self, address: str, options):
        self.options = options
        self.entries: dict = {}
        self._executors: list[RayTrialExecutor] = []
        _check_reachable(address)
        handler = signal.getsignal(signal.SIGTERM)  # ray.init takes SIGTERM; the sweep keeps it
        try:
            ray.init(
                address=None if address == "auto" else address,
                logging_level="warning",
                log_to_driver=False,
                configure_logging=True,
            )
        except (ConnectionError, ValueError, RuntimeError) as err:
            raise PlacementError(
                f"argument --ray: cannot reach the Ray cluster at {address}: {err}"
            ) from None
        finally:
            signal.signal(signal.SIGTERM, handler)

    def gpus(self) -> int:
        return int(ray.cluster_resources().get("GPU", 0))

    def has_gpu(self) -> bool:
        return self.gpus() > 0

    def native_arch(self) -> str:
        probe = RayTrialExecutor(self.options.trials, self.entries)
        try:
            return probe.native_arch()
        finally:
            probe.close()

    def compiler(self) -> RayCompiler:
        return RayCompiler(self.entries)

    def slots(self) -> list[Slot]:
        count = self.gpus()
        if count == 0:
            raise PlacementError("argument --ray: the Ray cluster has no GPU to time on")
        self._executors = [
            RayTrialExecutor(self.options.trials, self.entries) for _ in range(count)
        ]
        return [Slot(f"ray-gpu{n}", e) for n, e in enumerate(self._executors)]

    def close(self) -> None:
        for executor in self._executors:
            executor.close()
        ray.shutdown()


def _check_reachable(address: str) -> None:
    """A HOST:PORT that nothing answers on is refused at once (ray.init would retry for
    minutes)."""
    host, _, port = address.rpartition(":")
    if address == "auto" or "://" in address or not host or not port.isdigit():
        return
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError as err:
        raise PlacementError(
            f"argument --ray: nothing answers at {address} ({err.strerror or err}); start the "
            "cluster's head there (ray start --head) or give its address"
        ) from None


def _alive() -> list[dict]:
    return [n for n in ray.nodes() if n.get("Alive")]


def _last_line(err: BaseException) -> str:
    text = str(err).strip() or traceback.format_exception_only(type(err), err)[-1]
    return text.splitlines()[-1][-500:] if text else type(err).__name__
