#!/usr/bin/env bash
# On the device (seventeenth session): q.K^T in two accumulator chains in the specialised q role
# (QK_CHAINS), A/B against the kernel before (bench/probe_attention_v2.cuh, untracked:
# `git show a0e1b35:templates/mla/mma/attention.cuh`), two rounds on the six specialised entries;
# knock-outs of the specialised kernel on three of them (which role binds); if the chains win by
# 1% (geomean), those entries re-tuned with them; the sanitizer on the specialised sample.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"; w=/tmp/cr; mkdir -p $w
export PYTHONPATH=. PYTHONUNBUFFERED=1
att=templates/mla/mma/attention.cuh
cases="dsv3-tp8-decode-batch dsv3-tp8-decode-wide page1-decode kimi-tp1-decode kimi-tp8-decode-long"
cp $att /tmp/chains.cuh
for round in 1 2; do
  KGEN_CACHE_DIR=/tmp/kgen-chains timeout 100 python3 bench/time_shipped.py --reps 10 $cases > $w/chains-$round.jsonl 2>> $w/ab.err
  cp bench/probe_attention_v2.cuh $att
  KGEN_CACHE_DIR=/tmp/kgen-v2 timeout 100 python3 bench/time_shipped.py --reps 10 $cases > $w/v2-$round.jsonl 2>> $w/ab.err
  cp /tmp/chains.cuh $att
done
python3 - $w <<'PY' | tee $w/ab.txt
import json, math, sys
from pathlib import Path
w = Path(sys.argv[1]); t = {}
for f in sorted(w.glob("*-[12].jsonl")):
    for line in f.read_text().splitlines():
        r = json.loads(line); t.setdefault(r["case"], {}).setdefault(f.stem[:-2], []).append(r["median_us"])
ratios = []
for case, v in t.items():
    a, b = min(v["chains"]), min(v["v2"]); ratios.append(a / b)
    print(f"{case:28s} chains {' '.join(f'{x:.1f}' for x in v['chains'])}  before {' '.join(f'{x:.1f}' for x in v['v2'])}")
g = math.exp(sum(map(math.log, ratios)) / len(ratios)); print(f"geomean chains/before {g:.3f}")
(w / "win").write_text("1" if g < 0.99 else "0")
PY
KGEN_CACHE_DIR=/tmp/kgen-chains timeout 150 python3 bench/knockout.py --reps 10 \
  $(for c in dsv3-tp8-decode-wide dsv3-tp8-decode-batch kimi-tp1-decode; do for k in base noqk nopv nosoft nocopy; do echo "$c@$k"; done; done) \
  > $w/ko.txt 2> $w/ko.err
cat $w/ko.txt
if [ "$(cat $w/win)" = 1 ]; then
  KGEN_CACHE_DIR=/tmp/kgen-chains bash bench/retune.sh 150 $w/rt --open specialize=0,1 --open num_warps=4,8 --open qk_ahead=0,1 \
    dsv3-tp8-decode-batch dsv3-tp8-decode-wide page1-decode kimi-tp1-decode kimi-tp8-decode-long
  cp kgen/tuned/tuning.json $w/
fi
for tool in memcheck synccheck racecheck; do
  KGEN_CACHE_DIR=/tmp/kgen-chains timeout 100 compute-sanitizer --tool $tool --report-api-errors no python3 tests/sanitize_sample.py _ws > "$w/$tool-ws.log" 2>&1
  echo "$tool ws: $(grep -c '^ok' $w/$tool-ws.log) ok; $(tail -1 $w/$tool-ws.log)"
done
tar czf "$out/cr.tgz" -C /tmp cr
