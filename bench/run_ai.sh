#!/usr/bin/env bash
# Ninth session: which half of branch merge-latency pays. main (hack/), the started-count read
# before the arrival fence alone (this tree, CHUNK 4), and with 8 partial loads in flight per
# thread (hack8/: CHUNK 8), rotating, two rounds.
set -uo pipefail
bash bench/ab.sh ai 2 30 hack . hack8 -- kimi-tp8-decode-long dsv3-tp8-decode-long \
  dsv3-tp8-decode-batch page1-decode kimi-tp1-decode kimi-tp1-verify-tree dsv32-sparse-h16-b1 \
  dsv32-sparse-h64-b1 dsv32-sparse-h128-b1 dsv32-sparse-h16-b32
