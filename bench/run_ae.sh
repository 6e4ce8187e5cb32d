#!/usr/bin/env bash
# Ninth session: the new sparse default at B = 1 (as shipped-config overrides: the default's exact
# configs), and 32-row warps (warp_m = 2: hb32 w8 c8, one row group) against the shipped 16-row
# ones on the H >= 64 dense cases and two sparse cases. One tree, two rounds.
set -uo pipefail
bash bench/ab.sh ae 2 20 . -- \
  dsv32-sparse-h16-b1 dsv32-sparse-h16-b1:block_n=32,kv_splits=64,min_blocks=1 \
  dsv32-sparse-h64-b1 dsv32-sparse-h64-b1:min_blocks=1 \
  dsv32-sparse-h128-b1 dsv32-sparse-h128-b1:heads_per_block=32,num_warps=8,kv_splits=32,min_blocks=1 \
  dsv3-tp1-batch dsv3-tp1-batch:col_groups=8 kimi-tp1-batch kimi-tp1-batch:col_groups=8 \
  kimi-tp1-decode-64k kimi-tp1-decode-64k:col_groups=8 kimi-tp1-verify-tree kimi-tp1-verify-tree:col_groups=8 \
  dsv32-sparse-h64-b32 dsv32-sparse-h64-b32:col_groups=8 dsv32-sparse-h128-b32 dsv32-sparse-h128-b32:col_groups=8
