"""A trial runner with no GPU, for the sweep's worker processes in CPU tests: each worker is one
of the GPUs named by KGEN_FAKE_GPUS (its CUDA_VISIBLE_DEVICES, set by kgen.tune.worker, picks
which); times come from a formula, each trial takes KGEN_FAKE_TRIAL_S seconds (scaled per GPU by
KGEN_FAKE_SLOW="INDEX:FACTOR,..."), and a trial of heads_per_block KGEN_FAKE_DIE_HPB kills its
own worker with SIGKILL, once (marked in the file KGEN_FAKE_DIE_ONCE) or every time (no file)."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

from kgen.mla import Spec
from kgen.tune.cli import SweepSignals
from kgen.tune.space import Axes, Case
from kgen.tune.sweep import Devices, SweepInterrupted, SweepOptions, run_sweep

# Two cases of one spec (compiled once): three fma variants (heads_per_block 1, 2, 4)
SPEC = Spec(heads=4, q_len=2, mask="causal", dtype="float32")
CASES = [Case("tiny", SPEC, batch=1, prefix=200), Case("tiny-long", SPEC, batch=2, prefix=900)]
AXES = Axes(num_warps=(4,), stage_tiles=((2, 16),), computes=("fma",))


def _index() -> int:
    return int(os.environ.get("CUDA_VISIBLE_DEVICES", "0"))


class FakeTrials:
    def __init__(self):
        names = os.environ.get("KGEN_FAKE_GPUS", "Fake GPU").split(",")
        self.index = _index()
        self.name = names[self.index % len(names)]
        slow = dict(
            item.split(":") for item in os.environ.get("KGEN_FAKE_SLOW", "").split(",") if item
        )
        self.seconds = float(os.environ.get("KGEN_FAKE_TRIAL_S", "0.05")) * float(
            slow.get(str(self.index), 1)
        )
        self.spent = {"verify": 0.0, "time": 0.0}

    def take_spent(self) -> dict:
        spent, self.spent = self.spent, {"verify": 0.0, "time": 0.0}
        return spent

    def _work(self) -> None:
        time.sleep(self.seconds / 2)
        self.spent["verify"] += self.seconds / 2
        time.sleep(self.seconds / 2)
        self.spent["time"] += self.seconds / 2

    def gpu(self):
        return self.name, 100

    def ceilings(self):
        return {
            "gpu": self.name,
            "copy_gbs": 4000.0,
            "read_gbs": 4000.0,
            "bf16_tflops": 700.0,
            "fp32_tflops": 50.0,
        }

    def variant(self, case, config, splits, seed, reps):
        die = os.environ.get("KGEN_FAKE_DIE_HPB")
        if die is not None and config.heads_per_block == int(die):
            once = os.environ.get("KGEN_FAKE_DIE_ONCE")
            if once is None or not Path(once).exists():
                if once is not None:
                    Path(once).write_text(str(self.index))
                os.kill(os.getpid(), signal.SIGKILL)
        self._work()
        work = {"kv_bytes": 1e6, "bytes": 1.1e6, "flops": 1e9}
        # a GPU of another name is twice as slow: its winner is timed apart
        scale = 1.0 if self.name.endswith("A") or self.name == "Fake GPU" else 2.0
        return [
            {
                "config": {**config.to_dict(), "kv_splits": s},
                "status": "ok",
                "median_us": scale * (100.0 / config.heads_per_block + s),
                "error": 1e-3,
                "gpu_index": self.index,
                **work,
            }
            for s in splits
        ]

    def baseline(self, case, seed, reps):
        self._work()
        work = {"kv_bytes": 1e6, "bytes": 1.1e6, "flops": 1e9}
        return {"status": "ok", "median_us": 500.0, "error": 1e-3, **work}

    def graph(self, case, config, seed):
        self._work()
        return {"median_us": 7.0, "rotated_inputs": 1}


def options(devices: tuple[int, ...] | None, db: Path, **more) -> SweepOptions:
    """A timed sweep of CASES for sm_90 on fake GPUs `devices`, in worker processes."""
    return SweepOptions(
        arch="sm_90",
        compile_only=False,
        axes=AXES,
        placement=Devices(devices),
        trials="tests.fake_trials:FakeTrials",
        db_path=db,
        jobs=2,
        **more,
    )


def main(argv: list[str]) -> int:
    """python -m tests.fake_trials OUT I,J,...: the sweep of CASES on those fake GPUs (what a
    test interrupts as a user would)."""
    out = Path(argv[0])
    devices = tuple(int(i) for i in argv[1].split(","))
    with SweepSignals():  # as `kgen sweep` takes Ctrl-C
        try:
            run_sweep(CASES, out, options(devices, out / "db.json"))
        except SweepInterrupted as stop:
            print(f"interrupted: {stop.done}", file=sys.stderr)
            return 130
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
