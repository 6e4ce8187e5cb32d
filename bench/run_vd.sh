#!/usr/bin/env bash
# On the device (thirty-sixth session): compute-sanitizer memcheck / racecheck / synccheck on the
# ring_slack variants of tests/sanitize_sample.py (the tile ring on mbarriers: PDL and fused
# merges, 4 and 6 stages, slack 1-3, pages of 1 / 16 / 64) (the lock-step three-row ones were clean in h200-2026-12-03b/ue/).
set -uo pipefail
bash bench/sanitize.sh 120 '_rs[0-9]'
