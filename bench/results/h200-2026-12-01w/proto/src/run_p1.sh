#!/bin/bash
# Prototype: KV tile in registers (bench/proto/regs_kernel.cu) against the shipped kernels.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
CASES="dsv3-tp1-batch:4 dsv3-tp1-batch:8 kimi-tp1-batch:4 kimi-tp1-batch:8 kimi-tp1-decode-64k:66 kimi-tp1-decode:66 dsv3-tp8-decode-batch:2"
for a in 1 2; do
  PYTHONPATH=. python3 bench/proto/run_regs.py --ahead $a $CASES 2>&1 | tee -a $OUT/proto.jsonl
done
PYTHONPATH=. python3 bench/knockout.py dsv3-tp1-batch@base dsv3-tp1-batch@nocomb kimi-tp1-batch@base kimi-tp1-batch@nocomb kimi-tp1-decode-64k@nocomb 2>&1 | tee $OUT/ko.txt | tail -8
