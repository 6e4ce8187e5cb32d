"""Is compute-sanitizer racecheck's report on a ring_slack kernel about the kernel or about how
racecheck follows its ordering? The ring's "empty" barriers take one arrival a warp (lane 0, after
__syncwarp: PTX orders the lanes' reads before it); this runs the ring variants of
tests/sanitize_sample.py once each, as built (`warp`) or with one arrival a thread (`thread`: the
source edited, every lane arrives, the count NUM_THREADS), checked against the float64 oracle.
Under racecheck, hazards left only in `warp` are racecheck not following __syncwarp into an
mbarrier arrival; hazards in both, or wrong results, would be the kernel's.

    compute-sanitizer --tool racecheck python3 bench/ring_racecheck.py warp|thread
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import kgen.mla.kernel as kernel_module  # noqa: E402
from kgen.mla import build  # noqa: E402
from kgen.mla.workload import make_workload  # noqa: E402
from tests.mla_helpers import reference_for, run_poisoned, to_numpy  # noqa: E402
from tests.reference import check_attention  # noqa: E402
from tests.sanitize_sample import SAMPLE  # noqa: E402

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


def main() -> int:
    mode = sys.argv[1]
    if mode == "thread":
        render = kernel_module.mla_program

        def edited(*args, **kwargs):
            program = render(*args, **kwargs)
            source = program.source
            for anchor, new in PER_THREAD:
                assert anchor in source, anchor
                source = source.replace(anchor, new)
            return replace(program, name=program.name + "_thread_arrivals", source=source)

        kernel_module.mla_program = edited
    for spec, config in SAMPLE:
        if not config.ring_slack:
            continue
        w = make_workload(spec, [spec.q_len, spec.q_len + 77, spec.q_len + 300], seed=7)
        out, lse = run_poisoned(build(spec, config, "native"), w)
        err = check_attention(*to_numpy(out, lse), *reference_for(w), spec.dtype)
        print(f"ok  {mode} {spec.short_name():24s} {config.short_name():44s} err={err:.2e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
