#!/usr/bin/env bash
# Ninth session, first device call: what the fp8 -> bf16 conversion costs the sparse kernels.
# hack/ (an untracked copy of the tree, not committed) widens e4m3 pairs with the one-instruction
# float16 conversion and uses the bits as bfloat16, and its kgen/tune/trials.py times wrong
# variants too: the upper bound of what a float16 tensor-core path for fp8 caches can save.
set -uo pipefail
bash bench/ab.sh ad 2 20 . hack -- dsv32-sparse-h16-b1 dsv32-sparse-h16-b32 dsv32-sparse-h16-b128 \
  dsv32-sparse-h64-b1 dsv32-sparse-h64-b32 dsv32-sparse-h64-b128 dsv32-sparse-h128-b1 \
  dsv32-sparse-h128-b32 dsv32-sparse-h128-b128 dsv32-sparse-h16-verify
