"""What iosfarm's Python modules share about errors and the `iosfarm` CLI.

error(message, code): an iosfarm.Error with its `code` set, as the native
module raises them ("invalid_argument", "not_found", ...).

find_cli(purpose): the CLI's path: $IOSFARM_CLI, else the one built beside
this package (<build>/client/iosfarm) or installed in its prefix (bin/iosfarm),
else PATH; Error "not_found" naming IOSFARM_CLI and `purpose` otherwise.

run(cmd, on_stderr_line=None): runs the CLI and returns (exit code, stdout).
stdout is captured as text. Without on_stderr_line the CLI's stderr is this
process's (its progress line and messages reach the user as they are); with
it, each stderr line (without its newline) is passed to on_stderr_line, on
another thread, in order, and all of them are passed before run returns.
Ctrl-C (KeyboardInterrupt while it waits) sends SIGINT to the CLI, which
stops cleanly (its jobs and measurements are kept as the CLI documents),
waits up to 30 s for it (then kills it) and re-raises KeyboardInterrupt.

failure(cmd, code, stderr_lines=None): the Error for a CLI that exited with
`code` != 0: exit 2 (a usage error) is "invalid_argument", anything else
"unknown" (the CLI's exit code 1 says no more); the message is the CLI's
own `iosfarm: error: ...` line when stderr_lines has one, else it names the
command and its exit code (None: the CLI's stderr was this process's).
"""
import os
import shutil
import signal
import subprocess
import sys
import threading

from iosfarm._native import Error

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def error(message, code="invalid_argument"):
    """An iosfarm.Error carrying `message` and `code`."""
    e = Error(message)
    e.code = code
    return e


def find_cli(purpose="iosfarm runs it"):
    """The `iosfarm` CLI: $IOSFARM_CLI, the build tree's or the prefix's, or PATH."""
    candidates = [os.environ.get("IOSFARM_CLI", ""),
                  os.path.join(_PACKAGE_DIR, "..", "..", "client", "iosfarm"),    # build tree
                  os.path.join(_PACKAGE_DIR, "..", "..", "..", "..", "bin", "iosfarm"),  # prefix
                  shutil.which("iosfarm") or ""]
    for path in candidates:
        if path and os.path.isfile(path) and os.access(path, os.X_OK):
            return os.path.abspath(path)
    raise error("the iosfarm CLI was not found (set IOSFARM_CLI, or put iosfarm on PATH); "
                f"{purpose}", "not_found")


def _pump(stream, on_line):
    for line in iter(stream.readline, ""):
        on_line(line.rstrip("\r\n"))
    stream.close()


def run(cmd, on_stderr_line=None):
    """Runs `cmd`; returns (exit code, stdout text). See the module's docstring."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE if on_stderr_line else None,
                            stdin=subprocess.DEVNULL, text=True, errors="replace")
    chunks = []
    readers = [threading.Thread(target=lambda: chunks.append(proc.stdout.read()), daemon=True)]
    if on_stderr_line:
        readers.append(threading.Thread(target=_pump, args=(proc.stderr, on_stderr_line),
                                        daemon=True))
    for reader in readers:
        reader.start()
    try:
        code = proc.wait()
    except KeyboardInterrupt:
        proc.send_signal(signal.SIGINT)  # the CLI stops its job cleanly
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        raise
    for reader in readers:
        reader.join()
    return code, "".join(chunks)


def cli_message(stderr_lines):
    """The message of the CLI's last `iosfarm: error: ...` (or `iosfarm: ...`)
    line, or None."""
    found = None
    for line in stderr_lines:
        if line.startswith("iosfarm: error: "):
            found = line[len("iosfarm: error: "):]
        elif line.startswith("iosfarm: ") and found is None:
            found = line[len("iosfarm: "):]
    return found


def failure(cmd, code, stderr_lines=None):
    """The iosfarm.Error for `cmd` having exited with `code` (see the module's
    docstring); stderr_lines None: the CLI wrote to this process's stderr."""
    message = cli_message(stderr_lines or [])
    if message is None:
        message = f"`{' '.join(cmd)}` failed with exit code {code}"
        if stderr_lines is None:
            message += " (its message is above on stderr)"
    return error(message, "invalid_argument" if code == 2 else "unknown")


def write_stderr(line):
    """Passes one of the CLI's lines on to this process's stderr."""
    sys.stderr.write(line + "\n")
    sys.stderr.flush()
