"""Is compute-sanitizer racecheck's report on a ring_slack kernel about the kernel or about how
racecheck follows its ordering? The ring's "empty" barriers take one arrival a warp (lane 0, after
__syncwarp: PTX orders the lanes' reads before it). This runs tests/sanitize_sample.py's ring
variants (its own loop: inputs, the NaN draft row, the oracle check) as built (`warp`) or with one
arrival a thread (`thread`: the rendered source edited, every lane arrives, the count
NUM_THREADS). Under racecheck, hazards left only in `warp` are racecheck not following
__syncwarp into an mbarrier arrival; hazards in both, or wrong results, would be the kernel's.
(The thirty-sixth session's ve/ ran the version of c008d49: the same variants and arrivals, its own
copy of the loop without the NaN draft row.)

    compute-sanitizer --tool racecheck python3 bench/ring_racecheck.py warp|thread [REGEX]

(REGEX: of the variants' "spec config" names; default every ring variant, `_rs[0-9]`.)
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import kgen.mla.kernel as kernel_module  # noqa: E402
from tests import sanitize_sample  # noqa: E402

PER_THREAD = [
    (
        "      kgen::mbarrier_init(bar + STAGES + s, NUM_WARPS);",
        "      kgen::mbarrier_init(bar + STAGES + s, NUM_THREADS);",
    ),
    (
        "    __syncwarp();\n"
        "    if (lane == 0) kgen::mbarrier_arrive(bar + STAGES + tile % STAGES);",
        "    kgen::mbarrier_arrive(bar + STAGES + tile % STAGES);",
    ),
]


def per_thread_arrivals(render):
    """`render` (kgen.mla.kernel.mla_program) with the ring's empty arrivals made by every lane."""

    def edited(*args, **kwargs):
        program = render(*args, **kwargs)
        source = program.source
        for anchor, new in PER_THREAD:
            assert anchor in source, anchor
            source = source.replace(anchor, new)
        return replace(program, name=program.name + "_thread_arrivals", source=source)

    return edited


def main() -> int:
    mode = sys.argv[1]
    if mode not in ("warp", "thread"):
        raise SystemExit(f"ring_racecheck: warp or thread, not {mode!r}")
    if mode == "thread":
        kernel_module.mla_program = per_thread_arrivals(kernel_module.mla_program)
    regex = sys.argv[2] if len(sys.argv) > 2 else "_rs[0-9]"  # default: every ring variant
    sys.argv = [sys.argv[0], regex]
    return sanitize_sample.main()


if __name__ == "__main__":
    raise SystemExit(main())
