"""The cache owns only what it wrote, any unusable entry is a miss, cubins are the same bytes
wherever they are built, locks cannot hang silently, and the CLI never shows a traceback."""

import json
import os
import stat
import threading
import time
import warnings
from pathlib import Path

import filelock
import pytest

import kgen.build
from kgen.build import CacheLockTimeout, build_program
from kgen.cache import CacheDirError, CacheWarning, DiskCache

from .axpy import axpy_program
from .test_cache import cli

ROOT = Path(__file__).resolve().parent.parent


def test_clear_ls_verify_touch_only_the_caches_own_files(fresh_cache):
    binary = build_program(axpy_program(), "sm_120")
    fresh_cache.joinpath("tuning.json").write_text('{"entries": {}}')
    fresh_cache.joinpath("README.json").write_text("{}")
    fresh_cache.joinpath("notes.cu").write_text("// mine")
    foreign = fresh_cache / "kernels" / "my_notes.cubin"  # not an entry name
    foreign.write_bytes(b"mine")
    (fresh_cache / "kernels" / "odd_0123456789ab.cubin").mkdir()  # a directory named like one
    listing = cli(fresh_cache, "ls")
    assert (
        listing.returncode == 0
        and "tuning" not in listing.stdout
        and "README" not in listing.stdout
    )
    assert cli(fresh_cache, "verify").returncode == 0
    cleared = cli(fresh_cache, "clear")
    assert cleared.returncode == 0 and "removed 1 entries" in cleared.stdout, cleared.stderr
    assert not (fresh_cache / "kernels" / f"{binary.stem}.cubin").exists()
    for kept in ("tuning.json", "README.json", "notes.cu", "kernels/my_notes.cubin"):
        assert (fresh_cache / kept).exists(), kept


def test_clear_keeps_a_held_lock(fresh_cache):
    build_program(axpy_program(), "sm_120")
    cache = DiskCache(fresh_cache)
    (stem,) = cache.stems()
    lock = cache.lock(stem)
    with lock:
        assert cli(fresh_cache, "clear").returncode == 0
        assert Path(lock.lock_file).exists()


def test_an_entry_swapped_for_another_configs_is_damaged(fresh_cache, monkeypatch):
    a = build_program(axpy_program(items=2), "sm_120")
    b = build_program(axpy_program(items=3), "sm_120")
    folder = fresh_cache / "kernels"
    for suffix in (".json", ".cubin"):
        (folder / f"{a.stem}{suffix}").write_bytes((folder / f"{b.stem}{suffix}").read_bytes())
    result = cli(fresh_cache, "verify")
    assert result.returncode == 1 and "key does not match" in result.stdout
    monkeypatch.setattr(kgen.build, "_memo", {})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            monkeypatch.setattr(kgen.build, "_memo", {})
            monkeypatch.setenv("KGEN_DISABLE_CACHE", "")
            assert build_program(axpy_program(items=2), "sm_120").cubin == a.cubin
    damaged = [w for w in caught if issubclass(w.category, CacheWarning)]
    assert len(damaged) == 1, [str(w.message) for w in damaged]  # warned once, then rewritten


def test_an_entry_being_written_is_incomplete_not_damaged(fresh_cache):
    binary = build_program(axpy_program(), "sm_120")
    folder = fresh_cache / "kernels"
    (folder / f"{binary.stem}.json").unlink()  # as between the cubin's and the json's rename
    stray = folder / f".{binary.stem}.cubin.abc123.tmp"
    stray.write_bytes(b"half")
    old = time.time() - 3600
    os.utime(stray, (old, old))
    result = cli(fresh_cache, "verify")
    assert result.returncode == 0 and "1 incomplete" in result.stdout
    assert "stray temp file" in result.stdout and stray.name in result.stdout
    assert "INCOMPLETE" in cli(fresh_cache, "ls").stdout
    assert cli(fresh_cache, "clear").returncode == 0 and not stray.exists()


def test_cli_reports_an_unusable_cache_dir(tmp_path):
    a_file = tmp_path / "a-file"
    a_file.write_text("not a directory")
    for where in (a_file, a_file / "cache"):  # a file; a folder that cannot be created
        for action in ("ls", "verify", "clear"):
            result = cli(where, action)
            assert result.returncode == 2 and "not a directory" in result.stderr, result.stderr
            assert "Traceback" not in result.stderr
    with pytest.raises(CacheDirError, match="cannot be read"):
        unreadable = DiskCache(tmp_path / "c")
        unreadable.ensure()
        original = Path.iterdir

        def refuse(self):
            if self == unreadable.folder:
                raise PermissionError(13, "Permission denied", str(self))
            return original(self)

        Path.iterdir = refuse
        try:
            unreadable.stems()
        finally:
            Path.iterdir = original


def test_files_are_readable_as_the_umask_allows_and_home_is_expanded(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("KGEN_CACHE_DIR", "~/kgen-cache")
    monkeypatch.setattr(kgen.build, "_memo", {})
    binary = build_program(axpy_program(), "sm_120")
    cubin = tmp_path / "kgen-cache" / "kernels" / f"{binary.stem}.cubin"
    assert cubin.is_file()
    umask = os.umask(0)  # this process's, read back unchanged
    os.umask(umask)
    assert stat.S_IMODE(cubin.stat().st_mode) == 0o666 & ~umask  # what open() would have given


def test_cubin_bytes_do_not_depend_on_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.setenv("KGEN_DISABLE_CACHE", "1")
    digests = set()
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        monkeypatch.chdir(tmp_path / name)
        monkeypatch.setattr(kgen.build, "_memo", {})
        digests.add(build_program(axpy_program(), "sm_120").cubin)
    assert len(digests) == 1


def test_a_held_lock_is_announced_and_times_out(fresh_cache, monkeypatch, capfd):
    program = axpy_program(items=5)
    key = kgen.build.cache_key(program.source, "sm_120", kgen.build.compile_options())
    stem = f"{program.name}_{key[:12]}"
    held = filelock.FileLock(str(DiskCache(fresh_cache).lock(stem).lock_file))
    ready, done = threading.Event(), threading.Event()

    def holder():  # another "process": flock locks are per open file, so a thread will do
        with held:
            ready.set()
            done.wait(30)

    thread = threading.Thread(target=holder)
    thread.start()
    ready.wait(10)
    monkeypatch.setattr(kgen.build, "LOCK_NOTICE_S", 0.2)
    monkeypatch.setenv("KGEN_LOCK_TIMEOUT", "0.6")
    try:
        with pytest.raises(CacheLockTimeout, match="KGEN_LOCK_TIMEOUT"):
            build_program(program, "sm_120")
    finally:
        done.set()
        thread.join()
    assert "waiting for" in capfd.readouterr().err


def test_native_arch_without_a_gpu_says_so():
    from kgen.arch import resolve_arch
    from kgen.device import NoGPUError

    from .conftest import GPU

    if GPU:
        pytest.skip("this machine has a GPU")
    with pytest.raises(NoGPUError, match="GPU"):
        resolve_arch("native")


def test_entry_metadata_is_json_with_the_parsed_fields(fresh_cache):
    binary = build_program(axpy_program(), "sm_120")
    meta = json.loads((fresh_cache / "kernels" / f"{binary.stem}.json").read_text())
    assert set(meta["usage"]["axpy"]) == {
        "registers",
        "static_smem",
        "stack",
        "spill_stores",
        "spill_loads",
    }
