#!/usr/bin/env bash
# On the device (thirty-first session, call 2): Nsight Compute (full set, per-instruction stall
# samples) on the B = 1 cases never profiled in their shipped form: kimi-tp1-decode (specialised
# 8-warp blocks) and dsv32-sparse-h128-b1; kimi-tp8-verify-tree again (row path).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
bash bench/stalls.sh kimi-tp1-decode dsv32-sparse-h128-b1 kimi-tp8-verify-tree
