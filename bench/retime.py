"""Re-time each grid case's config='auto' choice (the shipped tuned config on this GPU), the
heuristic default and plain torch with the flushed timer (GPU time; the host's call cost hidden
behind a spin kernel) and from a CUDA graph, after checking each against the float64 oracle.
Prints one table row per case; JSON to argv[1]. --family sparse: the sparse top-k cases instead
of the dense ones.

    PYTHONPATH=. python3 bench/retime.py results.json [--family dense|sparse]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from kgen.arch import resolve_arch  # noqa: E402
from kgen.mla.choose import choose_config, compiled_default  # noqa: E402
from kgen.mla.sparse.choose import choose_sparse_config  # noqa: E402
from kgen.mla.sparse.heuristic import default_sparse_config  # noqa: E402
from kgen.tune.space import load_grid  # noqa: E402
from kgen.tune.sweep import compile_space  # noqa: E402
from kgen.tune.trials import Trials  # noqa: E402


def choices(family: str, case, index: int, arch, sms: int) -> tuple:
    """(config='auto''s config, the heuristic default) of a grid case on GPU `index`."""
    if family == "sparse":
        return (
            choose_sparse_config(case.spec, case.batch, index),
            default_sparse_config(case.spec, case.batch, arch, sms),
        )
    return (
        choose_config(case.spec, case.batch, case.max_len, index),
        compiled_default(case.spec, case.batch, case.max_len, arch, sms),
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", default="retime.json", type=Path)
    parser.add_argument("--family", choices=("dense", "sparse"), default="dense")
    args = parser.parse_args()
    family = args.family
    trials = Trials()
    _, sms = trials.gpu()
    arch = resolve_arch("native")
    out = {"ceilings": trials.ceilings(), "family": family, "cases": []}
    chosen = []
    for case in load_grid(family=family):
        chosen.append((case, *choices(family, case, trials.device.index, arch, sms)))
    compile_space([(c.spec, x) for c, t, d in chosen for x in (t, d)], arch.name)
    for case, tuned, default in chosen:
        row = {"case": case.name}
        for label, config in (("tuned", tuned), ("default", default)):
            (r,) = trials.variant(case, config, [config.kv_splits], seed=3, reps=20)
            if r["status"] == "ok":
                r["graph"] = trials.graph(case, config, seed=4)
            row[label] = r
        row["torch"] = trials.baseline(case, seed=5, reps=10)
        out["cases"].append(row)
        t, d, b = row["tuned"], row["default"], row["torch"]
        print(
            f"{case.name:24s} {t['status']} {t.get('median_us', 0):8.1f} "
            f"graph {t.get('graph', {}).get('median_us', 0):8.1f}  default "
            f"{d.get('median_us', 0):8.1f}  torch {b.get('median_us', 0):8.1f}  "
            f"{tuned.short_name()} s{tuned.kv_splits}",
            flush=True,
        )
        torch.cuda.empty_cache()
    args.out.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
