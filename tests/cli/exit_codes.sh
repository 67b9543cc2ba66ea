#!/usr/bin/env bash
# Runs the real `iosfarm` binary and checks exit codes and stream discipline:
# 0 ok, 1 failure (one line on stderr), 2 usage error; stdout stays clean.
set -u
bin="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
passes=0

expect() {  # expect CODE DESCRIPTION -- ARGS...
  local want="$1" what="$2"
  shift 3
  "$bin" "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  if [ "$got" -ne "$want" ]; then
    echo "FAIL: $what: exit $got, want $want"; sed 's/^/  stderr: /' "$tmp/err"
    fails=$((fails + 1))
  else
    passes=$((passes + 1))
  fi
}

expect 0 "models" -- models
grep -q '^nasnet_a_mobile ' "$tmp/out" || { echo "FAIL: models output lacks nasnet_a_mobile"; fails=$((fails + 1)); }
expect 0 "inspect json" -- inspect squeezenet --format json
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["model"]=="squeezenet"' "$tmp/out" \
  || { echo "FAIL: inspect json is not valid JSON"; fails=$((fails + 1)); }
expect 1 "unknown model" -- inspect not_a_model
[ "$(wc -l <"$tmp/err")" -eq 1 ] || { echo "FAIL: failure message is not one line"; fails=$((fails + 1)); }
[ ! -s "$tmp/out" ] || { echo "FAIL: failure wrote to stdout"; fails=$((fails + 1)); }
printf 'garbage' >"$tmp/bad.onnx"
expect 1 "malformed onnx" -- inspect "$tmp/bad.onnx"
grep -q "bad.onnx" "$tmp/err" || { echo "FAIL: error does not name the file"; fails=$((fails + 1)); }
: >"$tmp/empty.onnx"
expect 1 "empty onnx" -- inspect "$tmp/empty.onnx"
expect 2 "no subcommand" --
expect 2 "unknown subcommand" -- nonsense
expect 2 "bad batch" -- inspect resnet50 --batch -3
expect 2 "bad format" -- inspect resnet50 --format yaml
expect 0 "help" -- --help

echo "$passes passed, $fails failed"
[ "$fails" -eq 0 ]
