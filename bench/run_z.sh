#!/usr/bin/env bash
# Eighth session, first device call after run_y: the dense GPU tests on the swap_rows mask fix,
# then the first profile of the sparse family (ncu, bench/stalls.sh) on three of its cases.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out/z"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
timeout 200 python3 -m pytest -m gpu -q -n 14 -p no:cacheprovider -rfEs tests/test_mla_gpu.py > "$out/z/gpu-mla.log" 2>&1
echo "mla gpu tests exit $?: $(tail -1 "$out/z/gpu-mla.log")"; grep -E "^(FAILED|ERROR)" "$out/z/gpu-mla.log" | head
OUT="$out/z" bash bench/stalls.sh dsv32-sparse-h16-b32 dsv32-sparse-h64-b32 dsv32-sparse-h16-b128
cat "$out/z/stalls-details.txt"
mv "$out/z/stalls-details.txt" "$out/z/stalls-summary.txt" "$out/"
tar czf "$out/run-z.tar.gz" -C "$out" z && rm -rf "$out/z"
