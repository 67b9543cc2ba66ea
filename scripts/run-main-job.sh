#!/usr/bin/env bash
# The main job of `make run`: `iosfarm tune MODEL` with no server, i.e. an
# embedded server and a local worker in one process on the best backend
# present (cuda if a GPU answers, else cpu), with the latency database in the
# user's cache directory. It searches the IOS schedule of the model on this
# machine and prints sequential / greedy / IOS latencies measured end to end.
# A second run reuses every measurement from the database.
# MODEL defaults to resnet50; override with IOSFARM_MODEL=<zoo name or .onnx>.
set -euo pipefail
bin="${1:-build}/client/iosfarm"
model="${IOSFARM_MODEL:-resnet50}"
"$bin" models
echo
"$bin" tune "$model"
