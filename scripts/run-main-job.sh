#!/usr/bin/env bash
# The main job of `make run`. Until the tuning farm lands (`iosfarm tune`,
# embedded server + local worker), it lists the zoo and inspects every zoo
# model: op counts, parameters, FLOPs, width and shapes.
set -euo pipefail
bin="${1:-build}/client/iosfarm"
"$bin" models
for model in $("$bin" models --format json | python3 -c 'import json,sys; print(" ".join(m["name"] for m in json.load(sys.stdin)["models"]))'); do
  echo
  "$bin" inspect "$model"
done
