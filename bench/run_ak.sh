#!/usr/bin/env bash
# Ninth session: the split-KV merge once more. This tree (sparse MERGE_LOADS 8, the shipped
# code), hack16/ (sparse MERGE_LOADS 16) and hackp/ (twice the merge pieces per group: about one
# per split instead of one per two; both families), rotating, two rounds.
set -uo pipefail
bash bench/ab.sh ak 2 30 . hack16 hackp -- dsv32-sparse-h16-b1 dsv32-sparse-h64-b1 dsv32-sparse-h128-b1 \
  dsv32-sparse-h16-b32 kimi-tp8-decode-long kimi-tp1-decode dsv3-tp8-decode-long page1-decode
