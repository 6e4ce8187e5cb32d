"""The design-space sweep: enumerate, prune, compile in parallel, then (on a GPU) check every
variant against the float64 oracle on fresh inputs, time the correct ones, rank, and store the
winner per case in the tuning database. Progress is appended as it goes, so a sweep resumes.
Dense and sparse cases go the same way; what differs per family is in kgen.tune.family."""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import random
import time
from collections.abc import Callable
from pathlib import Path
from time import perf_counter  # durations; budgets go by time.time (wall clock)

from tqdm import tqdm

from kgen import __version__
from kgen.arch import resolve_arch
from kgen.compiler import nvrtc_version
from kgen.mla import ConfigError
from kgen.mla.tuning import TuningDB
from kgen.tune.compiling import LocalCompiler
from kgen.tune.dispatch import Dealer, Done, Job, Slot
from kgen.tune.family import family_of
from kgen.tune.space import FIT_ARCHS, Axes, Case
from kgen.tune.sparse_space import SparseAxes
from kgen.tune.worker import TRIALS


def compile_space(
    pairs: list[tuple],
    arch: str,
    jobs: int | None = None,
    progress: Progress | None = None,
    *,
    bar: tqdm | None = None,
    compiler=None,
    on_result: Callable[[tuple, dict], None] | None = None,
    ledger: dict | None = None,
) -> dict:
    """Compile every (spec, config) in parallel worker processes (`jobs`, default: the cores
    this process may use; or on `compiler`, e.g. a Ray cluster's), in the order given, with a
    progress bar (`bar`, else one of its own). With `progress`, each result is recorded as it
    comes and those recorded before are not compiled again. on_result((spec, config), row) is
    called for each. `ledger` (a dict) gains the seconds each compile worker spent and the
    phase's wall time. Interrupted (Ctrl-C, or KeyboardInterrupt from a signal handler), it ends
    its workers before the exception goes on: no compile outlives the sweep."""
    results = {}
    todo = []
    for spec, config in pairs:
        done = progress.done.get(compile_id(arch, spec, config)) if progress else None
        if done is not None:
            results[(spec, config)] = done["row"]
            if on_result:
                on_result((spec, config), done["row"])
        else:
            todo.append((spec, config))
    if not todo:
        return results
    own_bar = bar is None
    if own_bar:
        bar = tqdm(
            total=len(pairs),
            initial=len(results),
            desc=f"compile {arch}",
            unit="kernel",
            dynamic_ncols=True,
        )
    compiler = compiler or LocalCompiler(jobs)
    if ledger is not None:
        ledger["compile_where"] = compiler.status()
    began = perf_counter()
    busy = ledger.setdefault("compile_workers", {}) if ledger is not None else {}
    compiled = 0
    try:
        for spec, config, row, worker, seconds in compiler.run(todo, arch):
            compiled += 1
            results[(spec, config)] = row
            busy[worker] = busy.get(worker, 0.0) + seconds
            if progress and row["status"] != "failed":  # a lost compile is tried again
                progress.add({"id": compile_id(arch, spec, config), "row": row})
            if on_result:
                on_result((spec, config), row)
            bar.update()
    except BaseException:
        compiler.stop()
        raise
    finally:
        if own_bar:
            bar.close()
        if ledger is not None:
            ledger["compile_wall_s"] = ledger.get("compile_wall_s", 0.0) + (perf_counter() - began)
            ledger["compiled"] = ledger.get("compiled", 0) + compiled
    return results


def compile_id(arch: str, spec, config) -> str:
    """progress.jsonl's id of one compiled variant (a spec shared by several cases is compiled
    once)."""
    return f"compile|{arch}|{json.dumps([spec.to_dict(), config.to_dict()], sort_keys=True)}"


class Progress:
    """progress.jsonl in the output folder: one line per compiled variant and per finished trial,
    read back to resume."""

    def __init__(self, path: Path):
        self.path = path
        self.done: dict[str, dict] = {}
        if path.exists():
            text = path.read_text()
            for line in text.splitlines():
                try:
                    row = json.loads(line)
                except ValueError:
                    continue  # a line cut short by an interruption
                self.done[row["id"]] = row
            if text and not text.endswith("\n"):
                with path.open("a") as f:  # so the next row does not join the cut line
                    f.write("\n")

    def add(self, row: dict) -> None:
        self.done[row["id"]] = row
        with self.path.open("a") as f:
            f.write(json.dumps(row) + "\n")


class SweepInterrupted(KeyboardInterrupt):
    """A sweep stopped by Ctrl-C (or a signal turned into KeyboardInterrupt): its worker
    processes are gone and what finished is in progress.jsonl, which the same sweep resumes
    from."""

    def __init__(self, done: str, progress: Path):
        super().__init__(f"{done}; progress in {progress}")
        self.done = done
        self.progress = progress


def trial_id(case: Case, kind: str, config=None, gpu: str | None = None) -> str:
    """progress.jsonl's id of one trial; `gpu` prefixes it in a sweep over two or more GPU
    kinds, whose trials are kept apart."""
    where = f"{gpu}|" if gpu else ""
    if config is None:
        return f"{where}{case.name}|{kind}"
    compiled = dataclasses.replace(config, kv_splits=1).to_dict()
    return f"{where}{case.name}|{kind}|{json.dumps(compiled, sort_keys=True)}"


@dataclasses.dataclass(frozen=True)
class Devices:
    """Time on these GPUs of this machine (indices as this process sees them; None: all of
    them), one worker process each."""

    indices: tuple[int, ...] | None = None


@dataclasses.dataclass(frozen=True)
class RayCluster:
    """Compile and time on a Ray cluster: "auto" (the one this machine runs, else a new local
    one) or a cluster's address."""

    address: str = "auto"


@dataclasses.dataclass
class SweepOptions:
    arch: str | None = None  # default: 'native' on a GPU, else sm_120
    compile_only: bool | None = None  # default: no GPU present
    axes: Axes = dataclasses.field(default_factory=Axes)
    sparse_axes: SparseAxes = dataclasses.field(default_factory=SparseAxes)
    reps: int = 20
    jobs: int | None = None  # compile processes (default: the cores this process may use)
    db_path: Path | None = None  # default: the user's tuning database
    in_process: bool = False  # run trials here instead of a worker process (tests)
    executor: object | None = None  # call(method, *args) and close(now): replaces the worker
    # Where the sweep runs: None (compiles here, trials on the current GPU in one worker),
    # Devices (trials on several GPUs of this machine) or RayCluster (compiles and trials there)
    placement: Devices | RayCluster | None = None
    trials: str = TRIALS  # what a worker process runs trials with ("module:Class"; tests)
    worker_status: bool = False  # a status line per worker under the progress bar
    seed: int = 0
    also_fit: tuple[str, ...] = FIT_ARCHS  # archs every kept config must also fit
    # Time budgets (None: none). case_seconds: seconds of variant trials per case. seconds: the
    # whole sweep's, compiling included; each case's variant trials then get an equal share of
    # what is left when the case starts, less CASE_RESERVE_S for its baseline, graph replays and
    # spill check, or less half the share where the reserve would take more (so a budget short
    # for its cases still times variants of the first; a case that needs less leaves the rest to
    # the cases after it). The
    # heuristic's default is timed first; past its budget a case's remaining variants are left
    # untimed (a later run resumes them) and the case is summarised from what was timed. With a
    # budget, variants are timed in a shuffled order (seeded by the case name), so a cut leaves a
    # sample of the space.
    case_seconds: float | None = None
    seconds: float | None = None


def gpu_present() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def gpu_count() -> int:
    """GPUs this process sees (0 without torch)."""
    try:
        import torch
    except ImportError:
        return 0
    return torch.cuda.device_count()


CASE_RESERVE_S = 8.0  # per case, beside its variant trials: baseline, graph replays, spill check


class LocalPlacement:
    """Compiles in a process pool here; trials on this machine's GPUs, a worker process each
    (the current GPU alone, unless Devices names them)."""

    def __init__(self, options: SweepOptions):
        self.options = options

    def has_gpu(self) -> bool:
        return gpu_present()

    def native_arch(self) -> str:
        return "native"

    def compiler(self) -> LocalCompiler:
        return LocalCompiler(self.options.jobs)

    def slots(self) -> list[Slot]:
        from kgen.tune.worker import InProcessExecutor, WorkerExecutor

        options = self.options
        if options.executor is not None:
            return [Slot("cuda:0", options.executor)]
        if options.in_process:
            return [Slot("cuda:0", InProcessExecutor())]
        placement = options.placement
        if placement is None:
            return [Slot("cuda:0", WorkerExecutor(trials=options.trials))]
        indices = placement.indices
        if indices is None:
            indices = tuple(range(gpu_count()))
        slots = [Slot(f"cuda:{i}", WorkerExecutor(i, trials=options.trials)) for i in indices]
        for slot in slots:  # all at once, here: they start side by side, SIGINT ignored
            slot.executor.start()
        return slots

    def close(self) -> None:
        pass


def _placement(options: SweepOptions):
    if isinstance(options.placement, RayCluster):
        from kgen.tune.cluster import RayPlacement  # Ray is imported only for a Ray sweep

        return RayPlacement(options.placement.address, options)
    return LocalPlacement(options)


def run_sweep(cases: list[Case], out_dir: Path, options: SweepOptions | None = None) -> dict:
    options = options or SweepOptions()
    deadline = None if options.seconds is None else time.time() + options.seconds
    out_dir.mkdir(parents=True, exist_ok=True)
    place = _placement(options)
    try:
        return _sweep(cases, out_dir, options, place, deadline)
    finally:
        place.close()


def sweep_variants(cases: list[Case], options: SweepOptions, arch) -> tuple[list[tuple], dict]:
    """What a sweep of `cases` compiles for `arch` (an Arch): the (spec, config) pairs in the
    order it compiles them, and each case's pruning (case name -> kept and refused configs)."""
    also = tuple(resolve_arch(a) for a in options.also_fit if a != arch.name)
    pruned = {}
    for case in cases:
        family = family_of(case.spec)
        configs = family.enumerate(case.spec, options)
        pruned[case.name] = family.prune(case.spec, configs, arch, also)
    # case by case, those with the fewest variants first (a spec shared by cases goes with the
    # first), so that the first cases are done, and said, within the first minute
    by_size = sorted(cases, key=lambda c: len(pruned[c.name].kept))
    pairs = list(dict.fromkeys((c.spec, cfg) for c in by_size for cfg in pruned[c.name].kept))
    return pairs, pruned


def _sweep(cases, out_dir: Path, options: SweepOptions, place, deadline) -> dict:
    compile_only = (not place.has_gpu()) if options.compile_only is None else options.compile_only
    arch = resolve_arch(options.arch or ("sm_120" if compile_only else place.native_arch()))
    meta = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "kgen": __version__,
        "nvrtc": nvrtc_version(),
        "arch": arch.name,
        "mode": "compile-only" if compile_only else "gpu",
    }

    pairs, pruned = sweep_variants(cases, options, arch)
    progress = Progress(out_dir / "progress.jsonl")
    resumed = sum(compile_id(arch.name, s, c) in progress.done for s, c in pairs)
    refused = sum(len(p.refused) for p in pruned.values())
    compiler = place.compiler()
    tqdm.write(
        f"{meta['mode']} sweep for {arch.name}: {len(cases)} cases, {len(pairs)} variants to "
        f"compile ({refused} refused before compiling"
        + (f"; {resumed} compiled before, resumed from {progress.path}" if resumed else "")
        + f") on {compiler.status()}; Ctrl-C stops, the same command resumes"
    )
    ledger: dict = {}
    bar = tqdm(
        total=len(pairs),
        initial=resumed,
        desc=f"compile {arch.name}",
        unit="step",
        dynamic_ncols=True,
    )
    try:
        try:
            compiled = compile_space(
                pairs,
                arch.name,
                progress=progress,
                bar=bar,
                compiler=compiler,
                on_result=_case_teller(cases, pruned),
                ledger=ledger,
            )
        except KeyboardInterrupt:
            done = sum(compile_id(arch.name, s, c) in progress.done for s, c in pairs)
            raise SweepInterrupted(
                f"{done} of {len(pairs)} variants compiled", progress.path
            ) from None
        report = {"meta": meta, "cases": []}
        for case in cases:
            report["cases"].append(
                {
                    "name": case.name,
                    "family": family_of(case.spec).name,
                    "spec": case.spec.to_dict(),
                    "batch": case.batch,
                    "prefix": case.prefix,
                    "variants": [
                        {"config": cfg.to_dict(), **compiled[(case.spec, cfg)]}
                        for cfg in pruned[case.name].kept
                    ],
                    "refused": [
                        {"config": cfg.to_dict(), "reason": why}
                        for cfg, why in pruned[case.name].refused
                    ],
                }
            )
        if not compile_only:
            TimingPhase(cases, report, arch, progress, options, deadline, bar, place).run()
    finally:
        bar.close()
    meta["time"] = _ledger_rows(ledger, report.get("workers", []))
    report.pop("workers", None)
    results = out_dir / "results.json"
    partial = results.with_name(".results.json.tmp")  # a reader never sees half a file
    partial.write_text(json.dumps(report, indent=1))
    os.replace(partial, results)
    return report


def _ledger_rows(ledger: dict, workers: list[dict]) -> dict:
    """results.json's meta.time: the compile phase (its wall time and each compile worker's
    busy seconds) and each GPU worker's summary."""
    compile_workers = ledger.get("compile_workers", {})
    return {
        "compile_wall_s": ledger.get("compile_wall_s", 0.0),
        "compiled": ledger.get("compiled", 0),
        "compile_where": ledger.get("compile_where", ""),
        "compile_busy_s": sum(compile_workers.values()),
        "compile_workers": len(compile_workers),
        "gpu_workers": workers,
    }


def _case_teller(cases: list[Case], pruned: dict) -> Callable[[tuple, dict], None]:
    """An on_result for compile_space that says, as each case's last variant is compiled, what
    its variants came to (so the first lines come within a minute of the start)."""
    waiting = {c.name: {(c.spec, cfg) for cfg in pruned[c.name].kept} for c in cases}
    rows: dict = {}

    def tell(pair: tuple, row: dict) -> None:
        rows[pair] = row
        for case in cases:
            left = waiting.get(case.name)
            if left is None or pair not in left:
                continue
            left.discard(pair)
            if not left:
                del waiting[case.name]
                kept = pruned[case.name].kept
                tqdm.write(_case_line(case.name, [rows[(case.spec, c)] for c in kept]))

    return tell


def _case_line(name: str, rows: list[dict]) -> str:
    ok = [r for r in rows if r.get("status") == "compiled"]
    spilling = sum(1 for r in ok if r.get("spills"))
    occupancy = max((r.get("occupancy") or 0 for r in ok), default=0)
    regs = [r["registers"] for r in ok if r.get("registers") is not None]
    return (
        f"{name}: {len(ok)} of {len(rows)} variants compiled"
        + (f", {len(rows) - len(ok)} failed" if len(ok) < len(rows) else "")
        + f", {spilling} spill"
        + (f", {min(regs)}-{max(regs)} registers" if regs else "")
        + f", best occupancy {occupancy:.0%}"
    )


def _blocks_per_sm(variant: dict) -> int:
    """Blocks of a compiled variant an SM holds at once (2 where the compile did not say)."""
    warps, per_block = variant.get("warps_per_sm"), variant["config"].get("num_warps")
    return max(1, warps // per_block) if warps and per_block else 2


def _case_budget(options: SweepOptions, deadline: float | None, cases_left: int) -> float | None:
    """Seconds of variant trials the next case may take (None: no limit)."""
    budgets = [] if options.case_seconds is None else [options.case_seconds]
    if deadline is not None:
        share = max(0.0, (deadline - time.time()) / max(1, cases_left))
        budgets.append(share - min(CASE_RESERVE_S, share / 2))
    return min(budgets) if budgets else None


@dataclasses.dataclass
class Lane:
    """The GPUs of one kind: they share every case's trials, and their winners are recorded
    under their name."""

    gpu: str
    sms: int
    index: int
    ceilings: dict | None = None
    started: int = 0  # cases whose trials have begun


@dataclasses.dataclass
class CaseRun:
    """One case on one lane: its trials, then its graph replays, then its record."""

    case: Case
    entry: dict
    lane: Lane
    order: int
    prefix: str | None  # the lane's GPU name in progress ids, where there are several lanes
    default: object = None
    configs: list = dataclasses.field(default_factory=list)
    outstanding: int = 0
    stage: str = "trials"
    started: float | None = None
    budget: float | None = None
    untimed: int = 0

    def key(self, kind: str, config=None) -> str:
        return trial_id(self.case, kind, config, self.prefix)


class TimingPhase:
    """Check and time every case's variants on the GPUs (a Dealer of worker slots), summarise
    each case as its trials end, replay its best and default from a CUDA graph, and record the
    winner. The driver alone writes progress.jsonl and the tuning database."""

    def __init__(self, cases, report, arch, progress, options, deadline, bar, place):
        self.cases, self.report, self.arch = cases, report, arch
        self.progress, self.options, self.deadline = progress, options, deadline
        self.bar, self.place = bar, place
        self.seed = options.seed
        self.db = TuningDB(options.db_path) if options.db_path else TuningDB.user()
        self.runs: list[CaseRun] = []
        self.status: dict[str, tqdm] = {}

    def run(self) -> None:
        slots = self.place.slots()
        self.dealer = Dealer(slots, prepare=self._prepare, on_state=self._on_state)
        try:
            self._deal(slots)
        except KeyboardInterrupt:
            self.dealer.close(now=True)
            raise SweepInterrupted(self._timed(), self.progress.path) from None
        finally:
            self.dealer.close()
            self.report["workers"] = [s.summary() for s in slots]
            for line in self.status.values():
                line.close()

    def _on_state(self, slot: Slot) -> None:
        if not self.options.worker_status:
            return
        line = self.status.get(slot.label)
        if line is None:
            line = self.status[slot.label] = tqdm(
                total=0, position=len(self.status) + 1, bar_format="{desc}", leave=False
            )
        line.set_description_str(f"  {slot.label} ({slot.kind or '?'}): {slot.state}")

    def _deal(self, slots: list[Slot]) -> None:
        for slot in slots:
            self.dealer.put(Job("gpu", pin=slot.label, priority=(-2,)))
        sms: dict[str, int] = {}
        for done in self.dealer.results():
            if done.error is not None:
                raise RuntimeError(f"{done.slot} could not start: {done.error}")
            gpu, sms[done.slot] = done.value
            self.dealer.slots[done.slot].kind = gpu
        found: dict[str, int] = {}  # GPU kind: SMs, in the order of the kind's first GPU
        for slot in slots:
            found.setdefault(slot.kind, sms[slot.label])
        lanes = [Lane(gpu, count, n) for n, (gpu, count) in enumerate(found.items())]
        meta = self.report["meta"]
        meta["gpu"] = lanes[0].gpu
        meta["devices"] = {s.label: s.kind for s in slots}
        several = len(lanes) > 1
        for lane in lanes:
            key = f"ceilings|{lane.gpu}" if several else "ceilings"
            if key in self.progress.done:
                lane.ceilings = self.progress.done[key]
            else:
                self.dealer.put(Job("ceilings", kind=lane.gpu, priority=(-1,), tag=(key, lane)))
        bases = self.report["cases"]
        entries = []
        for lane in lanes:
            for order, (case, base) in enumerate(zip(self.cases, bases, strict=True)):
                entry = base if lane.index == 0 else json.loads(json.dumps(base))
                entry["gpu"] = lane.gpu
                entries.append(entry)
                self.runs.append(CaseRun(case, entry, lane, order, lane.gpu if several else None))
        self.report["cases"] = entries
        self.bar.set_description_str("time")
        self.bar.unit = "step"
        for run in self.runs:
            self._plan(run)
        for done in self.dealer.results():
            self._finish(done)
        meta["ceilings"] = lanes[0].ceilings
        for run in self.runs:
            if several:
                run.entry["ceilings"] = run.lane.ceilings

    def _plan(self, run: CaseRun) -> None:
        """Queue a case's trials: the heuristic's default first, then each distinct variant
        (shuffled where there is a budget), then plain torch."""
        case, lane = run.case, run.lane
        family = family_of(case.spec)
        run.default = family.default(case, self.arch, lane.sms)
        variants = [v for v in run.entry["variants"] if v["status"] == "compiled"]
        run.configs, run.entry["twins"] = _distinct(family, variants)
        if self.options.case_seconds is not None or self.deadline is not None:
            random.Random(case.name).shuffle(run.configs)
        blocks = {family.config_type.from_dict(v["config"]): _blocks_per_sm(v) for v in variants}
        jobs = [("default", run.default, [run.default.kv_splits])]
        jobs += [
            ("variant", cfg, family.splits(case, cfg, lane.sms, blocks[cfg])) for cfg in run.configs
        ]
        jobs.append(("torch", None, None))
        self.bar.total += len(jobs) + 2
        for n, (kind, cfg, splits) in enumerate(jobs):
            key = run.key(kind, cfg)
            if key in self.progress.done:
                self.bar.update()
                continue
            method = "baseline" if kind == "torch" else "variant"
            run.outstanding += 1
            self.dealer.put(
                Job(
                    method,
                    kind=lane.gpu,
                    priority=(run.order, 0, n),
                    tag=(f"{case.name} {kind}", run, kind, cfg, splits, key),
                )
            )
        if not run.outstanding:
            self._advance(run)

    def _prepare(self, job: Job) -> tuple | None:
        """A job's arguments, made as a slot takes it (its seed drawn now, as in a sweep on one
        GPU); None leaves a variant untimed, past its case's budget."""
        if job.method in ("gpu", "ceilings"):
            return ()
        _, run, kind, cfg, splits, _ = job.tag
        if run.started is None:
            run.started = time.time()
            cases_left = sum(r.lane is run.lane for r in self.runs) - run.lane.started
            run.budget = _case_budget(self.options, self.deadline, cases_left)
            run.lane.started += 1
        if job.method == "baseline":
            return (run.case, self.seed + 1, self.options.reps)
        if job.method == "graph":
            return (run.case, cfg, self.seed + 2)
        if kind == "variant" and run.budget is not None and time.time() - run.started > run.budget:
            run.untimed += 1
            return None
        self.seed += 1
        return (run.case, cfg, splits, self.seed, self.options.reps)

    def _finish(self, done: Done) -> None:
        job = done.job
        if job.method == "ceilings":
            key, lane = job.tag
            if done.error is not None:
                raise RuntimeError(f"measuring the ceilings on {done.slot} failed: {done.error}")
            self.progress.add({"id": key, **done.value})
            lane.ceilings = self.progress.done[key]
            return
        _, run, kind, cfg, splits, key = job.tag
        self.bar.update()
        if not done.skipped:
            failure = None if done.error is None else str(done.error)[-2000:]
            if job.method == "variant":
                rows = (
                    done.value
                    if failure is None
                    else [
                        {
                            "config": dataclasses.replace(cfg, kv_splits=s).to_dict(),
                            "status": "failed",
                            "detail": failure,
                        }
                        for s in splits
                    ]
                )
                rows = [{**r, "device": done.device} for r in rows]
                self.progress.add({"id": key, "kind": kind, "rows": rows})
            else:
                row = done.value if failure is None else {"status": "failed", "detail": failure}
                self.progress.add({"id": key, "row": {**row, "device": done.device}})
        run.outstanding -= 1
        if not run.outstanding:
            self._advance(run)

    def _advance(self, run: CaseRun) -> None:
        """A case whose trials are all in: summarise it and queue its graph replays; one whose
        replays are in: record its winner."""
        case, entry = run.case, run.entry
        family = family_of(case.spec)
        if run.stage == "trials":
            run.stage = "graphs"
            _summarise(case, entry, self.progress, run.default, self.options.also_fit, run.prefix)
            entry["untimed"] = run.untimed
            if run.untimed:
                tqdm.write(
                    f"{case.name}: {run.untimed} of {len(run.configs)} variants left untimed "
                    f"(over its {run.budget:.0f} s budget)"
                )
            for n, kind in enumerate(("best", "default")):
                chosen = entry.get(kind)
                if not chosen:
                    self.bar.update()
                    continue
                config = family.config_type.from_dict(chosen["config"])
                key = run.key(f"graph-{kind}", config)
                if key in self.progress.done:
                    self.bar.update()
                    continue
                run.outstanding += 1
                self.dealer.put(
                    Job(
                        "graph",
                        kind=run.lane.gpu,
                        priority=(run.order, -1, n),  # before the next case's trials
                        tag=(f"{case.name} graph", run, f"graph-{kind}", config, None, key),
                    )
                )
            if run.outstanding:
                return
        for kind in ("best", "default"):
            chosen = entry.get(kind)
            if chosen:
                config = family.config_type.from_dict(chosen["config"])
                chosen["graph"] = self.progress.done[run.key(f"graph-{kind}", config)]["row"]
        record_best(self.db, case, entry, {**self.report["meta"], "gpu": run.lane.gpu})
        entry["seconds"] = time.time() - (run.started or time.time())
        run.stage = "done"

    def _timed(self) -> str:
        """How many of the sweep's trials (each case's default and distinct variants) are done."""
        done = total = 0
        for run in self.runs:
            total += 1 + len(run.configs)
            prefixes = (run.key("variant") + "|", run.key("default") + "|")
            done += sum(key.startswith(prefixes) for key in self.progress.done)
        return f"{done} of {total} trials timed"


def record_best(db: TuningDB, case: Case, entry: dict, meta: dict) -> None:
    """Store a timed case's winner and its trials (a results.json case entry, the sweep's meta)
    in the tuning database, stamped with today's code."""
    best = entry.get("best")
    if not best:
        return
    family = family_of(case.spec)
    db.record(
        meta["gpu"],
        meta["arch"],
        case.spec,
        family.bucket(case),
        meta["nvrtc"],
        family.config_type.from_dict(best["config"]),
        {"median_us": best["median_us"], "case": case.name, "date": meta["date"]},
        trials=[
            [
                family.config_type.from_dict(r["config"]).short_name(),
                r["config"]["kv_splits"],
                r["median_us"],
            ]
            for r in entry["trials"]
            if r["status"] == "ok"
        ],
    )


def _distinct(family, variants: list[dict]) -> tuple[list, int]:
    """The configs worth timing (in the variants' order), and how many were not: a config that
    differs from another only in min_blocks and compiled to the same registers and spills is the
    same kernel (the bound did not bind), so only the one with the smallest min_blocks is timed."""
    configs = [family.config_type.from_dict(v["config"]) for v in variants]

    def code(config, v):
        if v.get("registers") is None or not hasattr(config, "min_blocks"):
            return None
        return (dataclasses.replace(config, min_blocks=0), v["registers"], v.get("spills"))

    least: dict = {}
    for config, v in zip(configs, variants, strict=True):
        key = code(config, v)
        if key is not None:
            least[key] = min(least.get(key, config.min_blocks), config.min_blocks)
    kept = [
        config
        for config, v in zip(configs, variants, strict=True)
        if code(config, v) is None or config.min_blocks == least[code(config, v)]
    ]
    return kept, len(configs) - len(kept)


def fits_targets(spec, config, archs: tuple[str, ...] = FIT_ARCHS) -> bool:
    """Whether a config fits every target arch (its layout is accepted there) and compiles there
    without spills where its family holds it to that (tensor-core dense configs and every sparse
    config; the dense FMA path is not): what a shipped config must do. A sweep's default row is
    timed unpruned, so this also keeps a default that only fits the test GPU out of the
    database."""
    family = family_of(spec)
    for arch in archs:
        try:
            kernel = family.build(spec, config, arch)
        except ConfigError:
            return False
        if family.held_to_no_spills(config) and kernel.resources.spills:
            return False
    return True


def _fits_targets(case: Case, row: dict, archs: tuple[str, ...]) -> bool:
    family = family_of(case.spec)
    return fits_targets(case.spec, family.config_type.from_dict(row["config"]), archs)


def _summarise(
    case: Case,
    entry: dict,
    progress: Progress,
    default,
    also_fit: tuple[str, ...],
    gpu: str | None = None,
) -> None:
    """Gather this case's trial rows; the best is the fastest correct one that also fits the
    target archs and compiles there without spills (what is shipped must run well there too)."""
    rows = []
    for kind in ("variant", "default"):
        prefix = trial_id(case, kind, gpu=gpu) + "|"
        for key, trial in progress.done.items():
            if key.startswith(prefix):
                rows.extend({**r, "kind": kind} for r in trial["rows"])
    entry["trials"] = rows
    correct = [r for r in rows if r["status"] == "ok"]
    ranked = sorted(correct, key=lambda r: r["median_us"])
    entry["best"] = next((r for r in ranked if _fits_targets(case, r, also_fit)), None)
    defaults = [r for r in rows if r["kind"] == "default" and r["status"] == "ok"]
    entry["default"] = defaults[0] if defaults else None
    entry["default_config"] = default.to_dict()
    entry["torch"] = progress.done[trial_id(case, "torch", gpu=gpu)]["row"]
    entry["wrong"] = [r for r in rows if r["status"] in ("wrong", "failed")]
