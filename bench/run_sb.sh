#!/usr/bin/env bash
# On the device (thirty-third session): which role binds the specialised kernels (knock-outs
# noqk: the q role's q.K^T MMAs, nopv: the v role's P.V MMAs, nocopy, nostore+nocomb) on the four
# shipped specialised entries; then the GPU suite on this tree (the sparse epilogue now calls
# write_row, mla/mma/rows.cuh; 23 entries re-stamped).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
runs=""
for c in kimi-tp1-decode page1-decode kimi-tp8-decode-batch dsv3-tp8-decode-batch; do
  runs="$runs $c $c@noqk $c@nopv $c@noqk+nopv $c@nocopy $c@nostore+nocomb"
done
timeout 200 python3 bench/knockout.py --reps 20 $runs > "$out/roles.txt" 2>&1
echo "knock-outs exit $? at ${SECONDS}s"; cat "$out/roles.txt"
bash bench/gpu_suite.sh $((560 - SECONDS)) "$out/gpu-tests.log"
md5sum kgen/tuned/tuning.json templates/mla/mma/*.cuh templates/mla_sparse/*.cuh > "$out/tree.md5"
