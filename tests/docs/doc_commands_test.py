#!/usr/bin/env python3
"""Checks that the commands README.md and docs/results.md quote still parse.

Every command of `iosfarm`, `iosfarm-server`, `iosfarm-worker` and the
benchmark programs quoted in a fenced code block, or in backticks in a table
cell, of the documents is checked against the binaries given on the command
line, in two ways:

  1. The command is run with `--help` appended: it must exit 0. That catches
     an unknown subcommand (the CLI checks commands before parsing) and a
     flag value the parser refuses (CLI11 converts and validates values
     before it acts on --help).
  2. Every flag the command names must be one the program's help lists
     (`BIN SUBCOMMAND --help`, and `BIN --help` for the program's own
     flags). CLI11 acts on --help before it looks for unknown arguments, so
     step 1 alone passes a mistyped flag; this step does not.

A self-check runs first: a mistyped flag, an unknown subcommand and an
unknown program must each fail, or the test fails (it could not fail).

Python 3 standard library only. Exit 0 when every command passes, 1 when one
fails (each failure printed with the document and line), 2 on a usage error.

  doc_commands_test.py --source-dir REPO --iosfarm PATH [--iosfarm-server PATH]
      [--iosfarm-worker PATH] [--bench NAME=PATH ...] [--docs FILE ...]
"""

import argparse
import os
import re
import shlex
import subprocess
import sys

DEFAULT_DOCS = ["README.md", "docs/results.md"]
CLI_PROGRAMS = ("iosfarm", "iosfarm-server", "iosfarm-worker")
BENCH_PROGRAMS = ("ios_search_bench", "schedule_bench", "bound_audit_bench",
                  "farm_policy_bench", "runtime_bench", "cuda_plan_bench",
                  "cuda_floor_bench")
# A path into a build tree's program folders names one of our programs, even
# when its name is mistyped.
BUILD_PROGRAM_PATH = re.compile(r"(^|/)build[^/]*/(bench|client|server|worker)/[^/]+$")
# Words that run the next word as the command.
WRAPPERS = ("time", "/usr/bin/time", "exec", "nohup")
SHELL_OPERATORS = ("&&", "||", "|", ";", "&")
TIMEOUT_S = 60
SKIP = "skip"


def program_name(token):
    """The program a command word names, or None when it is not ours."""
    base = os.path.basename(token)
    if base in CLI_PROGRAMS or base in BENCH_PROGRAMS:
        return base
    if BUILD_PROGRAM_PATH.search(token) and not base.endswith((".py", ".sh")):
        return base  # ours, under a name we do not know: reported as unknown
    return None


def looks_like_flag(token):
    """"--name" or "-n", not "-3" (a negative number) nor "-" alone."""
    if len(token) < 2 or token[0] != "-":
        return False
    if token[1] == "-":
        return len(token) > 2 and token[2].isalpha()
    return token[1].isalpha()


def split_segments(tokens):
    """A shell line's simple commands: split at &&, ||, |, ; and &."""
    segment = []
    for token in tokens:
        if token in SHELL_OPERATORS:
            if segment:
                yield segment
            segment = []
        else:
            segment.append(token)
    if segment:
        yield segment


def command_words(segment):
    """The segment from its program on (environment assignments and wrappers
    dropped), or None when it runs none of our programs."""
    i = 0
    while i < len(segment):
        word = segment[i]
        if re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", word) or word in WRAPPERS:
            i += 1
            continue
        break
    if i < len(segment) and program_name(segment[i]) is not None:
        return segment[i:]
    return None


def extract_commands(path):
    """(line number, command words) for each command of ours in the file's
    fenced code blocks and table cells."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    found = []
    in_fence = False
    pending = ""
    pending_line = 0
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if stripped.startswith("```"):
            in_fence = not in_fence
            pending = ""
            continue
        texts = []
        if in_fence:
            if pending:
                text = pending + " " + stripped
            else:
                text, pending_line = stripped, number
            if text.endswith("\\"):
                pending = text[:-1]
                continue
            pending = ""
            texts.append((pending_line, text))
        elif stripped.startswith("|"):
            for span in re.findall(r"`([^`]+)`", stripped):
                texts.append((number, span))
        for where, text in texts:
            try:
                tokens = shlex.split(text, comments=True)
            except ValueError:
                continue  # not shell (unbalanced quotes): prose or code
            for segment in split_segments(tokens):
                words = command_words(segment)
                if words is not None:
                    found.append((where, words))
    return found


def run(argv):
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=TIMEOUT_S,
                              env=dict(os.environ, IOSFARM_SERVER="", IOSFARM_TOKEN=""))
        return done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired:
        return None, f"timed out after {TIMEOUT_S} s"
    except OSError as e:
        return None, str(e)


def help_flags(help_text):
    """The flag names a CLI11 help text lists in its option column."""
    flags = {"--help", "-h"}
    for line in help_text.split("\n"):
        m = re.match(r"^\s+(-{1,2}[A-Za-z].*?)(\s{2,}|$)", line)
        if not m:
            continue
        for name in re.findall(r"(?<![\w-])(--?[A-Za-z][A-Za-z0-9_-]*)", m.group(1)):
            flags.add(name)
    return flags


class Checker:
    def __init__(self, binaries):
        self.binaries = binaries  # program name -> path
        self.help_cache = {}

    def help_of(self, argv):
        key = tuple(argv)
        if key not in self.help_cache:
            code, out = run(argv + ["--help"])
            self.help_cache[key] = (code, out)
        return self.help_cache[key]

    def check(self, words):
        """None when the command parses, SKIP when its program was not built
        (cuda_floor_bench without CUDA), else why not."""
        program = program_name(words[0])
        binary = self.binaries.get(program)
        if binary is None and program in BENCH_PROGRAMS:
            return SKIP
        if binary is None:
            return f"unknown program '{words[0]}' (no binary given for '{program}')"
        args = words[1:]
        code, out = run([binary] + args + ["--help"])
        if code != 0:
            return f"'{program} ... --help' exited {code}: {out.strip()[-600:]}"
        known = set()
        code, out = self.help_of([binary])
        if code != 0:
            return f"'{program} --help' exited {code}"
        known |= help_flags(out)
        if program == "iosfarm":
            subcommand = next((a for a in args if not looks_like_flag(a)), None)
            if subcommand is not None:
                code, out = self.help_of([binary, subcommand])
                if code != 0:
                    return f"'iosfarm {subcommand} --help' exited {code}: {out.strip()[-300:]}"
                known |= help_flags(out)
        unknown = []
        for arg in args:
            if arg == "--":
                break
            if not looks_like_flag(arg):
                continue
            name = arg.split("=", 1)[0]
            if name in known:
                continue
            # "-abc": short flags together, or a short flag with its value.
            if not name.startswith("--") and name[:2] in known:
                continue
            unknown.append(name)
        if unknown:
            return f"flag(s) not in {program}'s help: {', '.join(unknown)}"
        return None


def self_check(checker):
    """The check must be able to fail. Returns the problems found."""
    problems = []
    cases = [
        (["iosfarm", "search", "squeezenet", "--bakend", "cpu"], "a mistyped flag"),
        (["iosfarm", "serch", "squeezenet"], "an unknown subcommand"),
        (["build/bench/ios_serch_bench", "--markdown"], "an unknown program"),
    ]
    for words, what in cases:
        if checker.check(words) in (None, SKIP):
            problems.append(f"self-check: {what} passed: {' '.join(words)}")
    if checker.check(["iosfarm", "search", "squeezenet", "--backend", "cpu"]) is not None:
        problems.append("self-check: a valid command failed: iosfarm search squeezenet --backend cpu")
    # How CLI11 treats --help after an unknown flag (for the log).
    code, _ = run([checker.binaries["iosfarm"], "search", "squeezenet", "--bakend", "cpu", "--help"])
    print(f"note: 'iosfarm search squeezenet --bakend cpu --help' exits {code} "
          f"({'--help acts before unknown flags are found' if code == 0 else '--help does not hide it'}); "
          "flags are checked against the help's option list")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source-dir", default=os.path.join(os.path.dirname(__file__), "..", ".."))
    parser.add_argument("--iosfarm", required=True)
    parser.add_argument("--iosfarm-server")
    parser.add_argument("--iosfarm-worker")
    parser.add_argument("--bench", action="append", default=[], metavar="NAME=PATH")
    parser.add_argument("--docs", nargs="+", default=DEFAULT_DOCS,
                        help="documents relative to --source-dir")
    options = parser.parse_args()

    binaries = {"iosfarm": options.iosfarm}
    if options.iosfarm_server:
        binaries["iosfarm-server"] = options.iosfarm_server
    if options.iosfarm_worker:
        binaries["iosfarm-worker"] = options.iosfarm_worker
    for item in options.bench:
        name, sep, path = item.partition("=")
        if not sep or name not in BENCH_PROGRAMS:
            parser.error(f"--bench takes NAME=PATH with NAME one of {', '.join(BENCH_PROGRAMS)}: {item}")
        binaries[name] = path
    for name, path in binaries.items():
        if not os.access(path, os.X_OK):
            parser.error(f"{name}: not an executable file: {path}")

    checker = Checker(binaries)
    failures = self_check(checker)
    checked = 0
    skipped = []
    for doc in options.docs:
        path = os.path.join(options.source_dir, doc)
        if not os.path.isfile(path):
            failures.append(f"{doc}: no such file")
            continue
        for line, words in extract_commands(path):
            why = checker.check(words)
            if why == SKIP:
                skipped.append(f"{doc}:{line}: {words[0]} (not built here)")
                continue
            checked += 1
            if why is not None:
                failures.append(f"{doc}:{line}: {shlex.join(words)}\n    {why}")
    for item in skipped:
        print("skipped " + item)
    for failure in failures:
        print("FAIL " + failure)
    print(f"{checked} commands checked in {', '.join(options.docs)}; {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
