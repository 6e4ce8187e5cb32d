#!/usr/bin/env bash
# On the device (thirty-second session, branch row-stores): the q loads / output stores from one
# address a row make every 16-bit shipped entry stale. Each is re-tuned with its config pinned
# (bench/retune_all.sh: the database comes back as $OUT/tuning.json); then the GPU suite on that
# tree and database, in what is left of 585 s.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
python3 -c "from kgen.compiler import nvrtc_version, headers_version; print('nvrtc', nvrtc_version(), 'headers', headers_version())"
bash bench/retune_all.sh 330
echo "at ${SECONDS}s"
bash bench/gpu_suite.sh $((585 - SECONDS)) "$out/gpu-tests.log"
