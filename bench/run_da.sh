#!/usr/bin/env bash
# On the device (nineteenth session): the tiled path's tests (with the 32-dim q.K^T steps sm_120
# builds); an A/B of three edits to the row path's loop (hk_rot: stage indices counted, no
# divisions; hk_late: with q.K ahead, the next tile's copy addressed and issued after the softmax;
# hk_both) on the shipped configs of the cases they change and two controls.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
timeout 150 python3 -m pytest -q -p no:cacheprovider -rfEs tests/test_tiled_gpu.py > "$out/tiled-tests.log" 2>&1
echo "tiled tests exit $?: $(tail -1 "$out/tiled-tests.log")"
bash bench/ab.sh ab1 2 10 . hk_rot hk_late hk_both -- dsv3-tp1-batch kimi-tp8-verify-batch \
  dsv3-tp8-decode-long kimi-tp1-batch kimi-tp1-verify-tree page1-decode
