#!/bin/bash
# chain.sh: runs several `tools/gpu_run/gpu_run.py run`s back to back on the GPU
# machine, each into a scratch folder's NAME (/tmp/scratch/NAME), and tars the scratch folder into
# $OUT/runs.tar.gz after each one, so that a call cut off at its limit still
# returns what ran (the device tool returns at most eight files).
#
#   tools/gpu_run/chain.sh NAME:DEADLINE_S:FLAGS ...
#
# GPU_CHAIN_SCRATCH names another scratch folder. FLAGS are gpu_run.py
# run's flags with '|' between words, e.g.
#   'b:100:--steps|env,speed|--speed-models|inception_v3|--speed-args|--graph-stages --batches 1'
# (docs/benchmarks.md, "How to run it").
set -u
if [ $# -eq 0 ] || [ -z "${OUT:-}" ]; then
  echo "usage: OUT=DIR $0 NAME:DEADLINE_S:FLAGS ..." >&2
  exit 2
fi
scratch=${GPU_CHAIN_SCRATCH:-/tmp/scratch}
mkdir -p "$scratch"
export PYTHONUNBUFFERED=1
status=0
for spec in "$@"; do
  name=${spec%%:*}
  rest=${spec#*:}
  deadline=${rest%%:*}
  flags=${rest#*:}
  if [ -z "$name" ] || ! [[ "$deadline" =~ ^[0-9]+$ ]] || [ "$flags" = "$rest" ]; then
    echo "gpu_chain: '$spec' is not NAME:DEADLINE_S:FLAGS" >&2
    exit 2
  fi
  IFS='|' read -r -a argv <<<"$flags"
  echo "=== $name (deadline $deadline s) $(date +%T)"
  timeout $((deadline + 25)) python3 "$(dirname "$0")/gpu_run.py" run --out "$scratch/$name" \
    --deadline-s "$deadline" "${argv[@]}" >"$scratch/$name.log" 2>&1
  rc=$?
  [ $rc -ne 0 ] && status=$rc
  echo "=== $name exit $rc $(date +%T)"
  tail -4 "$scratch/$name.log"
  tar czf "$OUT/runs.tar.gz" -C "$scratch" .
done
exit $status
