"""What one sweep trial does on the GPU: fresh inputs, the float64 oracle, a poisoned run checked
against it, then timing. Runs inside a worker process (kgen.tune.worker) so a crash is contained.
The same steps serve both families; their inputs, oracle and torch baseline are in `SIDES`."""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable

import numpy as np
import torch

from kgen import device
from kgen.mla.check import check_attention
from kgen.mla.sparse.workload import SparseWorkload
from kgen.mla.workload import Workload, make_workload
from kgen.tune import sparse_trials
from kgen.tune.baseline import torch_mla
from kgen.tune.family import family_of
from kgen.tune.reference import torch_reference
from kgen.tune.report import resource_row
from kgen.tune.space import Case
from kgen.tune.timing import Timer, measure_ceilings

L2_ROTATION_BYTES = 256 << 20  # graph replays rotate inputs until they outgrow L2 this much


@dataclasses.dataclass(frozen=True)
class Side:
    """A family's trial inputs: workload(case, device, seed), its float64 oracle, the arguments
    a timed call takes (a tree mask packed once, as a serving engine's layers take it; the check
    runs on the workload's own arguments) and the keyword arguments every call takes (the V4
    op's lengths, sink and second cache), what one call must do (bytes, FLOPs), the bytes a
    graph replay rotates, and the torch baseline (prepared once, untimed, then called)."""

    workload: Callable
    reference: Callable
    timed_args: Callable
    keywords: Callable
    work: Callable
    rotated_bytes: Callable
    prepare: Callable
    baseline: Callable


def _work(w: Workload) -> dict:
    """What one call must do: unique KV bytes, all bytes (KV + q + out), FLOPs."""
    out_bytes = w.q.numel() // w.spec.head_dim * w.spec.latent_dim * w.q.element_size()
    io = w.kv_bytes() + w.q.numel() * w.q.element_size() + out_bytes
    return {"kv_bytes": w.kv_bytes(), "bytes": io, "flops": w.flops()}


SIDES = {
    "dense": Side(
        workload=lambda case, device, seed: make_workload(
            case.spec, case.seq_lens, device=device, seed=seed
        ),
        reference=torch_reference,
        timed_args=Workload.packed_args,
        keywords=Workload.extras,
        work=_work,
        rotated_bytes=lambda w: w.kv_bytes(),
        prepare=torch_mla.prepare,
        baseline=torch_mla,
    ),
    "sparse": Side(
        workload=sparse_trials.bench_workload,
        reference=sparse_trials.sparse_oracle,
        timed_args=lambda w: w.args(),
        keywords=SparseWorkload.extras,
        work=sparse_trials.sparse_work,
        rotated_bytes=lambda w: sum(
            t.nbytes for t in (w.kv_cache, w.extra_kv_cache) if t is not None
        ),
        prepare=lambda w: w,
        baseline=sparse_trials.torch_sparse_mla,
    ),
}


class Trials:
    """Trial runner bound to one GPU (the current one). It keeps the seconds it spends checking
    against the oracle (inputs, oracle, checked run) and timing, for the sweep's summary of
    where time went (take_spent)."""

    def __init__(self, flush: str = "write"):
        self.device = torch.device("cuda", device.current())
        self.timer = Timer(self.device, flush)
        self._spent = {"verify": 0.0, "time": 0.0}
        self._mark = time.perf_counter()

    def _lap(self, kind: str) -> None:
        """Count the seconds since the last lap as `kind`."""
        now = time.perf_counter()
        self._spent[kind] += now - self._mark
        self._mark = now

    def take_spent(self) -> dict[str, float]:
        """Seconds spent verifying and timing since last asked."""
        spent, self._spent = self._spent, {"verify": 0.0, "time": 0.0}
        return spent

    def gpu(self) -> tuple[str, int]:
        """The GPU's name and SM count."""
        return device.name(self.device.index), device.sm_count(self.device.index)

    def ceilings(self) -> dict:
        return {"gpu": device.name(self.device.index), **measure_ceilings(self.device)}

    def variant(self, case: Case, config, splits: list[int], seed: int, reps: int) -> list[dict]:
        """Check and time `config` at each split count on one fresh workload."""
        self._mark = time.perf_counter()
        family, side = family_of(case.spec), SIDES[family_of(case.spec).name]
        w = side.workload(case, self.device, seed)
        ref = [x.cpu().numpy() for x in side.reference(w)]
        work, args, keywords = side.work(w), side.timed_args(w), side.keywords(w)
        results = []
        for count in splits:
            cfg = dataclasses.replace(config, kv_splits=count)
            kernel = family.build(case.spec, cfg, "native")
            out, lse = w.poisoned_outputs()
            kernel(*w.args(), out=out, lse=lse, **keywords)
            row = {"config": cfg.to_dict(), "resources": resource_row(kernel), **work}
            try:
                row["error"] = check_attention(_np(out), _np(lse), *ref, case.spec.dtype)
            except AssertionError as err:
                results.append({**row, "status": "wrong", "detail": str(err)})
                continue
            finally:
                self._lap("verify")
            timing = self.timer.flushed(
                lambda k=kernel, o=out, s=lse: k(*args, out=o, lse=s, **keywords), reps=reps
            )
            self._lap("time")
            results.append({**row, "status": "ok", **timing.to_dict()})
        return results

    def graph(self, case: Case, config, seed: int) -> dict:
        """Per-call time of `config` replayed from a CUDA graph over rotated inputs."""
        self._mark = time.perf_counter()
        family, side = family_of(case.spec), SIDES[family_of(case.spec).name]
        kernel = family.build(case.spec, config, "native")
        first = side.workload(case, self.device, seed)
        copies = max(1, min(16, math.ceil(L2_ROTATION_BYTES / max(1, side.rotated_bytes(first)))))
        workloads = [first] + [side.workload(case, self.device, seed + i) for i in range(1, copies)]
        outputs = [w.poisoned_outputs() for w in workloads]
        args = [(side.timed_args(w), side.keywords(w)) for w in workloads]
        calls = [
            lambda a=a, o=o: kernel(*a[0], out=o[0], lse=o[1], **a[1])
            for a, o in zip(args, outputs, strict=True)
        ]
        timing = self.timer.graph(calls)
        self._lap("time")
        return {**timing.to_dict(), "rotated_inputs": copies}

    def baseline(self, case: Case, seed: int, reps: int) -> dict:
        """The plain torch implementation (gather + bmm + softmax + bmm in the same dtype)."""
        self._mark = time.perf_counter()
        side = SIDES[family_of(case.spec).name]
        w = side.workload(case, self.device, seed)
        ref = [x.cpu().numpy() for x in side.reference(w)]
        prepared = side.prepare(w)
        out, lse = side.baseline(prepared)
        try:
            error, detail = check_attention(_np(out), _np(lse), *ref, case.spec.dtype), ""
        except AssertionError as err:
            error, detail = float("nan"), str(err)
        self._lap("verify")
        timing = self.timer.flushed(lambda: side.baseline(prepared), reps=reps)
        self._lap("time")
        return {
            "status": "ok",
            "error": error,
            "detail": detail,
            **side.work(w),
            **timing.to_dict(),
        }


def _np(x: torch.Tensor) -> np.ndarray:
    return x.double().cpu().numpy()
