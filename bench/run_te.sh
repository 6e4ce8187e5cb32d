#!/usr/bin/env bash
# On the device (thirty-fourth session): compute-sanitizer memcheck / racecheck / synccheck on the
# sample variant added for sm_120's new default (decode in 16-head groups, specialised, four
# stages, the PDL merge: tests/sanitize_sample.py), and on the other specialised variants.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
bash bench/sanitize.sh 100 '_ws$|_ws '
