#!/usr/bin/env bash
# Ninth session: the split-KV merge with 8 partial loads in flight per thread (was 4) and the
# started-count read overlapped with the arrival fence (this tree on branch merge-latency) against
# main (hack/: an untracked copy of main), alternating, two rounds, split-heavy cases.
set -uo pipefail
bash bench/ab.sh ah 2 30 hack . -- kimi-tp8-decode-long kimi-tp8-decode-batch dsv3-tp8-decode-long \
  dsv3-tp8-decode-batch page1-decode kimi-tp1-decode kimi-tp1-decode-64k kimi-tp8-verify-tree \
  kimi-tp1-verify-tree dsv32-sparse-h16-b1 dsv32-sparse-h64-b1 dsv32-sparse-h128-b1 \
  dsv32-sparse-h16-b32 dsv32-sparse-h64-b32
