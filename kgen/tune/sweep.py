"""The design-space sweep: enumerate, prune, compile in parallel, then (on a GPU) check every
variant against the float64 oracle on fresh inputs, time the correct ones, rank, and store the
winner per case in the tuning database. Progress is appended as it goes, so a sweep resumes."""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

from tqdm import tqdm

from kgen import __version__
from kgen.arch import resolve_arch
from kgen.compiler import CompileError, nvrtc_version
from kgen.mla import Config, ConfigError, Spec, build
from kgen.mla.choose import compiled_default
from kgen.mla.tuning import TuningDB, bucket
from kgen.tune.space import FIT_ARCHS, Axes, Case, enumerate_configs, prune, split_candidates
from kgen.tune.worker import TrialCrashed


def _compile(spec: Spec, config: Config, arch: str) -> dict:
    """Build one variant (in a pool process): its resource figures and SASS instruction mix, or
    the compile error."""
    from kgen.sass import instruction_mix

    try:
        kernel = build(spec, config, arch)
        row = {"status": "compiled", "compute": config.compute}
        mix = instruction_mix(kernel.cubin, "mla_attention")
        if mix is not None:
            row.update({f"sass_{name}": count for name, count in mix.items()})
        usage = kernel.binary.usage.get("mla_attention")
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


def compile_space(pairs: list[tuple[Spec, Config]], arch: str, jobs: int | None = None) -> dict:
    """Compile every (spec, config) in parallel worker processes, with a progress bar."""
    results = {}
    if not pairs:
        return results
    jobs = jobs or os.cpu_count() or 1
    with ProcessPoolExecutor(max_workers=jobs, mp_context=_spawn()) as pool:
        futures = {pool.submit(_compile, s, c, arch): (s, c) for s, c in pairs}
        for future in tqdm(
            as_completed(futures),
            total=len(futures),
            desc=f"compile {arch}",
            unit="kernel",
            dynamic_ncols=True,
        ):
            results[futures[future]] = future.result()
    return results


def _spawn():
    import multiprocessing

    return multiprocessing.get_context("spawn")


class Progress:
    """progress.jsonl in the output folder: one line per finished trial, read back to resume."""

    def __init__(self, path: Path):
        self.path = path
        self.done: dict[str, dict] = {}
        if path.exists():
            for line in path.read_text().splitlines():
                try:
                    row = json.loads(line)
                except ValueError:
                    continue  # a line cut short by an interruption
                self.done[row["id"]] = row

    def add(self, row: dict) -> None:
        self.done[row["id"]] = row
        with self.path.open("a") as f:
            f.write(json.dumps(row) + "\n")


def trial_id(case: Case, kind: str, config: Config | None = None) -> str:
    if config is None:
        return f"{case.name}|{kind}"
    compiled = dataclasses.replace(config, kv_splits=1).to_dict()
    return f"{case.name}|{kind}|{json.dumps(compiled, sort_keys=True)}"


@dataclasses.dataclass
class SweepOptions:
    arch: str | None = None  # default: 'native' on a GPU, else sm_120
    compile_only: bool | None = None  # default: no GPU present
    axes: Axes = dataclasses.field(default_factory=Axes)
    reps: int = 20
    jobs: int | None = None
    db_path: Path | None = None  # default: the user's tuning database
    in_process: bool = False  # run trials here instead of a worker process (tests)
    executor: object | None = None  # anything with call(method, *args): replaces the worker
    seed: int = 0
    also_fit: tuple[str, ...] = FIT_ARCHS  # archs every kept config must also fit


def gpu_present() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def run_sweep(cases: list[Case], out_dir: Path, options: SweepOptions | None = None) -> dict:
    options = options or SweepOptions()
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
    pruned = {
        case.name: prune(case.spec, enumerate_configs(case.spec, options.axes), arch, also)
        for case in cases
    }
    pairs = sorted({(c.spec, cfg) for c in cases for cfg in pruned[c.name].kept}, key=repr)
    compiled = compile_space(pairs, arch.name, options.jobs)
    report = {"meta": meta, "cases": []}
    for case in cases:
        report["cases"].append(
            {
                "name": case.name,
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
        _time_cases(cases, report, arch, out_dir, options)
    (out_dir / "results.json").write_text(json.dumps(report, indent=1))
    return report


def _blocks_per_sm(variant: dict, config: Config) -> int:
    """Blocks of the compiled variant an SM holds at once (2 where the compile did not say)."""
    warps = variant.get("warps_per_sm")
    return max(1, warps // config.num_warps) if warps else 2


def _time_cases(
    cases: list[Case], report: dict, arch, out_dir: Path, options: SweepOptions
) -> None:
    from kgen.tune.worker import InProcessExecutor, WorkerExecutor

    progress = Progress(out_dir / "progress.jsonl")
    executor = options.executor or (InProcessExecutor() if options.in_process else WorkerExecutor())
    db = TuningDB(options.db_path) if options.db_path else TuningDB.user()
    try:
        gpu, sms = executor.call("gpu")
        report["meta"]["gpu"] = gpu
        if "ceilings" not in progress.done:
            progress.add({"id": "ceilings", **executor.call("ceilings")})
        report["meta"]["ceilings"] = progress.done["ceilings"]
        seed = options.seed
        for case, entry in zip(cases, report["cases"], strict=True):
            started = time.time()
            default = compiled_default(case.spec, case.batch, case.max_len, arch, sms)
            variants = [v for v in entry["variants"] if v["status"] == "compiled"]
            configs = [Config.from_dict(v["config"]) for v in variants]
            jobs = [
                ("variant", cfg, split_candidates(case, cfg, sms, _blocks_per_sm(v, cfg)))
                for v, cfg in zip(variants, configs, strict=True)
            ]
            jobs.append(("default", default, [default.kv_splits]))
            for kind, cfg, splits in tqdm(
                jobs, desc=f"time {case.name}", unit="variant", dynamic_ncols=True
            ):
                key = trial_id(case, kind, cfg)
                if key in progress.done:
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
            for kind in ("best", "default"):
                chosen = entry.get(kind)
                gid = (
                    trial_id(case, f"graph-{kind}", Config.from_dict(chosen["config"]))
                    if chosen
                    else None
                )
                if chosen and gid not in progress.done:
                    try:
                        graph = executor.call(
                            "graph", case, Config.from_dict(chosen["config"]), seed + 2
                        )
                    except TrialCrashed as crash:
                        graph = {"status": "failed", "detail": str(crash)[-2000:]}
                    progress.add({"id": gid, "row": graph})
                if chosen:
                    chosen["graph"] = progress.done[gid]["row"]
            if entry.get("best"):
                best = entry["best"]
                db.record(
                    gpu,
                    arch.name,
                    case.spec,
                    bucket(case.batch, case.max_len),
                    report["meta"]["nvrtc"],
                    Config.from_dict(best["config"]),
                    {
                        "median_us": best["median_us"],
                        "case": case.name,
                        "date": report["meta"]["date"],
                    },
                    trials=[
                        [
                            Config.from_dict(r["config"]).short_name(),
                            r["config"]["kv_splits"],
                            r["median_us"],
                        ]
                        for r in entry["trials"]
                        if r["status"] == "ok"
                    ],
                )
            entry["seconds"] = time.time() - started
    finally:
        executor.close()


def fits_targets(spec: Spec, config: Config, archs: tuple[str, ...] = FIT_ARCHS) -> bool:
    """Whether a config fits every target arch (its layout is accepted there) and, on the
    tensor-core path, compiles there without spills (the FMA path is not held to that): what a
    shipped config must do. A sweep's default row is timed unpruned, so this also keeps a default
    that only fits the test GPU out of the database."""
    for arch in archs:
        try:
            kernel = build(spec, config, arch)
        except ConfigError:
            return False
        if config.compute == "mma" and kernel.resources.spills:
            return False
    return True


def _fits_targets(case: Case, row: dict, archs: tuple[str, ...]) -> bool:
    return fits_targets(case.spec, Config.from_dict(row["config"]), archs)


def _summarise(
    case: Case, entry: dict, progress: Progress, default: Config, also_fit: tuple[str, ...]
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
