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
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

from tqdm import tqdm

from kgen import __version__
from kgen.arch import resolve_arch
from kgen.compiler import CompileError, nvrtc_version
from kgen.mla import ConfigError
from kgen.mla.tuning import TuningDB
from kgen.tune.family import family_of
from kgen.tune.space import FIT_ARCHS, Axes, Case
from kgen.tune.sparse_space import SparseAxes
from kgen.tune.worker import TrialCrashed, ignore_sigint, sigint_ignored


def _compile(spec, config, arch: str) -> dict:
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
        r = kernel.resources
        return {
            **row,
            "registers": r.registers,
            "smem": r.smem,
            "spills": r.spills,
            "occupancy": r.occupancy.fraction,
            "warps_per_sm": r.occupancy.warps_per_sm,
            "limiter": r.occupancy.limiter,
            "q_source": getattr(kernel.layout, "q_source", None) or kernel.layout.q_placement,
        }
    except CompileError as err:
        return {"status": "compile error", "detail": err.log[-2000:]}


def compile_space(
    pairs: list[tuple], arch: str, jobs: int | None = None, progress: Progress | None = None
) -> dict:
    """Compile every (spec, config) in parallel worker processes, with a progress bar. With
    `progress`, each result is recorded as it comes and those recorded before are not compiled
    again. Interrupted (Ctrl-C, or KeyboardInterrupt from a signal handler), it ends its workers
    before the exception goes on: no compile outlives the sweep."""
    results = {}
    todo = []
    for spec, config in pairs:
        done = progress.done.get(compile_id(arch, spec, config)) if progress else None
        if done is not None:
            results[(spec, config)] = done["row"]
        else:
            todo.append((spec, config))
    if not todo:
        return results
    bar = tqdm(
        total=len(pairs),
        initial=len(results),
        desc=f"compile {arch}",
        unit="kernel",
        dynamic_ncols=True,
    )
    pool = ProcessPoolExecutor(
        max_workers=min(jobs or os.cpu_count() or 1, len(todo)),
        mp_context=_spawn(),
        initializer=ignore_sigint,
    )
    try:
        with sigint_ignored():  # the workers start now: a Ctrl-C meant for the sweep is ours
            futures = {pool.submit(_compile, s, c, arch): (s, c) for s, c in todo}
        for future in as_completed(futures):
            spec, config = futures[future]
            results[(spec, config)] = row = future.result()
            if progress:
                progress.add({"id": compile_id(arch, spec, config), "row": row})
            bar.update()
    except BaseException:
        _stop_pool(pool)
        raise
    finally:
        bar.close()
    pool.shutdown()
    return results


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


def _spawn():
    import multiprocessing

    return multiprocessing.get_context("spawn")


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


def trial_id(case: Case, kind: str, config=None) -> str:
    if config is None:
        return f"{case.name}|{kind}"
    compiled = dataclasses.replace(config, kv_splits=1).to_dict()
    return f"{case.name}|{kind}|{json.dumps(compiled, sort_keys=True)}"


@dataclasses.dataclass
class SweepOptions:
    arch: str | None = None  # default: 'native' on a GPU, else sm_120
    compile_only: bool | None = None  # default: no GPU present
    axes: Axes = dataclasses.field(default_factory=Axes)
    sparse_axes: SparseAxes = dataclasses.field(default_factory=SparseAxes)
    reps: int = 20
    jobs: int | None = None
    db_path: Path | None = None  # default: the user's tuning database
    in_process: bool = False  # run trials here instead of a worker process (tests)
    executor: object | None = None  # anything with call(method, *args): replaces the worker
    seed: int = 0
    also_fit: tuple[str, ...] = FIT_ARCHS  # archs every kept config must also fit
    # Time budgets (None: none). case_seconds: seconds of variant trials per case. seconds: the
    # whole sweep's, compiling included; each case's variant trials then get an equal share of
    # what is left when the case starts, less CASE_RESERVE_S for its baseline, graph replays and
    # spill check (a case that needs less leaves the rest to the cases after it). The
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


CASE_RESERVE_S = 8.0  # per case, beside its variant trials: baseline, graph replays, spill check


def run_sweep(cases: list[Case], out_dir: Path, options: SweepOptions | None = None) -> dict:
    options = options or SweepOptions()
    deadline = None if options.seconds is None else time.time() + options.seconds
    out_dir.mkdir(parents=True, exist_ok=True)
    compile_only = (not gpu_present()) if options.compile_only is None else options.compile_only
    arch = resolve_arch(options.arch or ("sm_120" if compile_only else "native"))
    meta = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "kgen": __version__,
        "nvrtc": nvrtc_version(),
        "arch": arch.name,
        "mode": "compile-only" if compile_only else "gpu",
    }

    also = tuple(resolve_arch(a) for a in options.also_fit if a != arch.name)
    pruned = {}
    for case in cases:
        family = family_of(case.spec)
        configs = family.enumerate(case.spec, options)
        pruned[case.name] = family.prune(case.spec, configs, arch, also)
    pairs = sorted({(c.spec, cfg) for c in cases for cfg in pruned[c.name].kept}, key=repr)
    progress = Progress(out_dir / "progress.jsonl")
    resumed = sum(compile_id(arch.name, s, c) in progress.done for s, c in pairs)
    refused = sum(len(p.refused) for p in pruned.values())
    tqdm.write(
        f"{meta['mode']} sweep for {arch.name}: {len(cases)} cases, {len(pairs)} variants to "
        f"compile ({refused} refused before compiling"
        + (f"; {resumed} compiled before, resumed from {progress.path}" if resumed else "")
        + "); Ctrl-C stops, the same command resumes"
    )
    try:
        compiled = compile_space(pairs, arch.name, options.jobs, progress)
    except KeyboardInterrupt:
        done = sum(compile_id(arch.name, s, c) in progress.done for s, c in pairs)
        raise SweepInterrupted(f"{done} of {len(pairs)} variants compiled", progress.path) from None
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
        try:
            _time_cases(cases, report, arch, progress, options, deadline)
        except KeyboardInterrupt:
            raise SweepInterrupted(_timed(cases, report, progress), progress.path) from None
    results = out_dir / "results.json"
    partial = results.with_name(".results.json.tmp")  # a reader never sees half a file
    partial.write_text(json.dumps(report, indent=1))
    os.replace(partial, results)
    return report


def _timed(cases: list[Case], report: dict, progress: Progress) -> str:
    """How many of the sweep's trials (each case's default and distinct variants) are done."""
    done = total = 0
    for case, entry in zip(cases, report["cases"], strict=True):
        variants = [v for v in entry["variants"] if v["status"] == "compiled"]
        total += 1 + len(_distinct(family_of(case.spec), variants)[0])
        done += sum(
            key.startswith((f"{case.name}|variant|", f"{case.name}|default|"))
            for key in progress.done
        )
    return f"{done} of {total} trials timed"


def _blocks_per_sm(variant: dict) -> int:
    """Blocks of a compiled variant an SM holds at once (2 where the compile did not say)."""
    warps, per_block = variant.get("warps_per_sm"), variant["config"].get("num_warps")
    return max(1, warps // per_block) if warps and per_block else 2


def _case_budget(options: SweepOptions, deadline: float | None, cases_left: int) -> float | None:
    """Seconds of variant trials the next case may take (None: no limit)."""
    budgets = [] if options.case_seconds is None else [options.case_seconds]
    if deadline is not None:
        share = (deadline - time.time()) / max(1, cases_left) - CASE_RESERVE_S
        budgets.append(max(0.0, share))
    return min(budgets) if budgets else None


def _time_cases(
    cases: list[Case],
    report: dict,
    arch,
    progress: Progress,
    options: SweepOptions,
    deadline: float | None = None,
) -> None:
    from kgen.tune.worker import InProcessExecutor, WorkerExecutor

    executor = options.executor or (InProcessExecutor() if options.in_process else WorkerExecutor())
    db = TuningDB(options.db_path) if options.db_path else TuningDB.user()
    try:
        gpu, sms = executor.call("gpu")
        report["meta"]["gpu"] = gpu
        if "ceilings" not in progress.done:
            progress.add({"id": "ceilings", **executor.call("ceilings")})
        report["meta"]["ceilings"] = progress.done["ceilings"]
        seed = options.seed
        for n, (case, entry) in enumerate(zip(cases, report["cases"], strict=True)):
            started = time.time()
            budget = _case_budget(options, deadline, len(cases) - n)
            family = family_of(case.spec)
            default = family.default(case, arch, sms)
            variants = [v for v in entry["variants"] if v["status"] == "compiled"]
            configs, entry["twins"] = _distinct(family, variants)
            if budget is not None:
                random.Random(case.name).shuffle(configs)
            blocks = {
                family.config_type.from_dict(v["config"]): _blocks_per_sm(v) for v in variants
            }
            jobs = [("default", default, [default.kv_splits])]
            jobs += [
                ("variant", cfg, family.splits(case, cfg, sms, blocks[cfg])) for cfg in configs
            ]
            untimed = 0
            for kind, cfg, splits in tqdm(
                jobs, desc=f"time {case.name}", unit="variant", dynamic_ncols=True
            ):
                key = trial_id(case, kind, cfg)
                if key in progress.done:
                    continue
                if kind == "variant" and budget is not None and time.time() - started > budget:
                    untimed += 1
                    continue
                seed += 1
                try:
                    rows = executor.call("variant", case, cfg, splits, seed, options.reps)
                except TrialCrashed as crash:
                    rows = [
                        {
                            "config": dataclasses.replace(cfg, kv_splits=s).to_dict(),
                            "status": "failed",
                            "detail": str(crash)[-2000:],
                        }
                        for s in splits
                    ]
                progress.add({"id": key, "kind": kind, "rows": rows})
            if trial_id(case, "torch") not in progress.done:
                try:
                    row = executor.call("baseline", case, seed + 1, options.reps)
                except TrialCrashed as crash:
                    row = {"status": "failed", "detail": str(crash)[-2000:]}
                progress.add({"id": trial_id(case, "torch"), "row": row})
            _summarise(case, entry, progress, default, options.also_fit)
            entry["untimed"] = untimed
            if untimed:
                tqdm.write(
                    f"{case.name}: {untimed} of {len(configs)} variants left untimed "
                    f"(over its {budget:.0f} s budget)"
                )
            for kind in ("best", "default"):
                chosen = entry.get(kind)
                config = family.config_type.from_dict(chosen["config"]) if chosen else None
                gid = trial_id(case, f"graph-{kind}", config) if chosen else None
                if chosen and gid not in progress.done:
                    try:
                        graph = executor.call("graph", case, config, seed + 2)
                    except TrialCrashed as crash:
                        graph = {"status": "failed", "detail": str(crash)[-2000:]}
                    progress.add({"id": gid, "row": graph})
                if chosen:
                    chosen["graph"] = progress.done[gid]["row"]
            record_best(db, case, entry, report["meta"])
            entry["seconds"] = time.time() - started
    finally:
        executor.close()


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
    case: Case, entry: dict, progress: Progress, default, also_fit: tuple[str, ...]
) -> None:
    """Gather this case's trial rows; the best is the fastest correct one that also fits the
    target archs and compiles there without spills (what is shipped must run well there too)."""
    rows = []
    for kind in ("variant", "default"):
        for key, trial in progress.done.items():
            if key.startswith(f"{case.name}|{kind}|"):
                rows.extend({**r, "kind": kind} for r in trial["rows"])
    entry["trials"] = rows
    correct = [r for r in rows if r["status"] == "ok"]
    ranked = sorted(correct, key=lambda r: r["median_us"])
    entry["best"] = next((r for r in ranked if _fits_targets(case, r, also_fit)), None)
    defaults = [r for r in rows if r["kind"] == "default" and r["status"] == "ok"]
    entry["default"] = defaults[0] if defaults else None
    entry["default_config"] = default.to_dict()
    entry["torch"] = progress.done[trial_id(case, "torch")]["row"]
    entry["wrong"] = [r for r in rows if r["status"] in ("wrong", "failed")]
