#!/usr/bin/env bash
# On the device (thirty-fifth session): compute-sanitizer memcheck / racecheck / synccheck on the
# 12-warp three-row variants of tests/sanitize_sample.py, among them the one added for sm_120's
# new verification default (H = 64, q_len 8, 6 heads a block, four stages, ragged, the PDL merge).
set -uo pipefail
bash bench/sanitize.sh 80 '_w12_'
