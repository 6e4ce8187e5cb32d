"""Build each named grid case's shipped config (dense or sparse; CASE:field=value overrides as
bench/time_shipped.py takes them) for this GPU and print its resources; with cuobjdump on PATH
(the [sass] extra), write its SASS to DIR/<n>-<case>.sass (n: the name's position in the list, so
two overrides of one case keep both listings). For comparing what two trees (or two NVRTC
versions) generate for the same config. --loop also prints the attention kernel's tile loop: its
instructions a tile and the commonest opcodes (kgen.sass.tile_loop), what an issue-bound kernel's
time follows. --kv-format F: the dense 16-bit cases on an F cache with the configs shipped for it
(as bench/time_shipped.py takes it).

    PYTHONPATH=. python3 bench/sass_dump.py [--arch ARCH] [--loop] [--kv-format F] DIR CASE ...

(--arch: build for that arch instead of this GPU's, e.g. sm_90 or sm_120 on a machine without one.)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kgen.arch import resolve_arch  # noqa: E402
from kgen.sass import cuobjdump, disassemble, tile_loop  # noqa: E402
from kgen.tune.family import family_of  # noqa: E402
from kgen.tune.space import load_grid, on_kv_format  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from time_shipped import case_config, shipped_configs  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("out", type=Path, help="where the listings go")
    parser.add_argument("cases", nargs="+", metavar="CASE[:field=value,...]")
    parser.add_argument("--arch", default="native", help="the arch to build for (sm_90, sm_120)")
    parser.add_argument("--loop", action="store_true", help="print each tile loop's instructions")
    parser.add_argument("--kv-format", help="the dense cases on this cache format (fp8_tensor)")
    args = parser.parse_args()
    if args.loop and cuobjdump() is None:
        parser.error('--loop reads the SASS: it needs cuobjdump (pip install "kgen[sass]")')
    arch = resolve_arch(args.arch)
    out, names = args.out, args.cases
    out.mkdir(parents=True, exist_ok=True)
    grid = {c.name: c for c in load_grid()}
    if args.kv_format:
        grid = {c.name: c for c in on_kv_format(list(grid.values()), args.kv_format)}
    configs = shipped_configs(args.kv_format)
    for n, name in enumerate(names):
        case, config = case_config(name, configs)
        spec = grid[case].spec
        kernel = family_of(spec).build(spec, config, arch)
        print(f"{name}: {config.short_name()} s{config.kv_splits}: {kernel.resources.summary()}")
        listing = disassemble(kernel.cubin)
        if listing is not None:
            (out / f"{n:02d}-{case}.sass").write_text(listing)
        if args.loop:
            loop = tile_loop(listing)
            mix = ", ".join(f"{op} {k}" for op, k in loop.most_common(12))
            print(f"  tile loop: {loop.total()} instructions ({mix})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
