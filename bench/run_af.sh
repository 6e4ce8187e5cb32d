#!/usr/bin/env bash
# Ninth session: split-KV partials in the output's dtype (this tree, with the patch RESULTS.md
# describes) against float32 partials (hack/: an untracked copy of main), alternating, two rounds,
# on the shipped configs of the split-heavy cases.
set -uo pipefail
bash bench/ab.sh af 2 20 hack . -- kimi-tp8-decode-long kimi-tp8-decode-batch dsv3-tp8-decode-long \
  dsv3-tp8-decode-batch page1-decode kimi-tp1-decode kimi-tp1-decode-64k kimi-tp8-verify-tree \
  kimi-tp1-verify-tree dsv32-sparse-h16-b1 dsv32-sparse-h64-b1 dsv32-sparse-h128-b1 \
  dsv32-sparse-h16-b32 dsv32-sparse-h64-b32
