"""What a user hits first with the `kgen` command, run as a user runs it (a fresh process): every
misuse ends in one line that names the argument (exit status 2, no traceback); Ctrl-C or SIGTERM
stops a sweep within seconds, leaving no worker behind and everything finished on disk; the same
command resumes; the default grid ships in the package."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from kgen.mla import Config, Spec
from kgen.tune.space import Axes, Case, GridError, load_grid
from kgen.tune.sweep import Progress, SweepOptions, compile_id, run_sweep
from tests.conftest import interrupt_and_wait

ROOT = Path(__file__).resolve().parent.parent
GRID_CASE = {"name": "tiny", "B": 1, "T": 2, "H": 4, "S": 100, "mask": "causal"}
GRIDS = {  # file name: its text
    "not-json.json": "{",
    "no-cases.json": "[1, 2]",
    "missing-key.json": json.dumps({"cases": [{"name": "tiny", "B": 1, "S": 100}]}),
    "wrong-type.json": json.dumps({"cases": [{**GRID_CASE, "H": "4"}]}),
    "unknown-key.json": json.dumps({"cases": [{**GRID_CASE, "heads": 4}]}),
    "bad-spec.json": json.dumps({"cases": [{**GRID_CASE, "mask": "none"}]}),
    "twice.json": json.dumps({"cases": [GRID_CASE, GRID_CASE]}),
}
TWO_CASES = ["kimi-tp8-decode-long", "page1-decode"]
# name: (arguments, words the one error line must hold); {tmp} is a folder of the test's. Each
# is run as a user runs it, in a process of its own.
MISUSES = {
    "grid-missing": (["sweep", "--grid", "/nonexistent.json"], ["--grid", "/nonexistent.json"]),
    "grid-not-json": (["sweep", "--grid", "{tmp}/not-json.json"], ["not-json.json", "JSON"]),
    "grid-missing-key": (["sweep", "--grid", "{tmp}/missing-key.json"], ["case 0", "'H'"]),
    "grid-wrong-type": (["sweep", "--grid", "{tmp}/wrong-type.json"], ["'H' must be an integer"]),
    "arch": (["sweep", "--heads", "4", "--arch", "sm_999"], ["--arch", "sm_999", "sm_120"]),
    "heads-0": (["sweep", "--heads", "0"], ["--heads", "got 0"]),
    "q-len": (["sweep", "--heads", "4", "--q-len", "65"], ["--q-len", "[1, 64]", "65"]),
    "prefix": (["sweep", "--heads", "4", "--prefix", "-5"], ["--prefix", ">= 0", "-5"]),
    "batch": (["sweep", "--heads", "4", "--batch", "0"], ["--batch", ">= 1"]),
    "topk": (["sweep", "--heads", "16", "--topk", "0"], ["--topk", "got 0"]),
    "page-size": (["sweep", "--heads", "4", "--page-size", "0"], ["--page-size", "got 0"]),
    "seconds": (["sweep", "--heads", "4", "--seconds", "0"], ["--seconds", "> 0"]),
    "case-unknown": (["sweep", "--case", "nope", "page1-decode"], ["--case", "nope", TWO_CASES[0]]),
    # --case takes several names, and again: the names pass, the bad --arch after them is told
    "cases-accepted": (
        ["sweep", "--case", *TWO_CASES, "--case", "seed-fp32-verify", "--arch", "sm_999"],
        ["--arch"],
    ),
    # nothing answers there (or, without the kgen[ray] extra, Ray is not installed)
    "ray-unreachable": (["sweep", "--heads", "4", "--ray", "127.0.0.1:1"], ["--ray"]),
    "cache-ls": (["cache", "ls"], ["/proc/nope", "cannot be created"]),
    "cache-verify": (["cache", "verify"], ["/proc/nope", "cannot be created"]),
    "cache-clear": (["cache", "clear"], ["/proc/nope", "cannot be created"]),
}
# More of the same, run in this process (each fresh process spends seconds importing torch).
MORE_MISUSES = {
    "grid-folder": (["sweep", "--grid", "{tmp}"], ["--grid", "Is a directory"]),
    "grid-no-cases": (["sweep", "--grid", "{tmp}/no-cases.json"], ["no-cases.json", '"cases"']),
    "grid-unknown-key": (["sweep", "--grid", "{tmp}/unknown-key.json"], ["unknown key 'heads'"]),
    "grid-bad-spec": (["sweep", "--grid", "{tmp}/bad-spec.json"], ["(tiny)", "Spec.mask"]),
    "grid-twice": (["sweep", "--grid", "{tmp}/twice.json"], ["a second case named 'tiny'"]),
    "heads-text": (["sweep", "--heads", "many"], ["--heads", "'many'"]),
    "case-seconds": (["sweep", "--heads", "4", "--case-seconds", "-1"], ["--case-seconds"]),
    "jobs": (["sweep", "--heads", "4", "--jobs", "0"], ["--jobs", ">= 1"]),
    "j": (["sweep", "--heads", "4", "-j", "x"], ["-j/--jobs", "'x'"]),
    "space": (["sweep", "--heads", "4", "--space", "huge"], ["--space", "compact", "full"]),
    "kv-format-dense": (["sweep", "--heads", "4", "--kv-format", "v4_fp8"], ["--kv-format"]),
    "kv-format-sparse": (
        ["sweep", "--heads", "16", "--topk", "64", "--kv-format", "fp8_tensor"],
        ["--kv-format", "fp8_tensor", "one scale"],
    ),
    "devices-text": (["sweep", "--heads", "4", "--devices", "0,a"], ["--devices", "'0,a'"]),
    "devices-twice": (["sweep", "--heads", "4", "--devices", "1,1"], ["--devices", "distinct"]),
    "devices-missing": (["sweep", "--heads", "4", "--devices", "99"], ["--devices", "no GPU"]),
    "devices-compile-only": (
        ["sweep", "--heads", "4", "--devices", "0", "--compile-only"],
        ["--devices", "--compile-only"],
    ),
    "devices-and-ray": (
        ["sweep", "--heads", "4", "--devices", "0", "--ray", "auto"],
        ["--ray", "not allowed with argument --devices"],
    ),
    "qk-ahead": (["sweep", "--heads", "4", "--qk-ahead", "2"], ["--qk-ahead", "[0, 1]"]),
    "removed-axis": (["sweep", "--heads", "4", "--swap-rows", "1"], ["--swap-rows", "removed"]),
    "removed-slack": (["sweep", "--heads", "4", "--ring-slack", "2"], ["--ring-slack", "[0, 1]"]),
    "mma-tiles": (["sweep", "--heads", "4", "--mma-tiles", "3by16"], ["--mma-tiles", "3by16"]),
    "mask-for-q-len": (["sweep", "--heads", "4", "--q-len", "4"], ["--mask", "causal"]),
    "num-warps": (["sweep", "--heads", "4", "--num-warps", "3"], ["--num-warps", "power of two"]),
    "shape-without-heads": (["sweep", "--q-len", "2"], ["--q-len", "--heads"]),
    "grid-and-shape": (["sweep", "--grid", "default", "--heads", "4"], ["--grid", "--heads"]),
    "case-of-other-family": (
        ["sweep", "--family", "sparse", "--case", "page1-decode"],
        ["no sparse case named page1-decode", "dsv32-sparse-h16-b1"],
    ),
    "out-is-a-file": (["sweep", "--heads", "4", "--out", "{tmp}/not-json.json"], ["--out"]),
    "sparse-mask": (["sweep", "--heads", "16", "--topk", "64", "--mask", "tree"], ["--mask"]),
    "tune-db-missing": (["tune", "ls", "--db", "/nonexistent.json"], ["--db", "/nonexistent"]),
    "tune-db-not-json": (["tune", "ls", "--db", "{tmp}/not-json.json"], ["--db", "not a tuning"]),
}


def kgen(*args: str, cache: Path | str, cwd: Path | None = None):
    """`python -m kgen ARGS` in a fresh process, on kernel cache `cache`."""
    env = {**os.environ, "KGEN_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "kgen", *args]
    return subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, timeout=600)


def grids(tmp: Path) -> Path:
    for name, text in GRIDS.items():
        (tmp / name).write_text(text)
    return tmp


@pytest.fixture(scope="module")
def misuse_runs(tmp_path_factory) -> dict[str, subprocess.CompletedProcess]:
    """Every misuse of MISUSES, run from a folder outside the checkout, four at a time."""
    tmp = grids(tmp_path_factory.mktemp("misuse"))

    def run(name):
        args, _ = MISUSES[name]
        cache = "/proc/nope" if args[0] == "cache" else tmp / "cache"
        return kgen(*(a.replace("{tmp}", str(tmp)) for a in args), cache=cache, cwd=tmp)

    with ThreadPoolExecutor(4) as pool:
        return dict(zip(MISUSES, pool.map(run, MISUSES), strict=True))


def assert_one_line(code: int, out: str, err: str, words: list[str]) -> str:
    lines = err.strip().splitlines()
    assert code == 2 and "Traceback" not in err, err
    assert len(lines) == 1 and out == "", err
    assert "error: " in lines[0] and all(w in lines[0] for w in words), lines[0]
    return lines[0]


@pytest.mark.parametrize("name", MISUSES)
def test_a_misuse_is_one_line_naming_the_argument(misuse_runs, name):
    run = misuse_runs[name]
    line = assert_one_line(run.returncode, run.stdout, run.stderr, MISUSES[name][1])
    if name == "cases-accepted":
        assert "--case" not in line


@pytest.mark.parametrize("name", MORE_MISUSES)
def test_more_misuses_are_one_line_naming_the_argument(tmp_path, monkeypatch, capsys, name):
    from kgen.cli import main

    args, words = MORE_MISUSES[name]
    grids(tmp_path)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stop:
        main([a.replace("{tmp}", str(tmp_path)) for a in args])
    captured = capsys.readouterr()
    assert_one_line(stop.value.code, captured.out, captured.err, words)


def test_the_cache_commands_take_an_empty_or_not_yet_made_cache(tmp_path, monkeypatch, capsys):
    from kgen.cli import main

    empty = tmp_path / "empty"
    empty.mkdir()
    for action in ("ls", "verify", "clear"):
        for cache in (empty, tmp_path / "not" / "yet"):
            monkeypatch.setenv("KGEN_CACHE_DIR", str(cache))
            assert main(["cache", action]) == 0
            assert "0 entries" in capsys.readouterr().out
    assert not (tmp_path / "not").exists()  # looking made nothing


def test_the_default_grid_loads_from_the_package_and_is_documented(tmp_path):
    assert load_grid() == load_grid("default")
    assert {"kimi-tp8-decode-long", "dsv32-sparse-h16-b1"} <= {c.name for c in load_grid()}
    run = kgen("sweep", "--help", cache=tmp_path, cwd=tmp_path)
    assert run.returncode == 0 and "kgen/tune/grid.json" in run.stdout


@pytest.mark.parametrize("name", [n for n in GRIDS if n != "no-cases.json"])
def test_a_malformed_grid_names_the_file_and_case(tmp_path, name):
    path = tmp_path / name
    path.write_text(GRIDS[name])
    with pytest.raises(GridError, match=name):
        load_grid(path)


def test_a_case_names_its_cache_format_and_tunes_apart_from_the_16_bit_one():
    """A grid entry's kv_format (dense: "dtype" by default, or "fp8_tensor"; sparse: "fp8" by
    default) reaches its spec, whose name keys the tuning database."""
    from kgen.tune.space import case_from_dict

    dense = {"name": "d", "B": 2, "H": 16, "S": 300}
    fp8 = case_from_dict({**dense, "kv_format": "fp8_tensor"})
    assert fp8.spec.kv_format == "fp8_tensor" and case_from_dict(dense).spec.kv_format == "dtype"
    assert fp8.spec.short_name() != case_from_dict(dense).spec.short_name()
    sparse = case_from_dict({"name": "s", "B": 1, "H": 16, "S": 300, "topk": 64})
    assert sparse.spec.kv_format == "fp8"


# A compile-only sweep on CPU of 36 variants (a minute or more on two cores), and one of 3 with
# one compile process (a compile takes seconds).
SPACE = ["sweep", "--heads", "4", "--q-len", "2", "--mask", "causal", "--compute", "mma"]
SPACE += ["--num-warps", "4", "--col-groups", "4", "--min-blocks", "0", "--compile-only"]
SPACE += ["--space", "full"]
SMALL = [*SPACE, "--heads-per-block", "4", "--mma-tiles", "3x16", "4x16", "2x32", "--jobs", "1"]
SMALL += ["--qk-ahead", "0", "--softmax", "warp", "--body", "rows"]
SPACE += ["--jobs", "2"]


def children(pid: int) -> set[int]:
    try:
        return {int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()}
    except OSError:
        return set()


def interrupt(args: list[str], signum: int, cache: Path) -> tuple[subprocess.Popen, str, float]:
    """Start `kgen ARGS`, send `signum` once progress.jsonl holds a line; the process, its stderr,
    and the seconds from the signal to its "interrupted" line. Its worker processes must be gone
    once it has exited."""
    env = {**os.environ, "KGEN_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "kgen", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    progress = Path(args[args.index("--out") + 1]) / "progress.jsonl"
    workers: set[int] = set()
    deadline = time.time() + 600
    while not (progress.exists() and progress.read_text().count("\n")):
        assert proc.poll() is None and time.time() < deadline, proc.communicate()
        workers |= children(proc.pid)
        time.sleep(0.1)
    workers |= children(proc.pid)
    assert workers, "no worker process seen"
    stderr, took = interrupt_and_wait(proc, signum, "kgen sweep: interrupted: ", workers)
    return proc, stderr, took


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_one_signal_stops_a_sweep_within_seconds_leaving_no_worker(tmp_path, signum, code):
    args = [*SPACE, "--out", str(tmp_path / "out")]
    proc, stderr, took = interrupt(args, signum, tmp_path / "cache")
    assert took < 5 and proc.returncode == code and "Traceback" not in stderr, stderr
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("kgen sweep: interrupted: ") and " of 36 variants compiled" in last
    assert "progress.jsonl; run the same command to resume" in last
    assert (tmp_path / "out" / "progress.jsonl").read_text().count("\n") >= 1


def test_an_interrupted_compile_only_sweep_resumes_from_its_progress(tmp_path):
    args = [*SMALL, "--out", str(tmp_path / "out")]
    proc, stderr, _ = interrupt(args, signal.SIGINT, tmp_path / "cache")
    assert proc.returncode == 130 and " of 3 variants compiled" in stderr, stderr
    progress = tmp_path / "out" / "progress.jsonl"
    before = [json.loads(line)["id"] for line in progress.read_text().splitlines()]
    assert before and all(i.startswith("compile|sm_120|") for i in before)

    again = kgen(*args, cache=tmp_path / "cache")
    assert again.returncode == 0, again.stderr
    assert f"{len(before)} compiled before, resumed from" in again.stdout
    ids = [json.loads(line)["id"] for line in progress.read_text().splitlines()]
    assert ids[: len(before)] == before and len(ids) == len(set(ids)) == 3  # none compiled twice
    (case,) = json.loads((tmp_path / "out" / "results.json").read_text())["cases"]
    configs = [json.dumps(v["config"], sort_keys=True) for v in case["variants"]]
    assert len(configs) == len(set(configs)) == 3
    assert all(v["status"] == "compiled" for v in case["variants"])


def test_a_compile_only_sweep_records_each_variant_and_compiles_only_what_is_not_recorded(
    tmp_path,
):
    spec = Spec(heads=4, q_len=2, mask="causal", dtype="float32")
    case = Case("tiny", spec, batch=1, prefix=100)
    options = SweepOptions(
        arch="sm_120",
        compile_only=True,
        axes=Axes(
            heads_per_block=(2, 4), num_warps=(4,), stage_tiles=((2, 16),), computes=("fma",)
        ),
        jobs=1,
    )
    recorded = Config(heads_per_block=4, vec_width=4, smem_stages=2, num_warps=4, block_n=16)
    out = tmp_path / "out"
    out.mkdir()
    row = {"status": "compiled", "compute": "fma", "registers": -1}
    key = compile_id("sm_120", spec, recorded)
    (out / "progress.jsonl").write_text(json.dumps({"id": key, "row": row}) + "\n{cut sh")
    (entry,) = run_sweep([case], out, options)["cases"]
    by_hpb = {v["config"]["heads_per_block"]: v for v in entry["variants"]}
    assert by_hpb[4]["registers"] == -1  # taken from progress.jsonl, not compiled again
    assert by_hpb[2]["status"] == "compiled" and by_hpb[2]["registers"] > 0
    lines = (out / "progress.jsonl").read_text().splitlines()
    assert lines[1] == "{cut sh" and len(Progress(out / "progress.jsonl").done) == 2


def test_the_former_flags_of_renamed_axes_still_work_with_a_note(capsys):
    """--split-softmax, --pdl-combine and --specialize (0/1) are --softmax, --merge and --body
    for one release (CHANGELOG.md)."""
    from kgen.cli import Parser
    from kgen.tune.cli import add_sweep_parser

    parser = Parser(prog="kgen")
    add_sweep_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["sweep", "--split-softmax", "1", "--pdl-combine", "0", "1"])
    # (--body not given: the --space's values)
    assert (args.softmax, args.merge, args.body) == (["split"], ["fused", "pdl"], None)
    err = capsys.readouterr().err
    assert "--split-softmax is deprecated" in err and "use --merge fused pdl" in err
