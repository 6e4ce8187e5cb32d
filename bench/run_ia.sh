#!/usr/bin/env bash
# On the device (twenty-fourth session, call 1): the draft loop's price in the tree kernels (the
# nodrafts knock-out: the prefix loop compiled as a kernel of its own would be), against the
# decode kernel of the same rows and bytes; the branch bool-mask-words (a copy in bmw/) against
# main on the four tree entries, alternating; bool against packed masks on the branch.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
timeout 200 python3 bench/knockout.py --reps 20 kimi-tp8-verify-tree kimi-tp8-verify-tree@nodrafts \
  kimi-tp8-verify-batch kimi-tp8-verify-batch@nodrafts kimi-tp1-verify-tree kimi-tp1-verify-tree@nodrafts \
  kimi-tp1-batch kimi-tp8-verify-tree kimi-tp8-verify-tree@nodrafts > "$out/knockout.txt" 2> "$out/knockout.err"
echo "knockout exit $?"; cat "$out/knockout.txt"; grep -m3 -B2 Error "$out/knockout.err"
bash bench/ab.sh ab 2 20 . bmw -- kimi-tp8-verify-tree kimi-tp8-verify-batch kimi-tp1-verify-tree seed-fp32-verify
(cd bmw && timeout 40 python3 bench/mask_pack_cost.py --reps 20 > "$out/mask_pack.jsonl" 2>&1); cat "$out/mask_pack.jsonl" | cut -c1-200
