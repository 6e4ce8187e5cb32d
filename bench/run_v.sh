#!/usr/bin/env bash
# Seventh session: the KV copies' L2 prefetch-size hint (cp.async ... .L2::128B / .L2::256B), A/B
# on the shipped configs of every 16-bit case from three copies of the tree, and the L2 sector
# counts of one case per tree (ncu: the copies read 1.5x the KV bytes from L2 today).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1
cases="kimi-tp8-decode-long kimi-tp8-decode-batch dsv3-tp8-decode-batch dsv3-tp8-decode-long
dsv3-tp8-decode-wide page1-decode kimi-tp1-decode kimi-tp1-decode-64k kimi-tp1-batch dsv3-tp1-batch
kimi-tp8-verify-tree kimi-tp8-verify-batch kimi-tp1-verify-tree"
# VARIANTS: base, 128 / 256 (.cg with that L2 prefetch size), ca / ca128 (.ca: cached in L1 too)
variants=${VARIANTS:-base 128 256}
for v in $variants; do
  rm -rf /tmp/t$v && mkdir -p /tmp/t$v && cp -r kgen templates bench /tmp/t$v/
  case $v in
    base) ;;
    ca) sed -i "s/cp.async.cg.shared.global \[%0\], \[%1\], 16, %2;/cp.async.ca.shared.global [%0], [%1], 16, %2;/" /tmp/t$v/templates/common/mma.cuh ;;
    ca*) sed -i "s/cp.async.cg.shared.global \[%0\], \[%1\], 16, %2;/cp.async.ca.shared.global.L2::${v#ca}B [%0], [%1], 16, %2;/" /tmp/t$v/templates/common/mma.cuh ;;
    *) sed -i "s/cp.async.cg.shared.global \[%0\], \[%1\], 16, %2;/cp.async.cg.shared.global.L2::${v}B [%0], [%1], 16, %2;/" /tmp/t$v/templates/common/mma.cuh ;;
  esac
  grep -c "cp.async.cg.shared.global \[%0\], \[%1\], 16, %2;" /tmp/t$v/templates/common/mma.cuh
done
for v in $variants base; do  # base twice: first and last, for drift
  (cd /tmp/t$v && KGEN_CACHE_DIR=/tmp/kc$v PYTHONPATH=. timeout 150 python3 bench/time_shipped.py $cases) > "$out/hint-$v.jsonl.tmp" 2> "$out/hint-$v.err"
  cat "$out/hint-$v.jsonl.tmp" >> "$out/hint-$v.jsonl"; rm "$out/hint-$v.jsonl.tmp"
done
m=lts__t_sectors_srcunit_tex_op_read.sum,dram__bytes_read.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed,gpu__time_duration.sum
for v in ${NCU_VARIANTS:-base 256}; do
  (cd /tmp/t$v && KGEN_CACHE_DIR=/tmp/kc$v PYTHONPATH=. timeout 60 ncu --metrics $m -k regex:mla_attention -c 1 python3 bench/profile.py "dsv3-tp8-decode-batch:heads_per_block=16,kv_splits=6,vec_width=8,smem_stages=3,num_warps=4,block_n=16,col_groups=4,min_blocks=0,qk_ahead=1,split_reduce=0,split_softmax=0") > "$out/ncu-$v.txt" 2>&1
  grep -E "lts__|dram__|gpu__" "$out/ncu-$v.txt"
done
python3 - "$out" "$variants" <<'PY'
import json, sys, collections
out = sys.argv[1]
t = collections.defaultdict(lambda: collections.defaultdict(list))
variants = sys.argv[2].split()
for v in variants:
    for line in open(f"{out}/hint-{v}.jsonl"):
        r = json.loads(line)
        t[r["case"]][v].append(r["median_us"] if r["status"] == "ok" else float("nan"))
print(f"{'case':24s}{'base':>14s}" + "".join(f"{v:>10s}" for v in variants if v != "base"))
for case, row in t.items():
    base = "/".join(f"{x:.1f}" for x in row["base"])
    print(f"{case:24s}{base:>14s}" + "".join(f"{row[v][0]:10.1f}" for v in variants if v != "base"))
PY
