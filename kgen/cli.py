"""The `kgen` command: `kgen sweep ...`, `kgen tune ls` and `kgen cache ls|clear|verify`."""

from __future__ import annotations

import argparse
import sys

from kgen import env
from kgen.cache import DiskCache


def _cache(args) -> int:
    cache = DiskCache(env.cache_dir())
    if args.action == "ls":
        entries = cache.status()
        for e in entries:
            print(f"{e.size:>10,d}  {e.stem}{'' if e.ok else '  DAMAGED: ' + e.problem}")
        total = sum(e.size for e in entries)
        print(f"{len(entries)} entries, {total:,d} bytes in {cache.root}")
        return 0
    if args.action == "clear":
        print(f"removed {cache.clear()} entries from {cache.root}")
        return 0
    bad = [e for e in cache.status() if not e.ok]
    for e in bad:
        print(f"DAMAGED {e.stem}: {e.problem}")
    print(f"{len(cache.stems()) - len(bad)} entries ok, {len(bad)} damaged in {cache.root}")
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kgen", description=__doc__)
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
