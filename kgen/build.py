"""Program -> cubin, through the in-memory memo, the disk cache and (on a miss) NVRTC."""

from __future__ import annotations

import hashlib
import json
import os
import sys
import threading
import warnings
from dataclasses import dataclass

import filelock

from kgen import __version__, env
from kgen.arch import Arch, resolve_arch
from kgen.cache import CacheWarning, DiskCache
from kgen.compiler import DEFAULT_OPTIONS, compile_cubin, headers_version, nvrtc_version
from kgen.render import Program
from kgen.resources import FunctionUsage, parse_ptxas_log


class CacheMissError(RuntimeError):
    """KGEN_NO_COMPILE=1 is set and a kernel is not in the cache."""


class CacheLockTimeout(RuntimeError):
    """Another process held a kernel's build lock for longer than KGEN_LOCK_TIMEOUT."""


LOCK_NOTICE_S = 5.0  # after this long waiting for a lock, say what is being waited for


@dataclass(frozen=True)
class Binary:
    """A compiled Program: its cubin for one arch and what ptxas said about each kernel."""

    program: Program
    arch: Arch
    key: str
    cubin: bytes
    log: str
    usage: dict[str, FunctionUsage]
    origin: str  # "compiled" | "disk" (the in-process memo returns the Binary it first made)

    @property
    def stem(self) -> str:
        return f"{self.program.name}_{self.key[:12]}"


def compile_options() -> tuple[str, ...]:
    """DEFAULT_OPTIONS, plus -lineinfo under KGEN_LINEINFO=1 (source lines for profilers; NVRTC
    then writes the working directory into the cubin, so the key includes it)."""
    return DEFAULT_OPTIONS + (("-lineinfo",) if env.lineinfo() else ())


def cache_key(source: str, arch: str, options: tuple[str, ...]) -> str:
    """Everything that changes the binary: source, arch, options, NVRTC, headers, kgen (and,
    with -lineinfo, the working directory NVRTC records)."""
    parts = {
        "source": source,
        "arch": arch,
        "options": list(options),
        "nvrtc": nvrtc_version(),
        "cuda_headers": headers_version(),
        "kgen": __version__,
    }
    if "-lineinfo" in options:
        parts["cwd"] = os.getcwd()
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


_memo: dict[str, Binary] = {}
_memo_lock = threading.Lock()


def build_program(
    program: Program, arch: str | Arch = "sm_120", options: tuple[str, ...] | None = None
) -> Binary:
    """The cubin of `program` for `arch`: from memory, from disk, or compiled (and stored)."""
    arch = resolve_arch(arch)
    options = compile_options() if options is None else options
    key = cache_key(program.source, arch.name, options)
    with _memo_lock:
        if key in _memo:
            return _memo[key]
    binary = _build_uncached(program, arch, options, key)
    with _memo_lock:
        _memo.setdefault(key, binary)
    return binary


def _build_uncached(program: Program, arch: Arch, options: tuple[str, ...], key: str) -> Binary:
    stem = f"{program.name}_{key[:12]}"
    if dump := env.dump_dir():
        dump.mkdir(parents=True, exist_ok=True)
        (dump / f"{stem}.cu").write_text(program.source)
    cache = None if env.cache_disabled() else DiskCache(env.cache_dir(), check=entry_problem)
    if cache is not None:
        entry = _try(cache, "read", lambda: cache.load(stem, key))
        if entry is not None:
            return _from_entry(program, arch, key, entry.meta, entry.cubin)
    if env.compile_forbidden():
        raise CacheMissError(
            f"KGEN_NO_COMPILE=1 and {stem} for {arch.name} is not in the cache "
            f"({cache.root if cache else 'cache disabled'})"
        )
    lock = _acquire_lock(cache, stem) if cache is not None else None
    try:
        if lock is not None:  # another process may have built it while we waited
            entry = _try(cache, "read", lambda: cache.load(stem, key))
            if entry is not None:
                return _from_entry(program, arch, key, entry.meta, entry.cubin)
        result, usage = _compile_with_report(program, arch, options, stem)
        binary = Binary(program, arch, key, result.cubin, result.log, usage, origin="compiled")
        if cache is not None:
            meta = _metadata(binary, options)
            _try(cache, "write", lambda: cache.store(stem, result.cubin, program.source, meta))
        return binary
    finally:
        if lock is not None:
            lock.release()


class MissingReportError(RuntimeError):
    """NVRTC's log lacks ptxas's report (registers, spills) of an entry point."""


def _compile_with_report(program: Program, arch: Arch, options: tuple[str, ...], stem: str):
    """Compile, and insist on ptxas's report of every entry point: registers and spills decide
    which configs kgen accepts, so a kernel whose figures are unknown must not be built (a
    program NVRTC took from a cache of its own ran no ptxas: compiler.DEFAULT_OPTIONS turn it
    off)."""
    result = compile_cubin(program.source, arch.nvrtc_arch, options, name=f"{stem}.cu")
    usage = parse_ptxas_log(result.log)
    missing = [name for name in program.entry_points if name not in usage]
    if missing:
        raise MissingReportError(
            f"NVRTC {nvrtc_version()} printed no ptxas report for {', '.join(missing)} of "
            f"{stem} for {arch.name} (options {' '.join(options)}); its log:\n{result.log}"
        )
    return result, usage


def _try(cache: DiskCache, what: str, action):
    """Run a cache action; an OS error (read-only, full, unreadable) degrades to no cache."""
    try:
        return action()
    except OSError as exc:
        _warn_unusable(cache, what, exc)
        return None


def _acquire_lock(cache: DiskCache, stem: str):
    """The entry's build lock, waited for up to KGEN_LOCK_TIMEOUT seconds (saying what it waits
    for after a few); None when the cache cannot be locked (then kgen compiles in memory)."""
    try:
        lock = cache.lock(stem)
        try:
            lock.acquire(timeout=LOCK_NOTICE_S)
            return lock
        except filelock.Timeout:
            limit = env.lock_timeout()
            print(
                f"kgen: waiting for {lock.lock_file}: another process is building {stem} "
                f"(giving up after {limit:g} s; KGEN_LOCK_TIMEOUT sets that)",
                file=sys.stderr,
            )
            try:
                lock.acquire(timeout=max(0.0, limit - LOCK_NOTICE_S))
            except filelock.Timeout:
                raise CacheLockTimeout(
                    f"waited {limit:g} s for {lock.lock_file}, held by another process building "
                    f"{stem}; if no kgen process is running, that process was stopped: remove "
                    "the lock file, or set KGEN_LOCK_TIMEOUT"
                ) from None
            return lock
    except OSError as exc:
        _warn_unusable(cache, "lock", exc)
        return None


def _warn_unusable(cache: DiskCache, what: str, exc: OSError) -> None:
    warnings.warn(
        f"kgen cache at {cache.root} unusable ({what}: {exc}); compiling in memory",
        CacheWarning,
        stacklevel=5,
    )


def _metadata(binary: Binary, options: tuple[str, ...]) -> dict:
    return {
        "key": binary.key,
        "name": binary.program.name,
        "arch": binary.arch.name,
        "options": list(options),
        "nvrtc": nvrtc_version(),
        "cuda_headers": headers_version(),
        "kgen": __version__,
        "entry_points": list(binary.program.entry_points),
        "program": dict(binary.program.meta),
        "usage": {name: vars(u) for name, u in binary.usage.items()},
        "log": binary.log,
    }


def cache_entry(binary: Binary) -> dict:
    """A built kernel's disk-cache entry, to carry to another machine's cache (adopt_entry):
    its name, content key, cubin, source and metadata."""
    return {
        "stem": binary.stem,
        "key": binary.key,
        "cubin": binary.cubin,
        "source": binary.program.source,
        "meta": _metadata(binary, compile_options()),
    }


def adopt_entry(entry: dict) -> bool:
    """Write an entry made elsewhere (cache_entry) into this machine's disk cache, unless it
    holds it already or the cache is off; whether it was written. An entry whose metadata is
    not for its name and key, or that build could not use, is refused with ValueError."""
    stem, key, meta = entry["stem"], entry["key"], entry["meta"]
    if meta.get("key") != key or stem != f"{meta.get('name')}_{key[:12]}":
        raise ValueError(f"cache entry {stem}: its metadata is for another kernel")
    if problem := entry_problem(meta, entry["cubin"]):
        raise ValueError(f"cache entry {stem}: {problem}")
    if env.cache_disabled():
        return False
    cache = DiskCache(env.cache_dir(), check=entry_problem)
    if _try(cache, "read", lambda: cache.load(stem, key)) is not None:
        return False
    lock = _acquire_lock(cache, stem)
    try:
        if _try(cache, "read", lambda: cache.load(stem, key)) is not None:
            return False
        stored = {k: v for k, v in meta.items() if k not in ("checksum", "cubin_bytes")}
        _try(cache, "write", lambda: cache.store(stem, entry["cubin"], entry["source"], stored))
        return True
    finally:
        if lock is not None:
            lock.release()


def _parse_entry(meta: dict) -> tuple[dict[str, FunctionUsage], str]:
    """The usage and log of an entry's metadata; KeyError/TypeError/ValueError when malformed,
    or when an entry point has no usage (an entry written without ptxas's report is a miss)."""
    usage = {name: FunctionUsage(**u) for name, u in meta["usage"].items()}
    missing = [name for name in meta["entry_points"] if name not in usage]
    if missing:
        raise ValueError(f"no ptxas report for {', '.join(missing)}")
    log = meta["log"]
    if not isinstance(log, str):
        raise TypeError(f"log is {type(log).__name__}, not str")
    return usage, log


def entry_problem(meta: dict, cubin: bytes) -> str:
    """What stops an entry's metadata becoming a Binary, or "" (DiskCache's check, so `verify`
    rejects exactly what build would)."""
    try:
        _parse_entry(meta)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        return f"metadata does not parse: {type(exc).__name__}: {exc}"
    return ""


def _from_entry(program: Program, arch: Arch, key: str, meta: dict, cubin: bytes) -> Binary:
    usage, log = _parse_entry(meta)
    return Binary(program, arch, key, cubin, log, usage, origin="disk")
