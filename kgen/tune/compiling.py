"""Compiling a sweep's variants: one variant's row (resources, SASS mix, or the compile
error), and a pool of worker processes on this machine that compiles many (through the disk
cache, whose per-kernel lock keeps two processes from compiling one kernel twice)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed

from kgen.compiler import CompileError
from kgen.tune.family import family_of
from kgen.tune.report import resource_row
from kgen.tune.worker import ignore_sigint, sigint_ignored


def compile_variant(spec, config, arch: str) -> dict:
    """Build one variant (in a pool process): its resource figures and SASS instruction mix, or
    the compile error."""
    from kgen.sass import instruction_mix

    family = family_of(spec)
    try:
        kernel = family.build(spec, config, arch)
        row = {"status": "compiled", "compute": getattr(config, "compute", "mma")}
        mix = instruction_mix(kernel.cubin, family.entry_point)
        if mix is not None:
            row.update({f"sass_{name}": count for name, count in mix.items()})
        usage = kernel.binary.usage.get(family.entry_point)
        if usage is None:
            return row
        return {
            **row,
            **resource_row(kernel),
            "limiter": kernel.resources.occupancy.limiter,
            "q_source": getattr(kernel.layout, "q_source", None) or kernel.layout.q_placement,
        }
    except CompileError as err:
        return {"status": "compile error", "detail": err.log[-2000:]}


def default_jobs() -> int:
    """Compile processes by default: the cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # no sched_getaffinity (macOS)
        return os.cpu_count() or 1


def _compile_timed(spec, config, arch: str) -> tuple[dict, int, float]:
    """compile_variant, with the process that ran it and the seconds it took."""
    began = time.perf_counter()
    row = compile_variant(spec, config, arch)
    return row, os.getpid(), time.perf_counter() - began


class LocalCompiler:
    """Compiles in a pool of `jobs` worker processes on this machine (through the disk cache,
    whose per-kernel lock keeps two processes from compiling one kernel twice)."""

    def __init__(self, jobs: int | None = None):
        self.jobs = jobs or default_jobs()
        self._pool: ProcessPoolExecutor | None = None

    def run(self, todo: list[tuple], arch: str) -> Iterator[tuple]:
        """(spec, config, row, worker, seconds) of each of `todo` as it is compiled."""
        self._pool = pool = ProcessPoolExecutor(
            max_workers=min(self.jobs, len(todo)), mp_context=_spawn(), initializer=ignore_sigint
        )
        with sigint_ignored():  # the workers start now: a Ctrl-C meant for the sweep is ours
            futures = {pool.submit(_compile_timed, s, c, arch): (s, c) for s, c in todo}
        for future in as_completed(futures):
            spec, config = futures[future]
            row, pid, seconds = future.result()
            yield spec, config, row, f"compile pid {pid}", seconds
        pool.shutdown()
        self._pool = None

    def status(self) -> str:
        return f"{self.jobs} compile processes on this machine"

    def stop(self) -> None:
        if self._pool is not None:
            _stop_pool(self._pool)
            self._pool = None


def _stop_pool(pool: ProcessPoolExecutor) -> None:
    """Cancel what has not started and end the workers now (a compile in flight is lost; the
    results already taken are kept)."""
    processes = list((pool._processes or {}).values())  # no public handle before Python 3.14
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in processes:
        proc.terminate()
    for proc in processes:
        proc.join(timeout=5)
        if proc.is_alive():
            proc.kill()
            proc.join()
    # The pool's manager thread sees its workers gone and ends; waiting for it keeps the
    # interpreter's exit hook from waking it through a pipe it has closed (a traceback at exit).
    pool.shutdown(wait=True)


def _spawn():
    import multiprocessing

    return multiprocessing.get_context("spawn")
