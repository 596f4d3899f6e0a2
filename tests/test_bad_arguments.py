"""Bad arguments through the real command line: one exact line on stderr, exit 2, nothing written.

Arguments go in as raw bytes (``\\xff`` is not UTF-8; Python hands it over as a
lone surrogate), the way a shell passes ``$'\\xff'``.  Every case runs in an
empty folder with a history database path that does not exist yet, and
checks afterwards that neither the output folder, nor the default runs
folder, nor the database was created.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import threading
from typing import Dict, List, Sequence, Union

import pytest

from wakelab.progress import make_progress

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
Arg = Union[str, bytes]


def wakelab(args: Sequence[Arg], cwd: str, env: Dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess:
    argv: List[Arg] = [os.fsencode(sys.executable), b"-m", b"wakelab"]
    argv += [os.fsencode(a) if isinstance(a, str) else a for a in args]
    return subprocess.run(argv, capture_output=True, cwd=cwd, env=env, timeout=timeout)


@pytest.fixture
def place(tmp_path):
    """(cwd, env, history path): an empty working folder and a throwaway history not created yet."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    history = tmp_path / "history.sqlite3"
    env = dict(os.environ, PYTHONPATH=SRC, WAKELAB_HISTORY=str(history))
    return str(cwd), env, str(history)


def assert_refused(result: subprocess.CompletedProcess, line: str, cwd: str, history: str) -> None:
    assert result.stderr.decode("utf-8") == line + "\n"
    assert result.returncode == 2
    assert result.stdout == b""
    assert os.listdir(cwd) == []  # no output folder, no wakelab-runs/
    assert not os.path.exists(history)  # no history row (not even a database)


NOTE = "not valid UTF-8 (b'\\xff'); wakelab stores it as text: give it in UTF-8"
FOLDER = "the folder's name is recorded as text in the evidence and the history: choose a UTF-8 name"
FILTER = "history filters are matched as text: give it in UTF-8"
HISTORY = "the database's path is kept and printed as text: give a UTF-8 path"


@pytest.mark.parametrize(
    "args, line",
    [
        ([b"run", b"--arms", b"event", b"-n", b"5", b"--note", b"\xff"],
         "wakelab run: error: argument --note: %s (see wakelab run --help)" % NOTE),
        ([b"run", b"--arms", b"event", b"-n", b"5", b"--note=caf\xe9"],
         "wakelab run: error: argument --note: not valid UTF-8 (b'caf\\xe9'); wakelab stores it as text: give it in UTF-8 "
         "(see wakelab run --help)"),
        ([b"run", b"--arms", b"event", b"-n", b"5", b"-o", b"d\xff"],
         "wakelab run: error: argument -o/--output: not valid UTF-8 (b'd\\xff'); %s (see wakelab run --help)" % FOLDER),
        ([b"run", b"--arms", b"ev\xff"],
         "wakelab run: error: argument --arms: not valid UTF-8 (b'ev\\xff'); wakelab stores it as text: give it in UTF-8 "
         "(see wakelab run --help)"),
        ([b"run", b"--lab", b"\xff"], "wakelab run: error: argument --lab: %s (see wakelab run --help)" % NOTE),
        ([b"run", b"--python", b"/usr/bin/py\xff"],
         "wakelab run: error: argument --python: not valid UTF-8 (b'/usr/bin/py\\xff'); the interpreter's path is recorded "
         "as text in the evidence: give a UTF-8 path (see wakelab run --help)"),
        ([b"run", b"--arms", b"event", b"--history", b"h\xff"],
         "wakelab run: error: argument --history: not valid UTF-8 (b'h\\xff'); %s (see wakelab run --help)" % HISTORY),
        ([b"history", b"--arm", b"\xff"],
         "wakelab history: error: argument --arm: not valid UTF-8 (b'\\xff'); %s (see wakelab history --help)" % FILTER),
        ([b"history", b"--host", b"\xff"],
         "wakelab history: error: argument --host: not valid UTF-8 (b'\\xff'); %s (see wakelab history --help)" % FILTER),
        ([b"history", b"--lab", b"\xff"],
         "wakelab history: error: argument --lab: not valid UTF-8 (b'\\xff'); %s (see wakelab history --help)" % FILTER),
        ([b"history", b"--python", b"3.1\xff"],
         "wakelab history: error: argument --python: not valid UTF-8 (b'3.1\\xff'); %s (see wakelab history --help)" % FILTER),
        ([b"history", b"--history", b"\xff"],
         "wakelab history: error: argument --history: not valid UTF-8 (b'\\xff'); %s (see wakelab history --help)" % HISTORY),
        ([b"history", b"add", b"r\xff"],
         "wakelab history add: error: argument RUN: not valid UTF-8 (b'r\\xff'); the history records the bundle's folder "
         "as text: rename it in UTF-8 (see wakelab history add --help)"),
    ],
    ids=["note", "note-latin1", "output", "arms", "lab", "python", "history-path", "history-arm", "history-host",
         "history-lab", "history-python", "history-history", "history-add"],
)
def test_non_utf8_arguments_are_refused_up_front(place, args, line) -> None:
    cwd, env, history = place
    assert_refused(wakelab(args, cwd, env), line, cwd, history)


@pytest.mark.parametrize("args", [["list", "--bogus\x1b[2J"], ["show", "x\x1b]0;pwned\x07", "extra\u202e"],
                                  ["run", "--arsm\x9b31m"]], ids=["unrecognized", "extra", "c1-option"])
def test_an_argument_argparse_echoes_reaches_stderr_escaped(place, args) -> None:
    # argparse repeats what it did not recognize; a terminal must never get it raw.
    cwd, env, history = place
    result = wakelab(args, cwd, env)
    assert result.returncode == 2 and result.stdout == b""
    line = result.stderr.decode("utf-8")
    assert line.count("\n") == 1 and line.startswith("wakelab") and "unrecognized arguments" in line
    assert "\\x1b" in line or "\\x9b" in line or "\\u202e" in line  # shown, as a visible escape
    assert not set(line) & {"\x1b", "\x07", "\x9b", "\u202e"}


@pytest.mark.parametrize("args", [["compare", "grid\u202eexe.txt"], ["show", "no\x1b[2Jsuch"], ["export", "x\u2066y", "-f", "csv"]],
                         ids=["compare-usage", "show-evidence", "export-evidence"])
def test_a_path_a_command_names_in_its_error_reaches_stderr_escaped(place, args) -> None:
    # Every WakelabError a command raises is printed through one_line: a bidi override or an
    # escape sequence in a path the user gave is shown as a visible escape, never raw.
    cwd, env, history = place
    result = wakelab(args, cwd, env)
    assert result.returncode == 2 and result.stdout == b""
    line = result.stderr.decode("utf-8")
    assert line.count("\n") == 1 and line.startswith("wakelab")
    assert "\\u202e" in line or "\\x1b" in line or "\\u2066" in line
    assert not set(line) & {"\x1b", "\u202e", "\u2066"}


def test_an_empty_output_folder_is_refused(place) -> None:
    cwd, env, history = place
    result = wakelab(["run", "--arms", "event", "-n", "5", "-o", ""], cwd, env)
    assert_refused(result, "wakelab run: error: argument -o/--output: expected a folder, got an empty string (see wakelab run --help)",
                   cwd, history)


@pytest.mark.parametrize(
    "placement, cpus, line",
    [
        ("same", "0,1,2", "--cpus lists 3 CPUs, but --placement same takes 1"),
        ("same", "0,1", "--cpus lists 2 CPUs, but --placement same takes 1"),
        ("split", "0", "--cpus lists 1 CPU, but --placement split takes 2"),
        ("same,split", "0", "--cpus lists 1 CPU, but --placement same,split takes 2"),
    ],
)
def test_cpus_must_match_what_the_placement_takes(place, placement, cpus, line) -> None:
    cwd, env, history = place
    result = wakelab(["run", "--arms", "event", "-n", "5", "-o", "out", "--placement", placement, "--cpus", cpus], cwd, env)
    assert_refused(result, "wakelab: error: %s (same takes 1 CPU, split takes 2; same and split together take 2, "
                           "same using the first)" % line, cwd, history)


def test_a_bad_history_path_is_refused_before_anything_is_measured(place, tmp_path) -> None:
    cwd, env, history = place
    blocker = tmp_path / "a-file"
    blocker.write_text("not a database\n" * 100)  # SQLite takes a file shorter than its header for an empty one
    bad = str(blocker / "history.sqlite3")
    result = wakelab(["run", "--arms", "event", "-n", "5", "-o", "out", "--history", bad], cwd, env)
    assert_refused(result, "wakelab: error: cannot create history database %s: %s is not a directory "
                           "(choose another with --history PATH, or --no-history)" % (bad, blocker), cwd, history)
    # A folder where the database should be; from $WAKELAB_HISTORY too.
    result = wakelab(["run", "--arms", "event", "-n", "5", "-o", "out"], cwd, dict(env, WAKELAB_HISTORY=str(tmp_path)))
    assert_refused(result, "wakelab: error: history database %s is a directory "
                           "(choose another with --history PATH, or --no-history)" % tmp_path, cwd, history)
    # A file that is no database: history.py's own words, but before the run, exit 2.
    result = wakelab(["run", "--arms", "event", "-n", "5", "-o", "out", "--history", str(blocker)], cwd, env)
    err = result.stderr.decode()
    assert result.returncode == 2 and err.startswith("wakelab: error: history database %s " % blocker) and err.count("\n") == 1
    assert os.listdir(cwd) == [] and blocker.read_text() == "not a database\n" * 100
    # --no-history does not look at it.
    result = wakelab(["run", "--arms", "event", "-n", "5", "--warmup", "0", "-q", "-o", "out", "--history", bad, "--no-history"],
                     cwd, env)
    assert result.returncode == 0 and os.listdir(cwd) == ["out"]


def test_report_checks_its_destination_before_rendering(place, tmp_path) -> None:
    cwd, env, history = place
    home = tmp_path / "home"
    home.mkdir()
    env = dict(env, HOME=str(home))
    for name in ("MPLCONFIGDIR", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"):
        env.pop(name, None)
    made = wakelab(["run", "--arms", "event", "-n", "5", "--warmup", "0", "-q", "--no-history", "-o", "run"], cwd, env)
    assert made.returncode == 0, made.stderr
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    target = blocker / "report.html"
    result = wakelab(["report", "run", "-o", str(target)], cwd, env)
    assert result.stderr.decode() == "wakelab: error: cannot write the report to %s: Not a directory (choose another path with -o)\n" % target
    assert result.returncode == 2 and result.stdout == b""
    assert os.listdir(home) == []  # matplotlib never loaded: no ~/.config/matplotlib, no cache
    missing = tmp_path / "no-such-folder" / "report.html"
    result = wakelab(["report", "run", "-o", str(missing)], cwd, env)
    assert result.stderr.decode() == "wakelab: error: cannot write the report to %s: No such file or directory (choose another path with -o)\n" % missing
    result = wakelab(["report", "run", "-o", ""], cwd, env)
    assert result.stderr.decode() == "wakelab report: error: argument -o/--output: expected a file (or '-' for stdout), got an empty string (see wakelab report --help)\n"
    assert result.returncode == 2 and os.listdir(home) == [] and sorted(os.listdir(cwd)) == ["run"]


def test_off_tty_progress_says_a_long_arm_is_still_measuring(tmp_path) -> None:
    """With stderr a pipe, a line comes every few seconds while one arm runs, before its result line.

    7,000 wakes with a 1 ms settle take at least 7 s whatever the machine; the
    first heartbeat line comes after 4 s.
    """
    env = dict(os.environ, PYTHONPATH=SRC, WAKELAB_HISTORY=str(tmp_path / "h.sqlite3"))
    env.pop("NO_COLOR", None)
    cmd = [sys.executable, "-m", "wakelab", "run", "--arms", "event", "-n", "7000", "--settle-us", "1000", "--warmup", "0",
           "--workers", "2", "--repeat", "1", "--no-history", "-o", str(tmp_path / "out")]
    with subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, cwd=str(tmp_path)) as proc:
        try:
            assert proc.stderr is not None
            lines = [line.rstrip("\n") for line in proc.stderr]
            assert proc.wait(timeout=120) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
    assert lines[0] == "wakelab: [1/1] event ..."
    result = next(i for i, line in enumerate(lines) if line.startswith("wakelab:   p50 "))
    still = [line for line in lines[1:result] if line.startswith("wakelab:   still measuring event (")]
    assert still, lines
    assert all(line.endswith((" s)", " s, workers done: 1/2)", " s, workers done: 2/2)")) for line in still), still
    assert lines[1:result] == still  # nothing else in between


def test_in_process_runs_have_no_heartbeat_thread(tmp_path, monkeypatch, capsys) -> None:
    """--in-process measures in the parent: the run asks the display for no timer thread."""
    import wakelab.progress as progress
    from wakelab.cli import main

    seen = []
    real = progress.make_progress

    def spy(*args, **kwargs):
        seen.append(kwargs.get("heartbeat_s", "default"))
        return real(*args, **kwargs)

    monkeypatch.setattr(progress, "make_progress", spy)
    common = ["run", "--arms", "event", "-n", "5", "--warmup", "0", "-q", "--no-history"]
    assert main(common + ["--in-process", "-o", str(tmp_path / "a")]) == 0
    assert main(common + ["-o", str(tmp_path / "b")]) == 0
    assert seen == [None, progress.HEARTBEAT_S]


def test_every_run_argument_must_be_utf8_as_the_command_line_is_recorded() -> None:
    """The catch-all behind the per-option checks: the command line goes into summary.json as text."""
    from wakelab.commands.run import _check_command_line
    from wakelab.errors import UsageError

    _check_command_line(["run", "--note", "café"])
    with pytest.raises(UsageError) as exc:
        _check_command_line(["run", "--future-option", "x\udcff"])
    assert str(exc.value) == "argument 3 is not valid UTF-8 (b'x\\xff'); the command line is recorded as text"


def test_reading_commands_take_a_bundle_path_that_is_not_utf8(place) -> None:
    """Paths only read (show, report's RUN) are supported end to end; the report's own line escapes them."""
    cwd, env, history = place
    made = wakelab(["run", "--arms", "event", "-n", "5", "--warmup", "0", "-q", "--no-history", "-o", "run"], cwd, env)
    assert made.returncode == 0, made.stderr
    os.rename(os.path.join(cwd, "run"), os.path.join(os.fsencode(cwd), b"run\xff"))
    shown = wakelab([b"show", b"run\xff"], cwd, env)
    assert shown.returncode == 0 and shown.stdout.startswith(b"Custom selection: event\n") and shown.stderr == b""


def test_the_heartbeat_belongs_to_the_process_that_made_the_display() -> None:
    """A forked child that inherited the display starts no timer thread of its own."""
    stream = io.StringIO()
    progress = make_progress(1, quiet=False, stream=stream, heartbeat_s=0.01)
    progress._pid = -1  # as seen from a child of the process that made it
    progress("arm-start", {"arm": "event", "index": 0, "total": 1})
    assert [t for t in threading.enumerate() if t.name == "wakelab-progress"] == []
    progress.close()
