#!/bin/sh
# Checks the refusals of iosfarm-worker (usage: worker_cli_test.sh PATH_TO_BINARY):
#  - a missing --device-key, an unknown backend or option: usage error, exit 2;
#  - --backend cuda on a machine without a GPU: exit 1 with "no CUDA device"
#    (skipped when a GPU answers);
#  - SIGTERM while the server is unreachable: graceful exit 0.
set -u
bin=$1
out=$(mktemp)
trap 'rm -f "$out"' EXIT
failures=0

fail() {
  echo "FAIL: $*"
  sed 's/^/  | /' "$out"
  failures=$((failures + 1))
}

expect_exit() {  # expect_exit CODE TEXT ARGS...: exit status CODE and TEXT in the output
  code=$1 text=$2
  shift 2
  "$bin" "$@" >"$out" 2>&1
  rc=$?
  if [ "$rc" -ne "$code" ]; then
    fail "iosfarm-worker $*: exit $rc, expected $code"
  elif ! grep -q -- "$text" "$out"; then
    fail "iosfarm-worker $*: output lacks '$text'"
  else
    echo "ok: iosfarm-worker $* -> exit $rc"
  fi
}

expect_exit 2 "device-key" --server 127.0.0.1:1 --backend sim
expect_exit 2 "server" --device-key k --backend sim
expect_exit 2 "unknown backend" --server 127.0.0.1:1 --device-key k --backend tpu
expect_exit 2 "" --server 127.0.0.1:1 --device-key k --backend sim --no-such-flag
expect_exit 2 "sim:" --server 127.0.0.1:1 --device-key k --backend sim:no-such-gpu
expect_exit 2 "log level" --server 127.0.0.1:1 --device-key k --backend sim --log-level loud
expect_exit 0 "--device-key" --help

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  echo "skip: a GPU is present, not checking the no-GPU refusal"
else
  "$bin" --server 127.0.0.1:1 --device-key k --backend cuda >"$out" 2>&1
  rc=$?
  if [ "$rc" -ne 1 ]; then
    fail "--backend cuda without a GPU: exit $rc, expected 1"
  elif grep -q "not compiled in" "$out"; then
    echo "ok: --backend cuda -> exit 1 (this build has no CUDA)"
  elif ! grep -q "no CUDA device" "$out"; then
    fail "--backend cuda without a GPU: output lacks 'no CUDA device'"
  elif [ "$(wc -l <"$out")" -ne 1 ]; then
    fail "--backend cuda without a GPU: more than one line of output"
  else
    echo "ok: --backend cuda -> exit 1, no CUDA device"
  fi
fi

# Graceful shutdown on SIGTERM while retrying an absent server.
"$bin" --server 127.0.0.1:1 --device-key k --backend sim >"$out" 2>&1 &
pid=$!
# Startup (loading CUDA and oneDNN libraries) can take seconds on a busy machine:
# signal only once the daemon runs.
i=0
while [ $i -lt 100 ] && ! grep -q "connecting to" "$out"; do
  sleep 0.1
  i=$((i + 1))
done
kill -TERM "$pid"
wait "$pid"
rc=$?
if [ "$rc" -ne 0 ]; then
  fail "SIGTERM: exit $rc, expected 0"
elif ! grep -q "shutting down" "$out"; then
  fail "SIGTERM: no shutdown in the log"
else
  echo "ok: SIGTERM -> graceful exit 0"
fi

[ "$failures" -eq 0 ]
