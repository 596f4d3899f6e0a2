#!/usr/bin/env python3
"""The chaos suite, long version: thousands of hostile cases against the real ``wakelab``.

Target (issue 14, "Done when"): every count in the table is 0 but "cases".

- ``bad-cli``: bad command lines (a bad value, an unknown option, a missing
  argument, a non-UTF-8 or control-character argument, mixed with good ones):
  exit 2, one ``wakelab...: error:`` line on stderr, nothing on stdout,
  nothing written anywhere (working folder, history, caches), no traceback.
- ``hostile-evidence``: a corpus of broken bundles (truncated JSON, wrong
  types, fields removed, numbers beyond float range, deep nesting, random and
  non-UTF-8 bytes, FIFOs, devices, links out of the bundle or in loops,
  markup and terminal escapes in every free-text field) fed to every reading
  command: ``show``, ``compare`` both ways and ``--json``, ``report`` to a
  file and to stdout, ``export`` in every format to stdout and to files,
  ``history add`` then ``history`` listing and trend.  Exit 0 with output that
  holds no raw control character (and, for HTML, no markup from the
  evidence), or exit 2 with one line and nothing written; within 10 s of CPU
  time and 60 s of wall time (see HANG_S).
- ``sigint``/``sigterm``/``sighup``/``sigkill``: ``wakelab run --arms event
  --n 100000`` in its own session, the signal at a random point from start-up
  to measuring; the exit status the signal's (130, 143, 129; -9), every
  process of the session gone within 2 s, the bundle (when one was written)
  valid by wakelab's own loader, consistent, and marked interrupted.
- ``enospc``: a quick catalogue run into a tmpfs sized to fill at a random
  point (needs root and ``mount``; skipped otherwise): no traceback, exit 1
  (or 2 when nothing could be written), a valid incomplete bundle with the
  arms measured before the disk filled, the history told.
- ``concurrent``: two runs into one folder, the second started a random
  0-0.4 s after the first: one refused with one line (or both fine, one after
  the other), never a mixed bundle, one history row per run that exited 0.

Cases that need no real process of their own (bad-cli, hostile-evidence) run
``wakelab.cli.main`` in a forked child with the modules already imported (a
fresh process in all that matters, at a fraction of the start-up); every
tenth bad command line goes through a real ``python -m wakelab`` with bytes
arguments too.  Signals, ENOSPC and concurrent runs use real processes.

Run from a clone, niced: ``nice -n 10 python3 bench/chaos.py`` (defaults meet
the issue's minimum counts; ``--scale 0.1`` for a quick look; ``--seed`` to
replay).  Exits 1 if any case failed, and prints each failure.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import json
import os
import random
import re
import resource
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
import tempfile
import time
import traceback
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Set, Tuple, Union

import _common  # noqa: F401  (puts src/ on sys.path)
from _common import ROOT

GOOD = os.path.join(ROOT, "lab-evidence", "135-signal-vs-event-wakeup", "results")
PYTHON = sys.executable

# What must never reach a terminal raw: C0 controls but the line feed, DEL, C1 controls, line
# separators, bidi controls (the same set as tests/test_hostile_evidence.py).
TERMINAL_UNSAFE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
# Markup planted in the evidence: every payload opens a tag named chaos*; an HTML page that shows
# the evidence escaped never holds "<chaos".
MARKUP_PAYLOADS = [
    "<chaos-a>",
    '"><chaos-b x="',
    "'><chaos-c>",
    "</script><chaos-d>",
    "</title></style><chaos-e onload=alert(1)>",
    "<!--<chaos-f>-->",
    "]]><chaos-g/>",
    "<CHAOS-H>",
]
ESCAPE_PAYLOADS = [
    "\x1b]0;pwned\x07\x1b[2J",
    "\x9b31mC1",
    "\u202eevil\u202c",
    "\r\x08\x7f",
    "nul\x00byte",
    "line\nbreak\u2028sep",
    "\x1bP+q\x1b\\",
]
UNESCAPED_MARKUP = re.compile("<chaos", re.IGNORECASE)

# A case is a hang when it spends more than HANG_S of CPU time (a reader looping or reading without
# end), or is not done after WALL_S (a reader blocked on a FIFO takes no CPU at all).  Wall time
# alone would count a slow machine as a hang: with 2 vCPUs shared by many, a 2 s compare can
# take 15 s of wall time.  The longest wall and CPU times are printed under the table.
HANG_S = 10.0
WALL_S = 60.0
GONE_WITHIN_S = 2.0  # everything under a killed wakelab must be gone by then
MEMORY_CAP = 3 * 1024 ** 3  # address space of a forked case: a reader that reads without limit fails fast


# ---------------------------------------------------------------------------------------------
# Outcomes


COLUMNS = ("tracebacks", "hangs", "bad_exits", "raw_controls", "markup", "writes", "leftovers", "invalid_bundles")


@dataclasses.dataclass
class Outcome:
    """One case: which checks it failed (each a short note), empty when it passed."""

    category: str
    case: str
    failures: Dict[str, str] = dataclasses.field(default_factory=dict)
    skipped: Optional[str] = None
    wall_s: float = 0.0
    cpu_s: float = 0.0
    exit: Optional[int] = None

    def fail(self, column: str, note: str) -> None:
        assert column in COLUMNS, column
        self.failures.setdefault(column, note)


# ---------------------------------------------------------------------------------------------
# Running wakelab in a forked child


@dataclasses.dataclass
class Result:
    argv: List[str]
    returncode: int
    stdout: bytes
    stderr: bytes
    hung: bool
    seconds: float
    cpu_s: float = 0.0


def preload() -> None:
    """Import what the commands import, once, so each forked case starts warm."""
    os.environ.setdefault("MPLCONFIGDIR", tempfile.mkdtemp(prefix="wakelab-chaos-mpl-"))
    import wakelab.cli
    from wakelab.commands import command_modules

    for name in command_modules():
        __import__("wakelab.commands." + name)
    wakelab.cli.build_parser()
    for module in ("wakelab.report.html", "wakelab.report.plots", "wakelab.analysis.compare", "wakelab.export.csv_format",
                   "wakelab.export.json_format", "wakelab.export.markdown", "wakelab.export.pyperf_format", "wakelab.history"):
        with contextlib.suppress(ImportError):
            __import__(module)
    with contextlib.suppress(ImportError):
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot  # noqa: F401
    with contextlib.suppress(ImportError):
        import pyperf  # noqa: F401


def _die_with_parent() -> None:
    """PR_SET_PDEATHSIG: a case still running (blocked on a FIFO, say) when the bench dies goes too."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG = 1


def _child(argv: List[str], cwd: str, env: Dict[str, str], out_path: str, err_path: str) -> None:
    """In the forked child: be a ``wakelab`` process with ``argv``; never returns."""
    code = 70
    try:
        os.setpgid(0, 0)
        _die_with_parent()
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))
        resource.setrlimit(resource.RLIMIT_CPU, (int(HANG_S), int(HANG_S) + 1))
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(env)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        for fd, path in ((1, out_path), (2, err_path)):
            target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(target, fd)
            os.close(target)
        # As a real process without a terminal has them: stdout strict UTF-8, stderr backslashreplace.
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8", errors="strict", line_buffering=False)
        sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8", errors="backslashreplace",
                                      line_buffering=True)
        sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE, signal.SIGCHLD):
            signal.signal(signum, signal.SIG_DFL if signum != signal.SIGINT else signal.default_int_handler)
        from wakelab.cli import main

        try:
            code = main(argv)
        except SystemExit as exc:
            if exc.code is None:
                code = 0
            elif isinstance(exc.code, int):
                code = exc.code
            else:
                sys.stderr.write("%s\n" % exc.code)
                code = 1
        except BaseException:  # noqa: B036 -- what a real process would print as a traceback
            traceback.print_exc()
            code = 71
        try:
            sys.stdout.flush()
        except BaseException:  # noqa: B036 -- as the interpreter's own flush at exit would
            traceback.print_exc()
            code = 120
        sys.stderr.flush()
    except BaseException:  # noqa: B036
        with contextlib.suppress(BaseException):
            os.write(2, traceback.format_exc().encode("utf-8", "backslashreplace"))
    finally:
        os._exit(code)


class ForkPool:
    """Runs ``wakelab.cli.main`` cases in forked children, ``jobs`` at a time, each bounded by ``timeout_s``."""

    def __init__(self, jobs: int, scratch: str) -> None:
        self.jobs = max(1, jobs)
        self.scratch = scratch
        self._serial = 0

    def run(self, cases: Sequence[Tuple[List[str], str, Dict[str, str]]], timeout_s: float = WALL_S) -> List[Result]:
        results: List[Optional[Result]] = [None] * len(cases)
        running: Dict[int, Tuple[int, float, str, str]] = {}  # pid -> (index, start, out, err)
        todo = list(range(len(cases)))[::-1]
        while todo or running:
            while todo and len(running) < self.jobs:
                index = todo.pop()
                argv, cwd, env = cases[index]
                self._serial += 1
                out_path = os.path.join(self.scratch, "out-%d" % self._serial)
                err_path = os.path.join(self.scratch, "err-%d" % self._serial)
                sys.stdout.flush()
                sys.stderr.flush()
                pid = os.fork()
                if pid == 0:
                    _child(argv, cwd, env, out_path, err_path)
                running[pid] = (index, time.monotonic(), out_path, err_path)
            for pid, (index, start, out_path, err_path) in list(running.items()):
                done, status, usage = os.wait4(pid, os.WNOHANG)
                hung = False
                if not done and time.monotonic() - start > timeout_s:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(pid, signal.SIGKILL)
                    _, status, usage = os.wait4(pid, 0)
                    done, hung = pid, True
                if not done:
                    continue
                seconds = time.monotonic() - start
                del running[pid]
                code = os.waitstatus_to_exitcode(status)
                hung = hung or code == -signal.SIGXCPU
                results[index] = Result(list(cases[index][0]), code, _slurp(out_path), _slurp(err_path), hung, seconds,
                                        usage.ru_utime + usage.ru_stime)
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pid, signal.SIGKILL)  # anything the case left behind in its group
            if running:
                time.sleep(0.003)
        return [r for r in results if r is not None]


def _slurp(path: str) -> bytes:
    try:
        with open(path, "rb") as fh:
            data = fh.read(4 * 1024 * 1024)
        os.unlink(path)
        return data
    except OSError:
        return b""


def run_subprocess(argv: Sequence[Union[str, bytes]], cwd: str, env: Dict[str, str], timeout_s: float) -> Result:
    """``python -m wakelab ARGV`` as a real process (bytes arguments go in as they are)."""
    full: List[Union[str, bytes]] = [PYTHON, "-m", "wakelab", *argv]
    start = time.monotonic()
    proc = subprocess.Popen(full, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout_s)
        hung = False
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        hung = True
    return Result([os.fsdecode(a) for a in argv], proc.returncode, out, err, hung, time.monotonic() - start)


def text_of(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


def describe(argv: Sequence[str]) -> str:
    return " ".join(ascii(a) if (TERMINAL_UNSAFE.search(a) or not a or " " in a or not a.isascii()) else a for a in argv)


def check_common(outcome: Outcome, result: Result, allowed: Sequence[int]) -> None:
    """No traceback, no hang, an allowed exit status, nothing raw on stderr."""
    err = text_of(result.stderr)
    outcome.wall_s, outcome.cpu_s, outcome.exit = result.seconds, result.cpu_s, result.returncode
    if result.hung:
        outcome.fail("hangs", "more than %.0f s of CPU or %.0f s of wall time (%.1f s CPU, %.1f s wall)"
                     % (HANG_S, WALL_S, result.cpu_s, result.seconds))
    if "Traceback (most recent call last)" in err or result.returncode in (70, 71, 120):
        outcome.fail("tracebacks", err.strip().splitlines()[-1][:300] if err.strip() else "exit %d" % result.returncode)
    elif not result.hung and result.returncode not in allowed:
        outcome.fail("bad_exits", "exit %d, stderr %r" % (result.returncode, err[-300:]))
    found = TERMINAL_UNSAFE.search(err)
    if found:
        outcome.fail("raw_controls", "stderr holds %r: %r" % (found.group(), err[max(0, found.start() - 60):found.end() + 20]))


def check_refusal_line(outcome: Outcome, result: Result) -> None:
    """Exit 2 means one ``wakelab...: error:`` line and nothing on stdout."""
    err = text_of(result.stderr)
    lines = err.splitlines()
    if len(lines) != 1 or not re.match(r"wakelab( [a-z]+)*: error: ", lines[0]) or not err.endswith("\n"):
        outcome.fail("bad_exits", "exit 2 but stderr %r" % err[:300])
    if result.stdout:
        outcome.fail("bad_exits", "exit 2 but stdout %r" % result.stdout[:200])


# ---------------------------------------------------------------------------------------------
# Sandboxes: an empty working folder and every place wakelab could write, to check nothing was


@dataclasses.dataclass
class Sandbox:
    root: str
    cwd: str
    env: Dict[str, str]
    history: str

    def written(self) -> List[str]:
        """Everything that appeared in the sandbox."""
        found = []
        for base, dirs, files in os.walk(self.root):
            for name in dirs + files:
                path = os.path.join(base, name)
                if os.path.isdir(path) and not os.path.islink(path) and path in self._dirs:
                    continue
                found.append(os.path.relpath(path, self.root))
        return sorted(found)

    @property
    def _dirs(self) -> Set[str]:
        return {os.path.join(self.root, n) for n in ("cwd", "home", "data", "config", "cache", "mpl", "hist")}


def wakelab_src() -> str:
    """The folder of the wakelab this process imported (src/ of the clone, or a copy under test)."""
    import wakelab

    return os.path.dirname(os.path.dirname(os.path.abspath(wakelab.__file__)))


def make_sandbox(parent: str, name: str) -> Sandbox:
    root = os.path.join(parent, name)
    dirs = {n: os.path.join(root, n) for n in ("cwd", "home", "data", "config", "cache", "mpl", "hist")}
    for path in dirs.values():
        os.makedirs(path)
    history = os.path.join(dirs["hist"], "history.sqlite3")
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "PYTHONPATH": wakelab_src(),
        "HOME": dirs["home"],
        "XDG_DATA_HOME": dirs["data"],
        "XDG_CONFIG_HOME": dirs["config"],
        "XDG_CACHE_HOME": dirs["cache"],
        "MPLCONFIGDIR": dirs["mpl"],
        "WAKELAB_HISTORY": history,
        "TMPDIR": os.environ.get("TMPDIR", "/tmp"),
    }
    return Sandbox(root, dirs["cwd"], env, history)


# ---------------------------------------------------------------------------------------------
# bad-cli: command lines that must be refused


NON_UTF8 = os.fsdecode(b"\xff")  # as Python hands a shell's $'\xff' over: a lone surrogate
LATIN1 = os.fsdecode(b"caf\xe9")
ESC = "\x1b]0;pwned\x07\x1b[2J"
NUMBER_BAD = ["0", "-1", "abc", "", "1e3", "nan", "inf", "-inf", "1.5", "9" * 40, "0x10", " ", ESC, NON_UTF8, "1_0_"]
FLOAT_BAD = ["0", "-1", "abc", "", "nan", "inf", "-inf", "1e400", "-0", ESC, NON_UTF8, "1,2"]
MISSING = os.path.join("no", "such", "bundle")
# A destination no one can create, root included: under a regular file (ENOTDIR), or in /proc.
UNCREATABLE = os.path.join(GOOD, "summary.json", "x")

# command -> (good fragments to mix in, bad fragments: at least one goes into every case)
Fragment = Tuple[str, ...]
CLI_TABLE: Dict[str, Tuple[List[Fragment], List[Fragment]]] = {
    "run": (
        [("--arms", "event"), ("-n", "5"), ("--warmup", "0"), ("--in-process",), ("-q",), ("--no-history",),
         ("--note", "chaos"), ("--settle-us", "100"), ("--timeout-s", "0.5"), ("--workers", "1"), ("--json",),
         ("--mode", "closed"), ("--install-n", "10"), ("--rounds", "1"), ("--placement", "any"), ("--cpu-threads", "0")],
        [("-n", v) for v in NUMBER_BAD + ["1000001"]]
        + [("--warmup", v) for v in ["-1", "x", "100001", NON_UTF8]]
        + [("--settle-us", v) for v in ["-1", "1,1", "", ",", "x", "10000001", "100,,200"]]
        + [("--timeout-s", v) for v in FLOAT_BAD + ["3601", "0.0001"]]
        + [("--install-n", v) for v in ["0", "-5", "x", "100000001"]]
        + [("--rounds", v) for v in ["0", "1001", "x"]]
        + [("--planted-delay-us", v) for v in ["-1", "1000001", "x"]]
        + [("--placement", v) for v in ["nowhere", "same,same", "", ",", "spilt", NON_UTF8, ESC]]
        + [("--placement", "same", "--cpus", v) for v in ["-1", "a", "4096", "0,1", "0,1,2", ""]]
        + [("--placement", "split", "--cpus", v) for v in ["0", "0,0", "0,1,2", "x,y"]]
        + [("--cpu-threads", v) for v in ["-1", "65", "x", "1,1"]]
        + [("--cpu-procs", v) for v in ["-1", "65", "x"]]
        + [("--switch-interval", v) for v in ["0", "nan", "2", "x", "1e-9", "inf"]]
        + [("--mode", v) for v in ["half", "", ESC, "CLOSED"]]
        + [("--interval-us", v) for v in ["0", "-1", "x", "10000001"]]
        + [("--workers", v) for v in ["0", "65", "-1", "x"]]
        + [("--python", v) for v in ["/nonexistent/python3", NON_UTF8, "/dev/null", "/etc/passwd"]]
        + [("--lab", v) for v in ["nope", "", "135x", NON_UTF8, ESC, "catalog"]]
        + [("--arms", v) for v in ["nope", "", ",", "event,event", NON_UTF8, "ev" + ESC, "eventt"]]
        + [("-o", v) for v in ["", "d" + NON_UTF8, "/proc/self/wakelab-chaos/x", "/dev/null/x"]]
        + [("--note", v) for v in [NON_UTF8, LATIN1, "a" + NON_UTF8 + "b"]]
        + [("--history", v) for v in ["h" + NON_UTF8, "/proc/self/wakelab-chaos/h.sqlite3", "/dev/null/h", ""]]
        + [("--nn", "5"), ("--bogus" + ESC,), ("--bogus", ESC), ("--arsm" + ESC, "event"), ("--arsm", "event"), ("-n",), ("--arms",), ("--note",), ("extra",),
           ("--settle-us=",), ("-x",), ("--placement", "same", "--cpus", "0", "--placement", "same,split", "--cpus", "0")],
    ),
    "show": (
        [],
        [(MISSING,), ("",), ("d" + NON_UTF8,), ("/dev/zero",), ("/dev/null",), ("/proc/self/status",), (".",),
         ("/",), (ESC,), (GOOD, "extra"), ("--json", GOOD), (GOOD, "--bogus"), ()],
    ),
    "compare": (
        [("--json",), ("--seed", "1"), ("--resamples", "50"), ("--alpha", "0.05"), ("--metric", "p50")],
        [("--alpha", v, GOOD, GOOD) for v in ["0", "1", "nan", "-0.1", "x", "", "inf", ESC, NON_UTF8]]
        + [("--resamples", v, GOOD, GOOD) for v in ["0", "-1", "x", "1e9", ""]]
        + [("--seed", v, GOOD, GOOD) for v in ["x", "", "1.5", NON_UTF8]]
        + [("--metric", v, GOOD, GOOD) for v in ["p75", "", ESC]]
        + [("--fail-on-regression", v, GOOD, GOOD) for v in ["-5", "nan", "x", "inf", ""]]
        + [(GOOD,), (), (GOOD, MISSING), (MISSING, GOOD), (GOOD, "/dev/zero"), ("/dev/null", GOOD), (GOOD, "d" + NON_UTF8),
           (GOOD, GOOD, "--bogus")],
    ),
    "report": (
        [("-q",)],
        [(GOOD, "-o", v) for v in [UNCREATABLE + ".html", "/proc/self/wakelab-chaos.html", "", "/dev/null/x.html"]]
        + [(MISSING,), (), ("/dev/zero",), ("-o",), (GOOD, "--bogus"), (GOOD, MISSING, "-o", "r.html")],
    ),
    "export": (
        [],
        [("-f", v, GOOD) for v in ["xml", "", "CSV", ESC, NON_UTF8]]
        + [(GOOD,), ("-f", "csv"), ("-f", "csv", MISSING), ("-f", "json", "/dev/zero"), ("-f", "csv", GOOD, GOOD)]
        + [("-f", f, GOOD, "-o", v) for f in ("csv", "json", "markdown", "pyperf")
           for v in [UNCREATABLE, "/proc/self/wakelab-chaos/x", ""]],
    ),
    "history": (
        [("--json",), ("--limit", "5")],
        [("--limit", v) for v in ["0", "-1", "x", "", NON_UTF8]]
        + [(flag, v) for flag in ("--arm", "--host", "--lab", "--python") for v in [NON_UTF8, "a" + LATIN1]]
        + [("--history", v) for v in [NON_UTF8, ""]]
        + [("add", "--history", v, GOOD) for v in ["/proc/self/wakelab-chaos/h.sqlite3", "/dev/null/h", "", "/"]]
        + [("add",), ("add", MISSING), ("add", "/dev/zero"), ("add", "r" + NON_UTF8), ("--bogus",), ("--arm",)],
    ),
    "list": ([("--json",)], [("--bogus",), ("extra",), ("--json=1",)]),
    "check": ([("--json",)], [("--bogus",), ("extra",), ("--json=yes",)]),
    "interpreters": ([("--json",)], [("--bogus",), ("extra",)]),
    "": ([], [("rn",), ("sho",), ("run" + ESC,), (NON_UTF8,), ("",), ("--versionx",), (), ("-x",), ("--bogus", "run")]),
}


def cli_cases(rng: random.Random, count: int) -> List[List[str]]:
    """``count`` command lines, each holding at least one fragment that must be refused."""
    commands = sorted(CLI_TABLE)
    cases = []
    for i in range(count):
        command = commands[i % len(commands)] if i < 4 * len(commands) else rng.choice(commands)
        good, bad = CLI_TABLE[command]
        fragments = [rng.choice(bad)]
        fragments += rng.sample(good, rng.randint(0, min(4, len(good))))
        rng.shuffle(fragments)
        argv = [command] if command else []
        for fragment in fragments:
            argv.extend(fragment)
        cases.append(argv)
    return cases


def check_bad_cli(result: Result, sandbox: Sandbox) -> Outcome:
    outcome = Outcome("bad-cli", describe(result.argv))
    check_common(outcome, result, allowed=(2,))
    if result.returncode == 2:
        check_refusal_line(outcome, result)
    written = sandbox.written()
    if written:
        outcome.fail("writes", "wrote %s" % written[:5])
    return outcome


def run_bad_cli(count: int, rng: random.Random, pool: ForkPool, scratch: str, report: Callable[[Outcome], None]) -> None:
    cases = cli_cases(rng, count)
    batch = 40
    for start in range(0, len(cases), batch):
        chunk = cases[start:start + batch]
        boxes = [make_sandbox(scratch, "cli-%d" % (start + i)) for i in range(len(chunk))]
        real = [i for i in range(len(chunk)) if (start + i) % 10 == 9]  # every tenth also as a real process
        results = pool.run([(argv, box.cwd, box.env) for argv, box in zip(chunk, boxes)])
        for i, (result, box) in enumerate(zip(results, boxes)):
            report(check_bad_cli(result, box))
            if i in real:
                shutil.rmtree(box.root)
                box = make_sandbox(scratch, "cli-%d" % (start + i))
                argv = [os.fsencode(a) for a in chunk[i]]
                outcome = check_bad_cli(run_subprocess(argv, box.cwd, box.env, 60), box)
                outcome.case = "(real process) " + outcome.case
                report(outcome)
            shutil.rmtree(box.root, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# hostile-evidence: broken bundles fed to every reading command


def _plain(path: str, folder_too: bool = False) -> str:
    """``path`` if it is a regular file (or, ``folder_too``, a real folder), not a link: an earlier
    mutation may have made it a FIFO, a link to /dev/zero or to /, which the bench itself must not
    read, block on or copy.  OSError otherwise (build_bundle then stops mutating)."""
    mode = os.lstat(path).st_mode
    if not (stat.S_ISREG(mode) or (folder_too and stat.S_ISDIR(mode))):
        raise OSError("%s is no longer a plain file" % path)
    return path


def _read(path: str) -> str:
    with open(_plain(path), encoding="utf-8") as fh:
        return fh.read()


def _read_bytes(path: str) -> bytes:
    with open(_plain(path), "rb") as fh:
        return fh.read()


def _write(path: str, data: Union[str, bytes]) -> None:
    _plain(os.path.dirname(path), folder_too=True)  # never through a link out of the bundle
    if os.path.islink(path) or os.path.exists(path):
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)
    with open(path, "wb") as fh:
        fh.write(data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data)


def _replace(path: str, make: Callable[[str], None]) -> None:
    _plain(os.path.dirname(path), folder_too=True)  # never through a link out of the bundle
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.unlink(path)
    make(path)


def _paths(doc: Any, prefix: Tuple[Any, ...] = ()) -> Iterator[Tuple[Any, ...]]:
    items: Any = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for key, value in items:
        yield prefix + (key,)
        yield from _paths(value, prefix + (key,))


def _get(doc: Any, path: Tuple[Any, ...]) -> Any:
    for key in path:
        doc = doc[key]
    return doc


def _set(doc: Any, path: Tuple[Any, ...], value: Any) -> None:
    _get(doc, path[:-1])[path[-1]] = value


TOKEN = '"@@CHAOS-TOKEN@@"'
RAW_TOKENS = ["1e400", "-1e400", "NaN", "Infinity", "-Infinity", "1e309", "9" * 5000, "-" + "9" * 400 + ".5", "1e-400",
              "18446744073709551616", "-9223372036854775809", "0x10", "01", "+1", ".5", "1.", "[" * 50000 + "]" * 50000,
              "{" + '"a":{' * 3000 + "}" * 3001, "true false", "undefined", '"\\ud800"', '"\\u0000"']
WRONG_VALUES: List[Any] = [None, True, False, 0, -1, 2 ** 63, 2 ** 64, -(2 ** 63) - 1, 1.5, -0.0, "", "x", "NaN", [], {},
                           [None], {"": None}, [[[[]]]], "<chaos-w>", "\x1b[2J", "9" * 30, -1e308, 5e-324]


def _random_string_payload(rng: random.Random) -> str:
    parts = rng.sample(MARKUP_PAYLOADS, rng.randint(1, 3)) + rng.sample(ESCAPE_PAYLOADS, rng.randint(1, 3))
    rng.shuffle(parts)
    return "x" + "".join(parts)


def _load_json(path: str) -> Any:
    return json.loads(_read(path))


def _dump(path: str, doc: Any, token: Optional[str] = None) -> None:
    text = json.dumps(doc, indent=1, ensure_ascii=False)
    if token is not None:
        text = text.replace(TOKEN, token, 1)
    _write(path, text)


def _summary(folder: str) -> str:
    return os.path.join(folder, "summary.json")


def _sample(folder: str, arm: str = "event") -> str:
    return os.path.join(folder, "samples", arm + ".json")


_FREE_TEXT: List[Tuple[Any, ...]] = []


def free_text_paths() -> List[Tuple[Any, ...]]:
    """Paths of the good summary's strings that the schema leaves free (any text validates there)."""
    if not _FREE_TEXT:
        from wakelab.errors import EvidenceError
        from wakelab.evidence.load import validate_summary

        doc = _load_json(_summary(GOOD))
        for path in _paths(doc):
            value = _get(doc, path)
            if not isinstance(value, str):
                continue
            _set(doc, path, value + "x" + "".join(MARKUP_PAYLOADS + ESCAPE_PAYLOADS))  # longer than any payload
            try:
                validate_summary(doc)
                _FREE_TEXT.append(path)
            except EvidenceError:
                pass
            _set(doc, path, value)
    return list(_FREE_TEXT)


def _strings_payload(rng: random.Random, folder: str, target: str) -> str:
    """Markup and escapes in the note, the hostname and other free-text strings (``target``: which)."""
    doc = _load_json(_summary(folder))
    free = [p for p in free_text_paths() if _has(doc, p)]
    doc["note"] = _random_string_payload(rng)
    doc["machine"]["hostname"] = "host" + _random_string_payload(rng)
    if target == "reason":  # a skipped arm's reason
        arm = doc["arms"][1]
        arm.update(status="skipped", reason="skipped" + _random_string_payload(rng), latency=None, samples_file=None, components={})
        free = [p for p in free if p[:2] != ("arms", 1)]
    chosen = free if target == "everywhere" else rng.sample(free, min(len(free), rng.randint(1, 25)))
    for path in chosen:
        _set(doc, path, _get(doc, path) + _random_string_payload(rng))
    if target == "names":  # an arm's name too (the loader may refuse it; either is right)
        doc["arms"][0]["name"] = "event" + rng.choice(MARKUP_PAYLOADS + ESCAPE_PAYLOADS)
    if target == "anywhere":  # any string at all, enumerations and patterns too: mostly refused
        strings = [p for p in _paths(doc) if isinstance(_get(doc, p), str)]
        for path in rng.sample(strings, min(len(strings), rng.randint(1, 5))):
            _set(doc, path, _get(doc, path) + _random_string_payload(rng))
    _dump(_summary(folder), doc)
    return "strings in %s" % target


def _has(doc: Any, path: Tuple[Any, ...]) -> bool:
    try:
        _get(doc, path)
        return True
    except (KeyError, IndexError, TypeError):
        return False


def mutate(rng: random.Random, folder: str, outside: str) -> str:
    """Break the bundle in ``folder`` one random way; what was done, in a few words."""
    kind = rng.choice(MUTATIONS)
    return kind(rng, folder, outside)


def m_truncate(rng: random.Random, folder: str, outside: str) -> str:
    text = _read(_summary(folder)).encode("utf-8")
    cut = rng.randrange(0, len(text))
    _write(_summary(folder), text[:cut])
    return "summary.json cut at %d of %d bytes" % (cut, len(text))


def m_truncate_samples(rng: random.Random, folder: str, outside: str) -> str:
    arm = rng.choice(["event", "sigusr1-self", "signal-install"])
    data = _read_bytes(_sample(folder, arm))
    cut = rng.randrange(0, len(data))
    _write(_sample(folder, arm), data[:cut])
    return "samples/%s.json cut at %d" % (arm, cut)


def m_wrong_type(rng: random.Random, folder: str, outside: str) -> str:
    doc = _load_json(_summary(folder))
    path = rng.choice(list(_paths(doc)))
    value = rng.choice(WRONG_VALUES)
    _set(doc, path, value)
    _dump(_summary(folder), doc)
    return "summary %s = %r" % ("/".join(map(str, path)), value)


def m_wrong_type_samples(rng: random.Random, folder: str, outside: str) -> str:
    arm = rng.choice(["event", "sigusr1-self", "signal-install"])
    doc = _load_json(_sample(folder, arm))
    paths = list(_paths(doc))
    path = rng.choice(paths)
    value = rng.choice(WRONG_VALUES)
    _set(doc, path, value)
    _dump(_sample(folder, arm), doc)
    return "samples/%s %s = %r" % (arm, "/".join(map(str, path)), value)


def m_samples_length(rng: random.Random, folder: str, outside: str) -> str:
    doc = _load_json(_sample(folder))
    choice = rng.choice(["empty", "one", "short", "long", "huge-values", "zeros"])
    samples = doc["samples_ns"]
    doc["samples_ns"] = {"empty": [], "one": samples[:1], "short": samples[: len(samples) // 3],
                         "long": samples * 7, "huge-values": [2 ** 63 - 1] * len(samples), "zeros": [0] * len(samples)}[choice]
    _dump(_sample(folder), doc)
    return "samples/event.json samples %s" % choice


def m_delete(rng: random.Random, folder: str, outside: str) -> str:
    doc = _load_json(_summary(folder))
    path = rng.choice(list(_paths(doc)))
    parent = _get(doc, path[:-1])
    del parent[path[-1]]
    _dump(_summary(folder), doc)
    return "summary %s removed" % "/".join(map(str, path))


def m_raw_token(rng: random.Random, folder: str, outside: str) -> str:
    in_samples = rng.random() < 0.3
    target = _sample(folder, "event") if in_samples else _summary(folder)
    doc = _load_json(target)
    numbers = [p for p in _paths(doc) if isinstance(_get(doc, p), (int, float)) and not isinstance(_get(doc, p), bool)]
    path = rng.choice(numbers)
    token = rng.choice(RAW_TOKENS)
    _set(doc, path, "@@CHAOS-TOKEN@@")
    _dump(target, doc, token)
    return "%s %s = %s" % (os.path.basename(target), "/".join(map(str, path)), token[:20])


def m_bytes(rng: random.Random, folder: str, outside: str) -> str:
    target = rng.choice([_summary(folder), _sample(folder)])
    data = _read_bytes(target)
    how = rng.choice(["random", "non-utf8", "bom", "utf16", "nul", "empty", "whitespace", "overlong"])
    if how == "random":
        data = bytes(rng.randrange(256) for _ in range(rng.randint(1, 4096)))
    elif how == "non-utf8":
        at = rng.randrange(len(data))
        data = data[:at] + rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x80\x80"]) + data[at:]
    elif how == "bom":
        data = b"\xef\xbb\xbf" + data
    elif how == "utf16":
        data = data.decode("utf-8").encode("utf-16")
    elif how == "nul":
        at = rng.randrange(len(data))
        data = data[:at] + b"\0" + data[at:]
    elif how == "empty":
        data = b""
    elif how == "whitespace":
        data = b" \n\t" * 1000
    elif how == "overlong":
        data = data.replace(b'"', b"\xc0\xa2", 1)
    _write(target, data)
    return "%s: %s bytes" % (os.path.basename(target), how)


def m_special_file(rng: random.Random, folder: str, outside: str) -> str:
    target = rng.choice([_summary(folder), _sample(folder), _sample(folder, "signal-install"), os.path.join(folder, "samples")])
    how = rng.choice(["fifo", "/dev/zero", "/dev/urandom", "/dev/null", "dangling", "loop", "dir", "link-dir", "link-out",
                      "socket", "/proc/self/mem", "/dev/stdin", "/proc/self/fd/0"])
    name = os.path.relpath(target, folder)
    if how == "fifo":
        _replace(target, os.mkfifo)
    elif how.startswith("/"):
        _replace(target, lambda p: os.symlink(how, p))
    elif how == "dangling":
        _replace(target, lambda p: os.symlink(os.path.join(outside, "no-such-file"), p))
    elif how == "loop":
        _replace(target, lambda p: os.symlink(os.path.basename(p), p))
    elif how == "dir":
        _replace(target, os.mkdir)
    elif how == "link-dir":
        _replace(target, lambda p: os.symlink("/", p))
    elif how == "link-out":
        copy = os.path.join(outside, "copy-%d-%s" % (rng.randrange(10 ** 9), os.path.basename(target)))
        if os.path.isdir(_plain(target, folder_too=True)):
            shutil.copytree(target, copy, symlinks=True)
        else:
            shutil.copy(target, copy)
        _replace(target, lambda p: os.symlink(copy, p))
    elif how == "socket":
        import socket

        def bind(p: str) -> None:
            sock = socket.socket(socket.AF_UNIX)
            try:
                sock.bind(p)
            finally:
                sock.close()

        if len(target) < 100:
            _replace(target, bind)
        else:
            _replace(target, os.mkfifo)
    return "%s is %s" % (name, how)


def m_too_large(rng: random.Random, folder: str, outside: str) -> str:
    from wakelab.evidence import load

    target, cap = rng.choice([(_summary(folder), load.MAX_SUMMARY_BYTES), (_sample(folder), load.MAX_SAMPLES_BYTES)])
    with open(_plain(target), "r+b") as fh:
        fh.truncate(cap + rng.choice([1, 4096, 10 ** 6]))  # sparse: costs no disk
    return "%s past its cap" % os.path.basename(target)


def m_deep(rng: random.Random, folder: str, outside: str) -> str:
    depth = rng.choice([100, 1000, 5000, 100000])
    doc = _load_json(_summary(folder))
    doc[rng.choice(["note", "system", "info-x"])] = "@@CHAOS-TOKEN@@"
    _dump(_summary(folder), doc, rng.choice(["[" * depth + "]" * depth, '{"a":' * depth + "0" + "}" * depth]))
    return "nesting %d deep" % depth


def m_strings(rng: random.Random, folder: str, outside: str) -> str:
    return _strings_payload(rng, folder, rng.choice(["some", "some", "reason", "everywhere", "names", "anywhere"]))


def m_samples_strings(rng: random.Random, folder: str, outside: str) -> str:
    doc = _load_json(_sample(folder))
    strings = [p for p in _paths(doc) if isinstance(_get(doc, p), str)]
    for path in strings:
        if path != ("schema",):
            _set(doc, path, _get(doc, path) + _random_string_payload(rng))
    doc["chaos" + _random_string_payload(rng)] = _random_string_payload(rng)
    _dump(_sample(folder), doc)
    return "strings in samples/event.json"


def m_samples_file_path(rng: random.Random, folder: str, outside: str) -> str:
    doc = _load_json(_summary(folder))
    value = rng.choice(["../../../../etc/passwd", "/etc/passwd", "samples/../../x.json", "", "samples/", ".", "samples/event.json\0x",
                        "samples/nope.json", "samples/sigusr1-self.json", "samples/" + "a" * 300 + ".json", 7, None])
    doc["arms"][0]["samples_file"] = value
    _dump(_summary(folder), doc)
    return "samples_file = %r" % value


def m_grid(rng: random.Random, folder: str, outside: str, how: Optional[str] = None) -> str:
    """The folder becomes a grid's: a matrix.json, broken one way (``how``, else a random one) or carrying payloads."""
    os.unlink(_summary(folder))
    doc: Dict[str, Any] = {
        "schema": "wakelab.matrix", "schema_version": 1, "lab": {"id": "135-signal-vs-event-wakeup", "title": "Lab 135"},
        "started_utc": "2026-10-01T06:00:00Z", "dimensions": ["settle_us"], "complete": True,
        "cells": [{"label": "settle100us", "folder": "cells/settle100us", "dimensions": {"settle_us": 100}, "status": "done",
                   "complete": True, "interpreter": {"implementation": "CPython", "version": "3.11.7"}}],
        "arms": [{"name": "event", "rows": [{"cell": "settle100us", "status": "ok", "kind": "latency",
                                             "latency": {"n": 200, "lost": 0, "min_ns": 9000, "p50_ns": 10000.0}}]}],
    }
    path = os.path.join(folder, "matrix.json")
    how = how or rng.choice(["strings", "wrong-type", "token", "truncate", "fifo"])
    if how == "strings":
        doc["lab"]["title"] += _random_string_payload(rng)
        doc["cells"][0]["interpreter"]["implementation"] += _random_string_payload(rng)
        doc["arms"].append({"name": "x" + rng.choice(MARKUP_PAYLOADS) + rng.choice(ESCAPE_PAYLOADS),
                            "rows": [{"cell": "settle100us", "status": "skipped", "reason": _random_string_payload(rng)}]})
        _dump(path, doc)
    elif how == "wrong-type":
        p = rng.choice(list(_paths(doc)))
        _set(doc, p, rng.choice(WRONG_VALUES))
        _dump(path, doc)
    elif how == "token":
        _set(doc, ("arms", 0, "rows", 0, "latency", "p50_ns"), "@@CHAOS-TOKEN@@")
        _dump(path, doc, rng.choice(RAW_TOKENS))
    elif how == "truncate":
        text = json.dumps(doc)
        _write(path, text[: rng.randrange(len(text))])
    else:
        os.mkfifo(path)
    return "grid matrix.json: %s" % how


def m_empty(rng: random.Random, folder: str, outside: str) -> str:
    how = rng.choice(["no-summary", "no-samples", "empty-samples-dir"])
    if how == "no-summary":
        os.unlink(_summary(folder))
    elif how == "no-samples":
        _replace(os.path.join(folder, "samples"), lambda p: None)
    else:
        samples = _plain(os.path.join(folder, "samples"), folder_too=True)
        for name in os.listdir(samples):
            if not os.path.isdir(os.path.join(samples, name)) or os.path.islink(os.path.join(samples, name)):
                os.unlink(os.path.join(samples, name))
    return how


MUTATIONS: List[Callable[[random.Random, str, str], str]] = [
    m_truncate, m_truncate_samples, m_wrong_type, m_wrong_type, m_wrong_type_samples, m_samples_length, m_delete, m_raw_token,
    m_raw_token, m_bytes, m_special_file, m_special_file, m_too_large, m_deep, m_strings, m_strings, m_strings,
    m_samples_strings, m_samples_file_path, m_grid, m_empty,
]


# One bundle of each kind, built the same way every time: the bench runs them first, the test
# suite runs them all (tests/test_chaos.py).  name -> builder(folder, outside).
def _fixed(mutation: Callable[[random.Random, str, str], str], seed: int) -> Callable[[str, str], str]:
    return lambda folder, outside: mutation(random.Random(seed), folder, outside)


def _set_raw(target: Callable[[str], str], path: Tuple[Any, ...], token: str) -> Callable[[str, str], str]:
    def build(folder: str, outside: str) -> str:
        doc = _load_json(target(folder))
        _set(doc, path, "@@CHAOS-TOKEN@@")
        _dump(target(folder), doc, token)
        return "%s = %s" % ("/".join(map(str, path)), token[:20])

    return build


def _link(target: Callable[[str], str], to: str) -> Callable[[str, str], str]:
    def build(folder: str, outside: str) -> str:
        where = to
        if to == "outside":
            where = os.path.join(outside, "copy")
            if os.path.isdir(_plain(target(folder), folder_too=True)):
                shutil.copytree(target(folder), where, symlinks=True)
            else:
                shutil.copy(target(folder), where)
        _replace(target(folder), lambda p: os.symlink(where, p))
        return "link to %s" % to

    return build


def _fifo(target: Callable[[str], str]) -> Callable[[str, str], str]:
    def build(folder: str, outside: str) -> str:
        _replace(target(folder), os.mkfifo)
        return "FIFO"

    return build


def _cut(target: Callable[[str], str], fraction: float) -> Callable[[str, str], str]:
    def build(folder: str, outside: str) -> str:
        data = _read_bytes(target(folder))
        _write(target(folder), data[: int(len(data) * fraction)])
        return "cut at %d%%" % (100 * fraction)

    return build


def _strings(target: str, seed: int) -> Callable[[str, str], str]:
    return lambda folder, outside: _strings_payload(random.Random(seed), folder, target)


def _non_utf8(path: str) -> str:
    _write(path, _read_bytes(path).replace(b'"note"', b'"n\xffote"', 1))
    return "a byte that is not UTF-8"


def _samples_dir(folder: str) -> str:
    return os.path.join(folder, "samples")


def _rate_sample(folder: str) -> str:
    return _sample(folder, "signal-install")


FIXED_CORPUS: Dict[str, Callable[[str, str], str]] = {
    "summary-truncated": _cut(_summary, 0.5),
    "summary-empty": _cut(_summary, 0.0),
    "summary-wrong-type": _set_raw(_summary, ("arms", 0, "latency"), '"fast"'),
    "summary-1e400": _set_raw(_summary, ("arms", 0, "latency", "p50_ns"), "1e400"),
    "summary-NaN": _set_raw(_summary, ("wall_s",), "NaN"),
    "summary-huge-int": _set_raw(_summary, ("arms", 0, "latency", "n"), "9" * 5000),
    "summary-deep": _set_raw(_summary, ("note",), "[" * 100000 + "]" * 100000),
    "summary-fifo": _fifo(_summary),
    "summary-dev-zero": _link(_summary, "/dev/zero"),
    "summary-link-out": _link(_summary, "outside"),
    "summary-loop": lambda folder, outside: _loop(_summary(folder)),
    "summary-non-utf8": lambda folder, outside: _non_utf8(_summary(folder)),
    "samples-truncated": _cut(_sample, 0.6),
    "samples-1e400": _set_raw(_sample, ("samples_ns", 3), "1e400"),
    "samples-wrong-type": _set_raw(_sample, ("samples_ns",), '{"a": 1}'),
    "samples-fifo": _fifo(_sample),
    "samples-dev-zero": _link(_sample, "/dev/zero"),
    "samples-dir-link-out": _link(_samples_dir, "outside"),
    "rate-samples-fifo": _fifo(_rate_sample),
    "samples-short": _fixed(m_samples_length, 3),
    "samples-file-path-out": _fixed(m_samples_file_path, 1),
    "strings-everywhere": _strings("everywhere", 1),
    "strings-reason": _strings("reason", 2),
    "strings-names": _strings("names", 3),
    "strings-some": _strings("some", 4),
    "samples-strings": _fixed(m_samples_strings, 5),
    "grid-strings": lambda folder, outside: _grid(folder, "strings", random.Random(6)),
    "grid-fifo": lambda folder, outside: _grid(folder, "fifo", random.Random(7)),
}


def _grid(folder: str, how: str, rng: random.Random) -> str:
    return m_grid(rng, folder, "", how)


def _loop(path: str) -> str:
    _replace(path, lambda p: os.symlink(os.path.basename(p), p))
    return "a link to itself"


def build_fixed(name: str, parent: str) -> Tuple[str, str]:
    """(bad bundle, what was done): the good bundle broken as FIXED_CORPUS[name] says, under ``parent``."""
    case = os.path.join(parent, "fixed-" + name)
    bad = os.path.join(case, "bad")
    outside = os.path.join(case, "outside")
    os.makedirs(outside)
    shutil.copytree(GOOD, bad, ignore=shutil.ignore_patterns("run_lab.py"))
    return bad, "%s: %s" % (name, FIXED_CORPUS[name](bad, outside))


@dataclasses.dataclass(frozen=True)
class Reader:
    """A reading command: its argv (BAD, GOOD and OUT filled in), what it writes, how to check its output."""

    args: Tuple[str, ...]
    writes: Tuple[str, ...] = ()  # paths under OUT
    html_stdout: bool = False
    html_file: Optional[str] = None
    stdout_check: str = "terminal"  # terminal | markdown | none


READERS: List[Reader] = [
    Reader(("show", "BAD")),
    Reader(("show", "BAD/summary.json")),
    Reader(("compare", "GOOD", "BAD")),
    Reader(("compare", "BAD", "GOOD")),
    Reader(("compare", "--json", "--resamples", "200", "GOOD", "BAD")),
    Reader(("report", "BAD", "-q", "-o", "OUT/report.html"), writes=("report.html",), html_file="report.html"),
    Reader(("report", "BAD", "-o", "-"), html_stdout=True),
    Reader(("report", "GOOD", "BAD", "-q", "-o", "OUT/two.html"), writes=("two.html",), html_file="two.html"),
    Reader(("export", "-f", "csv", "BAD")),
    Reader(("export", "-f", "markdown", "BAD"), stdout_check="markdown"),
    Reader(("export", "-f", "json", "BAD")),
    Reader(("export", "-f", "csv", "BAD", "-o", "OUT/e.csv"), writes=("e.csv",)),
    Reader(("export", "-f", "json", "BAD", "-o", "OUT/e.json"), writes=("e.json",)),
    Reader(("export", "-f", "pyperf", "BAD", "-o", "OUT/pyperf"), writes=("pyperf",)),
    Reader(("history", "add", "--history", "OUT/h.sqlite3", "BAD"), writes=("h.sqlite3",)),
]
# After a bundle was added to a history, these read it back from there.
HISTORY_READERS = [
    Reader(("history", "--history", "OUT/h.sqlite3")),
    Reader(("history", "--history", "OUT/h.sqlite3", "--arm", "event")),
    Reader(("history", "--history", "OUT/h.sqlite3", "--json")),
]
# An HTML page on stdout: the page's own scripts hold tabs, harmless on a terminal.
HTML_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
# Markdown is not a terminal format: it keeps bidi controls as text, the C0/C1 controls go.
CONTROLS = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f]")


def reader_argv(reader: Reader, bad: str, good: str, out: str) -> List[str]:
    def fill(arg: str) -> str:
        for key, value in (("BAD", bad), ("GOOD", good), ("OUT", out)):
            if arg == key or arg.startswith(key + "/"):
                return value + arg[len(key):]
        return arg

    return [fill(a) for a in reader.args]


def check_reader(reader: Reader, result: Result, out: str, what: str) -> Outcome:
    outcome = Outcome("hostile-evidence", "%s [%s]" % (" ".join(reader.args), what))
    check_common(outcome, result, allowed=(0, 2))
    written = sorted(n for n in os.listdir(out) if not n.startswith(".")) if os.path.isdir(out) else []
    if result.returncode == 2:
        check_refusal_line(outcome, result)
        if written:
            outcome.fail("writes", "refused, yet wrote %s" % written)
    if result.returncode == 0:
        text = text_of(result.stdout)
        unsafe = CONTROLS if reader.stdout_check == "markdown" else HTML_UNSAFE if reader.html_stdout else TERMINAL_UNSAFE
        found = unsafe.search(text)
        if found:
            outcome.fail("raw_controls", "stdout holds %r: %r" % (found.group(), text[max(0, found.start() - 60):found.end() + 20]))
        pages = [text] if reader.html_stdout else []
        if reader.html_file and os.path.isfile(os.path.join(out, reader.html_file)):
            with open(os.path.join(out, reader.html_file), encoding="utf-8", errors="surrogateescape") as fh:
                pages.append(fh.read())
        for page in pages:
            markup = UNESCAPED_MARKUP.search(page)
            if markup:
                outcome.fail("markup", "HTML holds %r" % page[max(0, markup.start() - 80):markup.end() + 40])
    return outcome


def build_bundle(rng: random.Random, parent: str, index: int) -> Tuple[str, str, str]:
    """(bad bundle, a folder outside it, what was done): a copy of the good bundle broken 1-3 ways."""
    case = os.path.join(parent, "bundle-%d" % index)
    bad = os.path.join(case, "bad")
    outside = os.path.join(case, "outside")
    os.makedirs(outside)
    shutil.copytree(GOOD, bad, ignore=shutil.ignore_patterns("run_lab.py"))
    notes = []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        try:
            notes.append(mutate(rng, bad, outside))
        except (OSError, ValueError, KeyError, IndexError, TypeError, RecursionError, AttributeError):
            break  # an earlier mutation left nothing this one can work on: the bundle is broken enough
    return bad, outside, "; ".join(notes)


def read_bundles(bundles: Sequence[Tuple[str, str]], good: str, pool: ForkPool, env: Dict[str, str],
                 report: Callable[[Outcome], None], readers: Sequence[Reader] = READERS) -> int:
    """Every reader on every (bad bundle, what was done), then the history readers where ``history add`` took it;
    the number of invocations."""
    cases, checks = [], []
    for bad, what in bundles:
        for i, reader in enumerate(readers):
            out = os.path.join(os.path.dirname(bad), "out-%d" % i)
            os.makedirs(out)
            cases.append((reader_argv(reader, bad, good, out), os.path.dirname(bad), env))
            checks.append((reader, out, what))
    follow, follow_checks = [], []
    for (reader, out, what), result in zip(checks, pool.run(cases)):
        report(check_reader(reader, result, out, what))
        if reader.args[:2] == ("history", "add") and result.returncode == 0:
            for hist in HISTORY_READERS:
                follow.append((reader_argv(hist, "", "", out), os.path.dirname(out), env))
                follow_checks.append((hist, out, what))
    for (reader, out, what), result in zip(follow_checks, pool.run(follow)):
        report(check_reader(reader, result, out, what))
    return len(cases) + len(follow)


def prepare_good(scratch: str) -> str:
    good = os.path.join(scratch, "good")
    if not os.path.isdir(good):
        shutil.copytree(GOOD, good, ignore=shutil.ignore_patterns("run_lab.py"))
    return good


def run_hostile_evidence(count: int, rng: random.Random, pool: ForkPool, scratch: str, report: Callable[[Outcome], None]) -> None:
    """At least ``count`` reading-command invocations: the fixed corpus first, then random bundles."""
    good = prepare_good(scratch)
    env = make_sandbox(scratch, "evidence-env").env
    fixed = sorted(FIXED_CORPUS)
    done = index = 0
    while done < count:
        bundles = []
        for _ in range(4):
            if fixed:
                bundles.append(build_fixed(fixed.pop(0), scratch))
            else:
                bad, _, what = build_bundle(rng, scratch, index)
                index += 1
                bundles.append((bad, what))
        done += read_bundles(bundles, good, pool, env, report)
        for bad, _ in bundles:
            shutil.rmtree(os.path.dirname(bad), ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# Processes: /proc, sessions, descendants


def proc_table() -> Dict[int, Tuple[int, int, str]]:
    """pid -> (ppid, session id, state) of every process."""
    table = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open("/proc/%s/stat" % name) as fh:
                    fields = fh.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            table[int(name)] = (int(fields[1]), int(fields[3]), fields[0])
    return table


def descendants(root: int, table: Optional[Dict[int, Tuple[int, int, str]]] = None) -> Set[int]:
    table = proc_table() if table is None else table
    children: Dict[int, List[int]] = {}
    for pid, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = set(), [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def alive(pids: Set[int], session: Optional[int] = None) -> Set[int]:
    """Those of ``pids`` (and, given ``session``, every process of it) that run: zombies are gone."""
    table = proc_table()
    found = {pid for pid in pids if pid in table and table[pid][2] != "Z"}
    if session is not None:
        found |= {pid for pid, (_, sid, state) in table.items() if sid == session and state != "Z"}
    return found


def kill_all(pids: Set[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def cmdline(pid: int) -> str:
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
    except OSError:
        return "?"


# ---------------------------------------------------------------------------------------------
# Bundles as a run leaves them


def check_bundle(outcome: Outcome, folder: str, expect_interrupted: Optional[bool] = None,
                 killed: bool = False) -> Optional[Dict[str, Any]]:
    """The bundle in ``folder`` loads with wakelab's loader and is consistent; its summary (None: no bundle).

    ``killed``: by SIGKILL, which no process can clean up after: its lock file may stay (the kernel
    dropped the lock itself: the folder must not be locked), and so may a temporary file of an
    atomic write cut between its creation and its rename.
    """
    from wakelab.errors import EvidenceError
    from wakelab.evidence import bundle
    from wakelab.evidence.load import load_samples, load_summary

    if not os.path.isdir(folder) or not os.path.lexists(_summary(folder)):
        return None
    try:
        summary = load_summary(folder)
    except EvidenceError as exc:
        outcome.fail("invalid_bundles", "load_summary: %s" % exc)
        return None
    for entry in summary["arms"]:
        if entry["status"] == "ok" and entry.get("samples_file"):
            try:
                doc = load_samples(folder, entry)
            except EvidenceError as exc:
                outcome.fail("invalid_bundles", "%s: %s" % (entry["name"], exc))
                continue
            if entry["kind"] == "latency" and entry["latency"]["n"] != len(doc["samples_ns"]):
                outcome.fail("invalid_bundles", "mixed bundle: %s n=%s, samples file holds %d"
                             % (entry["name"], entry["latency"]["n"], len(doc["samples_ns"])))
    leftovers = [n for n in os.listdir(folder) if n.endswith(".tmp")]
    if os.path.isdir(os.path.join(folder, "samples")):
        leftovers += [n for n in os.listdir(os.path.join(folder, "samples")) if n.endswith(".tmp")]
        named = {os.path.basename(e["samples_file"]) for e in summary["arms"] if e.get("samples_file")}
        stale = sorted(set(os.listdir(os.path.join(folder, "samples"))) - named - set(leftovers))
        if stale and not killed:  # killed between an arm's samples and the summary naming them
            outcome.fail("invalid_bundles", "samples files no arm names: %s" % stale[:5])
    if leftovers and not killed:
        outcome.fail("invalid_bundles", "temporary files left: %s" % leftovers[:5])
    if os.path.lexists(os.path.join(folder, bundle.LOCK_FILE)):
        if not killed:
            outcome.fail("invalid_bundles", "the lock file was left behind")
        try:
            bundle.FolderLock(folder).acquire().release()
        except bundle.FolderBusy:
            outcome.fail("invalid_bundles", "the folder is still locked after its run was killed")
    if expect_interrupted is not None and summary.get("complete") is not False:
        outcome.fail("invalid_bundles", "an interrupted run's bundle says complete: %r" % summary.get("complete"))
    return summary


def history_runs(db: str) -> List[Tuple[Any, ...]]:
    if not os.path.exists(db):
        return []
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT run_uuid, folder, complete FROM runs ORDER BY id").fetchall()
    finally:
        conn.close()


# ---------------------------------------------------------------------------------------------
# Signals at random points


SIGNAL_STATUS: Dict[int, int] = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGHUP: 129, signal.SIGKILL: -9}


def signal_case(signum: int, delay_s: float, scratch: str, index: int) -> Outcome:
    """``run --arms event --n 100000``, ``signum`` after ``delay_s``; everything gone, the bundle valid."""
    name = signal.Signals(signum).name.lower()
    outcome = Outcome(name, "%s after %.2f s" % (name.upper(), delay_s))
    box = make_sandbox(scratch, "%s-%d" % (name, index))
    out = os.path.join(box.root, "run")
    argv = [PYTHON, "-m", "wakelab", "run", "--arms", "event", "--n", "100000", "-o", out, "-q"]
    proc = subprocess.Popen(argv,
                            cwd=box.cwd, env=box.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    seen: Set[int] = set()
    try:
        deadline = time.monotonic() + delay_s
        while time.monotonic() < deadline and proc.poll() is None:
            seen |= descendants(proc.pid)
            time.sleep(0.01)
        seen |= descendants(proc.pid)
        outcome.case += " (%d processes under it)" % len(seen)
        struck = time.monotonic()
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signum)
        try:
            stdout, stderr = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            outcome.fail("hangs", "still running 30 s after %s" % name.upper())
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            stdout, stderr = proc.communicate()
        ended = time.monotonic()
        # Everything under it must be gone within 2 s of its own end (of the kill, for SIGKILL).
        since = struck if signum == signal.SIGKILL else ended
        while alive(seen, session=proc.pid) and time.monotonic() < since + GONE_WITHIN_S:
            time.sleep(0.01)
        left = alive(seen, session=proc.pid)
        if left:
            outcome.fail("leftovers", "%d still running %.0f s on: %s" % (len(left), GONE_WITHIN_S, [cmdline(p)[:80] for p in left]))
            kill_all(left)
        result = Result(argv, proc.returncode, stdout, stderr, False, ended - struck)
        outcome.case += ", exit %d" % proc.returncode
        # Struck before wakelab's handlers are in place, a signal does what it does by default.
        allowed = (SIGNAL_STATUS[signum], -signum, 0) if signum != signal.SIGINT else (130, 0)
        check_common(outcome, result, allowed)
        summary = check_bundle(outcome, out, expect_interrupted=proc.returncode != 0, killed=proc.returncode == -signal.SIGKILL)
        outcome.case += ", no bundle" if summary is None else ", bundle %s" % ",".join(
            "%s:%s" % (a["name"], a["status"]) for a in summary["arms"])
        if summary is not None and signum != signal.SIGKILL and proc.returncode != SIGNAL_STATUS[signum]:
            # A bundle is written only once wakelab's handlers are in place: the signal must end the run cleanly.
            outcome.fail("bad_exits", "a bundle was begun, yet exit %d, not %d" % (proc.returncode, SIGNAL_STATUS[signum]))
        if summary is not None and signum != signal.SIGKILL and proc.returncode == SIGNAL_STATUS[signum]:
            if summary.get("interrupted") is not True:
                outcome.fail("invalid_bundles", "exit %d but interrupted: %r" % (proc.returncode, summary.get("interrupted")))
            if proc.returncode > 0:
                recorded = history_runs(box.history)
                if summary.get("run_id") not in [r[0] for r in recorded]:
                    outcome.fail("invalid_bundles", "the interrupted run is not in the history")
    finally:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        kill_all(alive(seen))
        shutil.rmtree(box.root, ignore_errors=True)
    return outcome


def signal_delay(rng: random.Random) -> float:
    """A random point from start-up (imports, the lock, the first write) into measuring."""
    return rng.choice([rng.uniform(0.0, 0.4), rng.uniform(0.3, 1.5), rng.uniform(1.0, 4.0)])


# ---------------------------------------------------------------------------------------------
# ENOSPC on a small tmpfs


@contextlib.contextmanager
def small_tmpfs(options: str) -> Iterator[Optional[str]]:
    """A tmpfs mounted with ``options`` (None when this process cannot mount one)."""
    mount_point = tempfile.mkdtemp(prefix="wakelab-chaos-tmpfs-")
    mounted = False
    try:
        if os.geteuid() == 0 and shutil.which("mount"):
            done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", mount_point], capture_output=True)
            mounted = done.returncode == 0
        yield mount_point if mounted else None
    finally:
        if mounted:
            subprocess.run(["umount", "-l", mount_point], capture_output=True)
        with contextlib.suppress(OSError):
            os.rmdir(mount_point)


def can_mount_tmpfs() -> Optional[str]:
    """None if a tmpfs can be mounted here, else why not."""
    if os.geteuid() != 0:
        return "mounting a tmpfs needs root"
    if not shutil.which("mount"):
        return "no mount command"
    with small_tmpfs("size=64k") as mnt:
        return None if mnt else "mount -t tmpfs failed here"


CATALOGUE_RUN = ["run", "--lab", "catalogue", "-n", "30", "--warmup", "2", "--install-n", "200", "--rounds", "2",
                 "--workers", "1", "--settle-us", "200"]


def enospc_case(options: str, scratch: str, index: int) -> Outcome:
    """A quick catalogue run into a tmpfs mounted with ``options``: it fills at some arm."""
    outcome = Outcome("enospc", "catalogue run on tmpfs %s" % options)
    box = make_sandbox(scratch, "enospc-%d" % index)
    try:
        with small_tmpfs(options) as mnt:
            if mnt is None:
                outcome.skipped = "cannot mount a tmpfs"
                return outcome
            out = os.path.join(mnt, "run")
            result = run_subprocess(CATALOGUE_RUN + ["-o", out], box.cwd, box.env, 600)
            check_common(outcome, result, allowed=(0, 1, 2))
            err = text_of(result.stderr)
            summary = check_bundle(outcome, out)
            recorded = history_runs(box.history)
            if result.returncode == 2:
                # Progress lines come first (no -q): the last line says why, once.
                lines = err.splitlines()
                if not lines or not lines[-1].startswith("wakelab: error: ") or "No space left on device" not in lines[-1]:
                    outcome.fail("bad_exits", "exit 2, but stderr ends %r" % lines[-1:])
                # The bundle begun before the first arm (every arm pending) may stay, valid (checked above).
                if summary is not None and any(a["status"] == "ok" for a in summary["arms"]):
                    outcome.fail("invalid_bundles", "'nothing was measured', yet the bundle holds measured arms")
                outcome.case += ": nothing measured%s" % ("" if summary is None else ", the begun bundle kept")
            elif result.returncode == 1:
                if "No space left on device" not in err:
                    outcome.fail("bad_exits", "exit 1 without the disk full line: %r" % err[-300:])
                if summary is None:
                    outcome.fail("invalid_bundles", "no bundle left")
                else:
                    ok = [a["name"] for a in summary["arms"] if a["status"] == "ok"]
                    outcome.case += ": %d arms kept" % len(ok)
                    if summary.get("complete") is not False:
                        outcome.fail("invalid_bundles", "a bundle cut short by ENOSPC says complete: %r" % summary.get("complete"))
                    if summary.get("run_id") not in [r[0] for r in recorded]:
                        outcome.fail("invalid_bundles", "the run is not in the history")
            else:
                outcome.case += ": the disk did not fill"
                if summary is None or summary.get("complete") is not True:
                    outcome.fail("invalid_bundles", "exit 0 but no complete bundle")
    finally:
        shutil.rmtree(box.root, ignore_errors=True)
    return outcome


def enospc_export_case(rng: random.Random, scratch: str, index: int, source: str) -> Outcome:
    """An export or report onto a full (or nearly full) disk: all files or none."""
    fmt = rng.choice(["pyperf", "csv", "json", "markdown", "report"])
    leave = rng.choice([0, 2048, 6000, 20000])
    outcome = Outcome("enospc", "%s onto a tmpfs with %d bytes free" % (fmt, leave))
    box = make_sandbox(scratch, "enospc-export-%d" % index)
    try:
        with small_tmpfs("size=64k") as mnt:
            if mnt is None:
                outcome.skipped = "cannot mount a tmpfs"
                return outcome
            fill(mnt, leave)
            before = sorted(os.listdir(mnt))
            dest = os.path.join(mnt, "dest")
            argv = ["report", source, "-q", "-o", dest] if fmt == "report" else ["export", "-f", fmt, source, "-o", dest]
            result = run_subprocess(argv, box.cwd, box.env, 120)
            outcome.case += ": exit %d" % result.returncode
            check_common(outcome, result, allowed=(0, 2))
            if result.returncode == 2:
                check_refusal_line(outcome, result)
                if sorted(os.listdir(mnt)) != before:
                    outcome.fail("writes", "refused, yet left %s" % sorted(set(os.listdir(mnt)) - set(before)))
    finally:
        shutil.rmtree(box.root, ignore_errors=True)
    return outcome


def fill(folder: str, leave: int = 0) -> None:
    """Fill the file system of ``folder``, leaving about ``leave`` bytes."""
    st = os.statvfs(folder)
    room = st.f_bavail * st.f_frsize - leave
    with open(os.path.join(folder, "filler"), "wb", buffering=0) as fh:
        chunk = b"\0" * 4096
        while room > 0 or leave == 0:
            try:
                written = fh.write(chunk[: max(1, min(len(chunk), room))] if leave else chunk)
            except OSError:
                return
            room -= written or 0


# ---------------------------------------------------------------------------------------------
# Two runs into one folder


def concurrent_case(delay_s: float, scratch: str, index: int, n: int = 300, runs: int = 2) -> Outcome:
    """``runs`` runs into one folder, each ``delay_s`` after the one before: one wins whole, the
    others are refused (or start after it ended); one history row per run that exited 0."""
    outcome = Outcome("concurrent", "%d runs, each %.2f s after the one before" % (runs, delay_s))
    box = make_sandbox(scratch, "concurrent-%d" % index)
    out = os.path.join(box.root, "same")
    procs: List["subprocess.Popen[bytes]"] = []
    spans: List[Tuple[float, float]] = []
    try:
        # Each run its own n: a bundle mixed from two runs shows as an n its samples file does not hold.
        argvs = [[PYTHON, "-m", "wakelab", "run", "--arms", "event", "-n", str(n + 37 * i), "--workers", "1", "-q", "-o", out]
                 for i in range(runs)]
        starts = []
        for i, args in enumerate(argvs):
            if i:
                time.sleep(delay_s)
            starts.append(time.monotonic())
            procs.append(subprocess.Popen(args, cwd=box.cwd, env=box.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                          stdin=subprocess.DEVNULL))
        results = []
        for p, args, start in zip(procs, argvs, starts):
            try:
                o, e = p.communicate(timeout=180)
                results.append(Result(args, p.returncode, o, e, False, 0.0))
            except subprocess.TimeoutExpired:
                p.kill()
                o, e = p.communicate()
                results.append(Result(args, p.returncode, o, e, True, 0.0))
            spans.append((start, time.monotonic()))
        # Runs that both exited 0 must have written one after the other; a second that started more
        # than a start-up's time before the first ended wrote beside it.
        winners = [span for span, r in zip(spans, results) if r.returncode == 0]
        for a, b in zip(winners, winners[1:]):
            if b[0] + 1.0 < a[1] - 1.0:
                outcome.fail("invalid_bundles", "two runs wrote the folder at once (both exit 0, %.1f s overlap)" % (a[1] - b[0]))
        for r in results:
            check_common(outcome, r, allowed=(0, 2))
            if r.returncode == 2:
                check_refusal_line(outcome, r)
                if "another wakelab run is writing there" not in text_of(r.stderr):
                    outcome.fail("bad_exits", "refused for another reason: %r" % text_of(r.stderr))
        codes = sorted(r.returncode for r in results)
        outcome.case += ": exits %s" % codes
        if 0 not in codes or set(codes) - {0, 2}:
            outcome.fail("bad_exits", "exits %s (one must win, the others be refused)" % codes)
        summary = check_bundle(outcome, out)
        if summary is None:
            outcome.fail("invalid_bundles", "no bundle")
        elif summary.get("complete") is not True:
            outcome.fail("invalid_bundles", "the winner's bundle is not complete")
        rows = history_runs(box.history)
        if len(rows) != codes.count(0):
            outcome.fail("invalid_bundles", "lost history rows: %d runs exited 0, %d rows" % (codes.count(0), len(rows)))
        elif summary is not None and rows and rows[-1][0] != summary.get("run_id"):
            outcome.fail("invalid_bundles", "the bundle is not the last recorded run's")
        if len({r[0] for r in rows}) != len(rows):
            outcome.fail("invalid_bundles", "history rows share a run id")
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        shutil.rmtree(box.root, ignore_errors=True)
    return outcome


# ---------------------------------------------------------------------------------------------
# The table


class Tally:
    def __init__(self, verbose: bool, every: bool = False) -> None:
        self.every = every
        self.rows: Dict[str, Dict[str, int]] = {}
        self.failures: List[Outcome] = []
        self.skips: Dict[str, str] = {}
        self.times: Dict[str, List[float]] = {}
        self.verbose = verbose

    def __call__(self, outcome: Outcome) -> None:
        row = self.rows.setdefault(outcome.category, {"cases": 0, "skipped": 0, **{c: 0 for c in COLUMNS}})
        if outcome.skipped:
            row["skipped"] += 1
            self.skips[outcome.category] = outcome.skipped
            return
        row["cases"] += 1
        times = self.times.setdefault(outcome.category, [0.0, 0.0])
        times[0], times[1] = max(times[0], outcome.wall_s), max(times[1], outcome.cpu_s)
        for column in outcome.failures:
            row[column] += 1
        if self.every:
            print("%s %s: %s" % ("FAIL" if outcome.failures else "ok  ", outcome.category, outcome.case), file=sys.stderr, flush=True)
        if outcome.failures:
            self.failures.append(outcome)
            if self.verbose:
                print("FAIL %s: %s: %s" % (outcome.category, outcome.case, outcome.failures), file=sys.stderr, flush=True)

    def table(self) -> str:
        header = ("category", "cases") + COLUMNS
        lines: List[Tuple[str, ...]] = [header]
        for category, row in self.rows.items():
            lines.append((category, str(row["cases"])) + tuple(str(row[c]) for c in COLUMNS))
        widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
        out = ["  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(line, widths)))
               for line in lines]
        for category, (wall, cpu) in self.times.items():
            if wall:
                out.append("%s: longest case %.1f s wall%s" % (category, wall, ", %.1f s CPU" % cpu if cpu else ""))
        for category, why in self.skips.items():
            out.append("%s: %d skipped (%s)" % (category, self.rows[category]["skipped"], why))
        return "\n".join(out)


DEFAULTS = {"cli": 600, "evidence": 1800, "sigint": 30, "sigterm": 10, "sighup": 10, "sigkill": 10, "enospc": 20,
            "enospc_export": 10, "concurrent": 10}


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="Default counts meet issue 14's minimums. Exit 1 if any case failed.")
    parser.add_argument("--seed", type=int, default=14, help="random seed (default 14); the same seed gives the same cases")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every count (0.1: a quick look)")
    for key, value in DEFAULTS.items():
        parser.add_argument("--" + key.replace("_", "-"), type=int, default=None, metavar="N",
                            help="%s cases (default %d)" % (key.replace("_", " "), value))
    parser.add_argument("--jobs", type=int, default=2, help="forked cases at once (default 2)")
    parser.add_argument("--only", default=None, help="comma-separated categories to run (cli,evidence,signals,enospc,concurrent)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no line per failure as it happens")
    parser.add_argument("-v", "--verbose", action="store_true", help="a line per case on stderr")
    args = parser.parse_args(argv)
    counts = {k: (getattr(args, k) if getattr(args, k) is not None else max(1, round(v * args.scale))) for k, v in DEFAULTS.items()}
    only = set(args.only.split(",")) if args.only else {"cli", "evidence", "signals", "enospc", "concurrent"}
    rng = random.Random(args.seed)
    tally = Tally(verbose=not args.quiet, every=args.verbose)
    started = time.monotonic()
    scratch = tempfile.mkdtemp(prefix="wakelab-chaos-")
    try:
        preload()
        pool = ForkPool(args.jobs, os.path.join(scratch, "io"))
        os.makedirs(pool.scratch)

        def phase(name: str, run: Callable[[], None]) -> None:
            t0 = time.monotonic()
            run()
            print("chaos: %s done in %.0f s" % (name, time.monotonic() - t0), file=sys.stderr, flush=True)

        if "cli" in only:
            phase("bad-cli", lambda: run_bad_cli(counts["cli"], random.Random(rng.random()), pool, scratch, tally))
        if "evidence" in only:
            phase("hostile-evidence", lambda: run_hostile_evidence(counts["evidence"], random.Random(rng.random()), pool, scratch, tally))
        if "signals" in only:
            def signals() -> None:
                srng = random.Random(rng.random())
                order = [s for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGKILL)
                         for _ in range(counts[signal.Signals(s).name.lower()])]
                srng.shuffle(order)
                for i, signum in enumerate(order):
                    tally(signal_case(signum, signal_delay(srng), scratch, i))
            phase("signals", signals)
        if "enospc" in only:
            def enospc() -> None:
                erng = random.Random(rng.random())
                why = can_mount_tmpfs()
                if why:
                    tally(Outcome("enospc", "all", skipped=why))
                    return
                for i in range(counts["enospc"]):
                    # The full catalogue bundle is ~300 KB: sizes from none to most of it, and a few
                    # inode-starved ones (ENOSPC on creating a file, not on writing it).
                    if erng.random() < 0.2:
                        options = "size=2m,nr_inodes=%d" % erng.randint(3, 45)
                    else:
                        options = "size=%dk" % (4 * erng.randint(1, 70))
                    tally(enospc_case(options, scratch, i))
                for i in range(counts["enospc_export"]):
                    tally(enospc_export_case(erng, scratch, i, GOOD))
            phase("enospc", enospc)
        if "concurrent" in only:
            def concurrent() -> None:
                crng = random.Random(rng.random())
                for i in range(counts["concurrent"]):
                    delay = crng.choice([0.0, crng.uniform(0.0, 0.4), crng.uniform(0.2, 1.0)])
                    tally(concurrent_case(delay, scratch, i, runs=2 if i % 3 else 3))
            phase("concurrent", concurrent)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print("wakelab chaos suite, seed %d, %.0f s" % (args.seed, time.monotonic() - started))
    print(tally.table())
    if tally.failures:
        print("\n%d failing cases:" % len(tally.failures))
        for outcome in tally.failures[:60]:
            print("- %s: %s" % (outcome.category, outcome.case))
            for column, note in outcome.failures.items():
                print("    %s: %s" % (column, note))
    print("target: every count but cases 0: %s" % ("met" if not tally.failures else "MISSED"))
    return 1 if tally.failures else 0


if __name__ == "__main__":
    sys.exit(main())
