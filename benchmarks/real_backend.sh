#!/usr/bin/env bash
# Points the harness at a real backend (default: cuda) on a machine that has one, as one short
# prepared job: the environment, static coverage, a smoke slice, then the full default run with
# one worker per core but one. Everything lands in $OUT (results stream there, so a run stopped at
# its time limit still leaves every verdict it reached); the results are gzipped at the end.
#
#   OUT=/tmp/real BACKEND=cuda LIMIT=420 bash benchmarks/real_backend.sh
#
# Runs from a checkout without installing it (PYTHONPATH), with whatever python3, torch,
# hypothesis, ... the machine has: the point is the vendor's own environment.
set -u
OUT=${OUT:-/tmp/real-backend}
BACKEND=${BACKEND:-cuda}
LIMIT=${LIMIT:-420}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
WORKERS=${WORKERS:-$(( $(nproc) > 2 ? $(nproc) - 1 : 1 ))}

{
  date -u
  $PY - <<'PY'
import platform, sys
import torch, hypothesis, numpy
print("python", sys.version.split()[0], platform.machine())
print("torch", torch.__version__, "cuda", torch.version.cuda, "hip", torch.version.hip)
if torch.cuda.is_available():
    print("device", torch.cuda.get_device_name(0), torch.cuda.get_device_capability(0))
print("hypothesis", hypothesis.__version__, "numpy", numpy.__version__)
PY
  echo "cores $(nproc), workers $WORKERS, limit ${LIMIT}s"
} 2>&1 | tee "$OUT/env.txt"

echo "== static coverage"
timeout 120 $PY -m conformance coverage --backend "$BACKEND" -o "$OUT/coverage.json" \
  --format table > "$OUT/coverage.txt" 2>&1
tail -3 "$OUT/coverage.txt"

echo "== smoke slice"
timeout 180 $PY -m conformance run --backend "$BACKEND" -n 2 --ops \
  'add|mul|index_select|gather|conv2d|_adaptive_avg_pool2d_backward|softmax|layer_norm' \
  -o "$OUT/smoke.jsonl" 2>&1 | tail -25 | tee "$OUT/smoke.txt"

echo "== full default run"
start=$(date +%s)
timeout "$LIMIT" $PY -m conformance run --backend "$BACKEND" -n "$WORKERS" \
  -o "$OUT/full.jsonl" --html "$OUT/full.html" > "$OUT/full.log" 2>&1
rc=$?
echo "full run: exit $rc after $(( $(date +%s) - start ))s (124: stopped at the ${LIMIT}s limit)" \
  | tee -a "$OUT/env.txt"
tail -40 "$OUT/full.log"
gzip -f "$OUT/full.jsonl" "$OUT/smoke.jsonl" 2>/dev/null
ls -la "$OUT"
