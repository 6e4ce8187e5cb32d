"""`kgen sweep` arguments (the sweep itself lives in kgen.tune.sweep)."""

from __future__ import annotations


def add_sweep_parser(commands) -> None:
    sweep = commands.add_parser("sweep", help="compile (and on a GPU verify and time) the design space")
    sweep.set_defaults(run=lambda args: _run(args))


def _run(args) -> int:
    raise SystemExit("kgen sweep: not implemented yet")
