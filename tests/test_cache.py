"""The disk cache: hits across processes, misses on any key input, damaged entries rebuilt,
concurrent builders compile once, an unusable directory degrades to in-memory compiles."""

import hashlib
import json
import os
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import pytest

import kgen.build
from kgen.build import CacheMissError, build_program, cache_key
from kgen.cache import CacheWarning, DiskCache
from kgen.render import CType

from .axpy import axpy_program

ROOT = Path(__file__).resolve().parent.parent

# Builds one MLA kernel (a compile of about a second) at a given wall-clock time; prints
# "<origin> <sha256 of the cubin>".
BUILD_SCRIPT = textwrap.dedent("""
    import hashlib, sys, time
    from kgen.mla import Config, Spec, build
    start = float(sys.argv[1])
    time.sleep(max(0.0, start - time.time()))
    kernel = build(Spec(heads=4, q_len=2, mask="causal"), Config(heads_per_block=2), arch="sm_120")
    print(kernel.binary.origin, hashlib.sha256(kernel.cubin).hexdigest())
""")


def run_build(cache: Path, start: float = 0.0, **env) -> subprocess.Popen:
    environment = {**os.environ, "KGEN_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT), **env}
    return subprocess.Popen(
        [sys.executable, "-c", BUILD_SCRIPT, str(start)],
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def result(proc: subprocess.Popen) -> tuple[str, str]:
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    origin, digest = out.split()
    return origin, digest


def test_second_process_hits_the_cache_with_compiling_forbidden(fresh_cache):
    origin, digest = result(run_build(fresh_cache))
    assert origin == "compiled"
    origin2, digest2 = result(run_build(fresh_cache, KGEN_NO_COMPILE="1"))
    assert (origin2, digest2) == ("disk", digest)


def test_four_processes_build_once(fresh_cache):
    start = time.time() + 4.0  # past every process's start-up, so the builds overlap
    procs = [run_build(fresh_cache, start) for _ in range(4)]
    results = [result(p) for p in procs]
    assert [o for o, _ in results].count("compiled") == 1, results
    assert len({d for _, d in results}) == 1
    assert len(DiskCache(fresh_cache).stems()) == 1


def test_entry_files_are_readable_and_checksummed(fresh_cache):
    binary = build_program(axpy_program(), "sm_120")
    stem = binary.stem
    assert stem.startswith("axpy_") and len(stem) == len("axpy_") + 12
    meta = json.loads((fresh_cache / "kernels" / f"{stem}.json").read_text())
    assert meta["checksum"] == hashlib.sha256(binary.cubin).hexdigest()
    assert meta["arch"] == "sm_120" and meta["program"] == {"items": 2}
    assert (fresh_cache / "kernels" / f"{stem}.cu").read_text() == binary.program.source
    assert "axpy" in meta["usage"]


def test_memo_then_disk_then_compile(fresh_cache, monkeypatch):
    first = build_program(axpy_program(), "sm_120")
    assert first.origin == "compiled"
    assert build_program(axpy_program(), "sm_120") is first  # in-memory memo
    monkeypatch.setattr(kgen.build, "_memo", {})
    assert build_program(axpy_program(), "sm_120").origin == "disk"


@pytest.mark.parametrize(
    "damage", ["truncate", "flip", "garbage-json", "delete-cubin", "wrong-fields", "usage-field"]
)
def test_damaged_entry_is_rebuilt_with_a_warning(fresh_cache, monkeypatch, damage):
    binary = build_program(axpy_program(), "sm_120")
    folder = fresh_cache / "kernels"
    cubin, meta = folder / f"{binary.stem}.cubin", folder / f"{binary.stem}.json"
    if damage == "truncate":
        cubin.write_bytes(binary.cubin[: len(binary.cubin) // 2])
    elif damage == "flip":
        data = bytearray(binary.cubin)
        data[100] ^= 0xFF
        cubin.write_bytes(bytes(data))
    elif damage == "garbage-json":
        meta.write_text("{not json")
    elif damage in ("wrong-fields", "usage-field"):  # valid JSON, checksum intact, fields wrong
        data = json.loads(meta.read_text())
        if damage == "wrong-fields":
            del data["usage"]
        else:  # what a FunctionUsage that gained a field under the same version would meet
            for usage in data["usage"].values():
                usage["new_field"] = 1
        meta.write_text(json.dumps(data))
    else:
        cubin.unlink()
    monkeypatch.setattr(kgen.build, "_memo", {})
    with pytest.warns(CacheWarning, match="damaged"):
        rebuilt = build_program(axpy_program(), "sm_120")
    assert rebuilt.origin == "compiled" and rebuilt.cubin == binary.cubin
    assert all(s.ok for s in DiskCache(fresh_cache).status())


def test_every_key_input_changes_the_key(monkeypatch):
    source = axpy_program().source
    base = cache_key(source, "sm_120", ("-std=c++17",))
    assert cache_key(source + "\n", "sm_120", ("-std=c++17",)) != base
    assert cache_key(source, "sm_90", ("-std=c++17",)) != base
    assert cache_key(source, "sm_120", ("-std=c++20",)) != base
    monkeypatch.setattr(kgen.build, "nvrtc_version", lambda: "99.9")
    assert cache_key(source, "sm_120", ("-std=c++17",)) != base
    monkeypatch.undo()
    monkeypatch.setattr(kgen.build, "__version__", "0.0.0-other")
    assert cache_key(source, "sm_120", ("-std=c++17",)) != base
    monkeypatch.undo()
    monkeypatch.setattr(kgen.build, "headers_version", lambda: "1")
    assert cache_key(source, "sm_120", ("-std=c++17",)) != base


def test_changed_input_misses_under_no_compile(fresh_cache, monkeypatch):
    build_program(axpy_program(items=2), "sm_120")
    monkeypatch.setenv("KGEN_NO_COMPILE", "1")
    monkeypatch.setattr(kgen.build, "_memo", {})
    assert build_program(axpy_program(items=2), "sm_120").origin == "disk"
    with pytest.raises(CacheMissError, match="KGEN_NO_COMPILE"):
        build_program(axpy_program(items=3), "sm_120")
    with pytest.raises(CacheMissError):
        build_program(axpy_program(items=2), "sm_90")
    with pytest.raises(CacheMissError):
        build_program(axpy_program(CType.FLOAT16, items=2), "sm_120")


def test_disabled_cache_writes_nothing(fresh_cache, monkeypatch):
    monkeypatch.setenv("KGEN_DISABLE_CACHE", "1")
    assert build_program(axpy_program(), "sm_120").origin == "compiled"
    assert not fresh_cache.exists() or not any(fresh_cache.iterdir())


def test_unusable_cache_dir_degrades_to_memory(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("KGEN_CACHE_DIR", str(blocker / "cache"))
    monkeypatch.setattr(kgen.build, "_memo", {})
    with pytest.warns(CacheWarning, match="compiling in memory"):
        binary = build_program(axpy_program(), "sm_120")
    assert binary.origin == "compiled" and binary.cubin[:4] == b"\x7fELF"


def test_full_disk_degrades_to_memory(fresh_cache, monkeypatch):
    def no_space(self, path, data):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(DiskCache, "_write", no_space)
    with pytest.warns(CacheWarning, match="No space"):
        binary = build_program(axpy_program(), "sm_120")
    assert binary.origin == "compiled"


def cli(cache: Path, *args, **env) -> subprocess.CompletedProcess:
    """`kgen cache ARGS` in a fresh process on cache dir `cache`."""
    environment = {**os.environ, "KGEN_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT), **env}
    return subprocess.run(
        [sys.executable, "-m", "kgen", "cache", *args],
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_cache_cli_ls_verify_clear(fresh_cache):
    binary = build_program(axpy_program(), "sm_120")
    listing = cli(fresh_cache, "ls")
    assert listing.returncode == 0 and binary.stem in listing.stdout
    assert cli(fresh_cache, "verify").returncode == 0
    (fresh_cache / "kernels" / f"{binary.stem}.cubin").write_bytes(b"\x7fELF broken")
    bad = cli(fresh_cache, "verify")
    assert bad.returncode == 1 and "checksum" in bad.stdout
    cleared = cli(fresh_cache, "clear")
    assert cleared.returncode == 0 and cleared.stdout.startswith("removed 1 entries from ")
    assert DiskCache(fresh_cache).stems() == []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cli(fresh_cache, "ls").returncode == 0
