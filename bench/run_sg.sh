#!/usr/bin/env bash
# On the device (thirty-third session): sparse h16-b1 (the one entry whose re-tune read slower
# after item-rows) against main before it (abref/ = git archive 83b168a kgen templates
# bench/time_shipped.py bench/grid.json pyproject.toml), three alternating rounds of 30 reps.
set -uo pipefail
bash bench/ab.sh h16b1 3 30 abref . -- dsv32-sparse-h16-b1
