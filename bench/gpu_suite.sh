#!/usr/bin/env bash
# On the device: the GPU test suite (pytest -m gpu, 14 workers) from the current tree, its log in
# LOG, and on stdout one line (exit status, pytest's last line) plus any failures. ARGS go to
# pytest (test files, --ignore=...). Each test's outcome is logged as it finishes (-v), and at
# SECONDS pytest is interrupted (SIGINT, killed 20 s later), so a run out of time still logs what
# failed and pytest's summary of the tests that ran (a run killed outright leaves neither).
#   bash bench/gpu_suite.sh SECONDS LOG [ARGS ...]
set -uo pipefail
seconds=$1 log=$2; shift 2
PYTHONPATH=. timeout -s INT -k 20 "$seconds" python3 -m pytest -m gpu -v -n 14 -p no:cacheprovider \
  -rfEs "$@" > "$log" 2>&1
echo "gpu tests exit $?: $(tail -1 "$log")"; grep -E "^(FAILED|ERROR)|\] (FAILED|ERROR) " "$log" | head
