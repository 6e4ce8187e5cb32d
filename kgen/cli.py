"""The `kgen` command: `kgen sweep ...`, `kgen tune ls` and `kgen cache ls|clear|verify`."""

from __future__ import annotations

import argparse
import os
import sys

from kgen import env
from kgen.cache import CacheDirError, DiskCache


class Parser(argparse.ArgumentParser):
    """argparse, with a misuse told in one line that names the argument (the options are in
    --help), exit status 2."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _cache(args) -> int:
    from kgen.build import entry_problem

    cache = DiskCache(env.cache_dir(), check=entry_problem)
    try:
        if not cache.folder.exists():
            cache.check_creatable()
            if args.action != "clear":
                print(f"no cache at {cache.folder} yet (the first build creates it): 0 entries")
                return 0
        return _cache_action(cache, args.action)
    except CacheDirError as exc:
        where = " (set by KGEN_CACHE_DIR)" if os.environ.get("KGEN_CACHE_DIR") else ""
        print(f"kgen cache {args.action}: error: {exc}{where}", file=sys.stderr)
        return 2


def _cache_action(cache: DiskCache, action: str) -> int:
    if action == "clear":
        print(f"removed {cache.clear()} entries from {cache.folder} (lock files kept)")
        return 0
    entries, strays = cache.status(), cache.stray_temps()
    if action == "ls":
        for e in entries:
            note = "" if e.state == "ok" else f"  {e.state.upper()}: {e.problem}"
            print(f"{e.size:>10,d}  {e.stem}{note}")
        total = sum(e.size for e in entries)
        print(f"{len(entries)} entries, {total:,d} bytes in {cache.folder}")
    else:
        for e in entries:
            if e.state == "damaged":
                print(f"DAMAGED {e.stem}: {e.problem}")
        counts = {state: sum(e.state == state for e in entries) for state in ("ok", "damaged")}
        incomplete = len(entries) - counts["ok"] - counts["damaged"]
        print(
            f"{counts['ok']} entries ok, {counts['damaged']} damaged, {incomplete} incomplete "
            f"(being written, or left by a crash) in {cache.folder}"
        )
    for path in strays:
        print(f"stray temp file (left by a crashed writer; clear removes it): {path.name}")
    return 1 if action == "verify" and any(e.state == "damaged" for e in entries) else 0


def main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="kgen", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    cache = commands.add_parser("cache", help="list, clear or verify the compiled-kernel cache")
    cache.add_argument("action", choices=["ls", "clear", "verify"])
    cache.set_defaults(run=_cache)

    from kgen.tune.cli import add_sweep_parser, add_tune_parser

    add_sweep_parser(commands)
    add_tune_parser(commands)
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
