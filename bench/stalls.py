"""One launch of each named grid case's chosen config (or --config NAME=hbX,sY,...), for Nsight
Compute's per-instruction stall sampling:

    ncu --set full -k regex:mla_attention -c 1 -o prof python3 bench/stalls.py CASE
    ncu -i prof.ncu-rep --page source --csv --print-source sass > source.csv
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from kgen.mla import build  # noqa: E402
from kgen.mla.choose import choose_config  # noqa: E402
from kgen.mla.workload import make_workload  # noqa: E402
from kgen.tune.space import load_grid  # noqa: E402


def main() -> int:
    grid = {c.name: c for c in load_grid(Path(__file__).parent / "grid.json")}
    device = torch.device("cuda", torch.cuda.current_device())
    for name in sys.argv[1:]:
        case = grid[name]
        config = choose_config(case.spec, case.batch, case.max_len, device.index)
        w = make_workload(case.spec, case.seq_lens, seed=1)
        kernel = build(case.spec, config, "native")
        out, lse = w.poisoned_outputs()
        kernel(*w.args(), out=out, lse=lse)
        torch.cuda.synchronize()
        print(f"{case.name}: {config.short_name()} splits={config.kv_splits}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
