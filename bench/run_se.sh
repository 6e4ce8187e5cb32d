#!/usr/bin/env bash
# On the device (thirty-third session, branch item-rows2: the split softmax's items dealt to
# lanes by rows 0, 2, 1, 3 at 16-position tiles with one row group): the 16 entries whose SASS it
# moves re-tuned with their configs pinned (the database comes back as $OUT/tuning.json), then
# the GPU suite on that tree and database in what is left of 575 s. (Run as of 057a425, with
# the re-tune step written out here; it now calls bench/retune_all.sh, which does the same.)
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
cases="dsv3-tp1-batch dsv3-tp8-decode-batch dsv3-tp8-decode-long dsv3-tp8-decode-wide
dsv32-sparse-h128-b128 dsv32-sparse-h16-b1 dsv32-sparse-h64-b128 kimi-tp1-batch kimi-tp1-decode
kimi-tp1-decode-64k kimi-tp1-verify-tree kimi-tp8-decode-batch kimi-tp8-decode-long
kimi-tp8-verify-batch kimi-tp8-verify-tree page1-decode"
bash bench/retune_all.sh 235 $cases
md5sum kgen/tuned/tuning.json templates/mla/mma/*.cuh templates/mla_sparse/*.cuh > "$out/tree.md5"
bash bench/gpu_suite.sh $((580 - SECONDS)) "$out/gpu-tests.log"
