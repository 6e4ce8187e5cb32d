"""The environment switches a user can set, read in one place."""

from __future__ import annotations

import os
from pathlib import Path

_TRUE = {"1", "true", "yes", "on"}
_CHECKOUT = Path(__file__).resolve().parent.parent


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in _TRUE


def cache_disabled() -> bool:
    """KGEN_DISABLE_CACHE=1: neither read nor write the disk cache."""
    return _flag("KGEN_DISABLE_CACHE")


def compile_forbidden() -> bool:
    """KGEN_NO_COMPILE=1: a cache miss raises instead of compiling."""
    return _flag("KGEN_NO_COMPILE")


def dump_dir() -> Path | None:
    """KGEN_DUMP_DIR=DIR: write every rendered source there before compiling it."""
    value = os.environ.get("KGEN_DUMP_DIR")
    return Path(value) if value else None


def lineinfo() -> bool:
    """KGEN_LINEINFO=1: compile with -lineinfo (source lines in profilers; cubins then record the
    working directory, so they differ between directories)."""
    return _flag("KGEN_LINEINFO")


DEFAULT_LOCK_TIMEOUT_S = 600.0


def lock_timeout() -> float:
    """KGEN_LOCK_TIMEOUT=SECONDS: how long to wait for another process's build of a kernel."""
    value = os.environ.get("KGEN_LOCK_TIMEOUT", "").strip()
    if not value:
        return DEFAULT_LOCK_TIMEOUT_S
    try:
        seconds = float(value)
    except ValueError:
        raise ValueError(f"KGEN_LOCK_TIMEOUT={value!r}: expected a number of seconds") from None
    if not seconds >= 0:
        raise ValueError(f"KGEN_LOCK_TIMEOUT={value!r}: expected a number of seconds >= 0")
    return seconds


def cache_dir() -> Path:
    """KGEN_CACHE_DIR (~ expanded), else cache/ of the checkout kgen runs from, else the user
    cache folder."""
    if value := os.environ.get("KGEN_CACHE_DIR"):
        return Path(value).expanduser()
    if (_CHECKOUT / "pyproject.toml").is_file() and (_CHECKOUT / "cache").is_dir():
        return _CHECKOUT / "cache"
    try:
        from platformdirs import user_cache_dir
    except ImportError:
        return Path.home() / ".cache" / "kgen"
    return Path(user_cache_dir("kgen"))
