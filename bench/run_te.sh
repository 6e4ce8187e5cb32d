#!/usr/bin/env bash
# On the device (thirty-fourth session): compute-sanitizer memcheck / racecheck / synccheck on the
# specialised variants of tests/sanitize_sample.py, among them the one added for sm_120's new
# default (decode in 16-head groups, four stages, the PDL merge). (Not run: no device time left.)
set -uo pipefail
bash bench/sanitize.sh 60 '_ws$'
