"""Progress on stderr: exact plain lines, the live display on a terminal, quiet, and a real run."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import threading
from typing import List

import pytest

from wakelab.harness.runner import RunPlan, run_plan
from wakelab.labs import LAB_135
from wakelab.progress import ArmResult, format_time_left, make_progress, wants_live_display

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")

EVENT_ENTRY = {"latency": {"p50_ns": 64_900, "max_ns": 120_000, "lost": 0}, "rate": None, "wall_s": 0.35}
RATE_ENTRY = {"latency": None, "rate": {"ops_per_s": 1_092_573.4}, "wall_s": 2.0}


class FakeClock:
    """Seconds that pass only when a test says so."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class FakeTerminal(io.StringIO):
    """A stream that claims to be a terminal."""

    def isatty(self) -> bool:
        return True


@pytest.fixture
def colour_terminal(monkeypatch) -> None:
    for name in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "COLUMNS", "LINES"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")


def feed_three_arms(progress, clock: FakeClock) -> None:
    """event (1.2 s), sigusr1-self (fails after 0.5 s), signal-install (2 s), a skipped arm."""
    progress("arm-start", {"arm": "event", "index": 0, "total": 4})
    clock.advance(1.2)
    progress("arm-done", {"arm": "event", "entry": EVENT_ENTRY})
    progress("arm-start", {"arm": "sigusr1-self", "index": 1, "total": 4})
    clock.advance(0.5)
    progress("arm-failed", {"arm": "sigusr1-self", "reason": "RuntimeError: planted crash"})
    progress("arm-start", {"arm": "signal-install", "index": 2, "total": 4})
    clock.advance(2.0)
    progress("arm-done", {"arm": "signal-install", "entry": RATE_ENTRY})
    progress("arm-start", {"arm": "native-cond", "index": 3, "total": 4})
    progress("arm-skipped", {"arm": "native-cond", "reason": "no C compiler found (install cc)"})


def test_plain_lines_are_exact_with_an_estimate_after_the_first_arm() -> None:
    stream, clock = io.StringIO(), FakeClock()
    with make_progress(4, quiet=False, stream=stream, clock=clock) as progress:
        feed_three_arms(progress, clock)
    assert stream.getvalue().splitlines() == [
        "wakelab: [1/4] event ...",
        "wakelab:   p50 64.9 µs, max 120 µs, lost 0 in 0.35 s",
        # 1.2 s per arm so far, 3 arms to go.
        "wakelab: [2/4] sigusr1-self ... (about 4 s left)",
        "wakelab:   FAILED: RuntimeError: planted crash",
        # Mean of 1.2 s and 0.5 s, 2 arms to go.
        "wakelab: [3/4] signal-install ... (about 2 s left)",
        "wakelab:   1,092,573 ops/s in 2.00 s",
        "wakelab: [4/4] native-cond ... (about 1 s left)",
        "wakelab:   skipped: no C compiler found (install cc)",
    ]


def test_skipped_arms_do_not_count_towards_the_estimate() -> None:
    stream, clock = io.StringIO(), FakeClock()
    progress = make_progress(3, quiet=False, stream=stream, clock=clock)
    progress("arm-start", {"arm": "native-cond", "index": 0, "total": 3})
    progress("arm-skipped", {"arm": "native-cond", "reason": "no C compiler"})
    progress("arm-start", {"arm": "event", "index": 1, "total": 3})
    clock.advance(10.0)
    progress("arm-done", {"arm": "event", "entry": EVENT_ENTRY})
    progress("arm-start", {"arm": "pipe", "index": 2, "total": 3})
    progress.close()
    assert stream.getvalue().splitlines()[2] == "wakelab: [2/3] event ..."
    assert stream.getvalue().splitlines()[4] == "wakelab: [3/3] pipe ... (about 10 s left)"


def test_plain_lines_of_a_grid_estimate_the_whole_run() -> None:
    # Two interpreter cells of two arms each: make_progress is given all four arms.
    stream, clock = io.StringIO(), FakeClock()
    progress = make_progress(4, quiet=False, stream=stream, clock=clock)
    for cell in range(2):
        progress("cell-start", {"cell": "python=3.1%d" % cell, "index": cell, "total": 2})
        for index, arm in enumerate(["event", "pipe"]):
            progress("arm-start", {"arm": arm, "index": index, "total": 2})
            progress("worker-done", {"arm": arm, "worker": 1, "workers": 1})
            clock.advance(2.0)
            progress("arm-done", {"arm": arm, "entry": EVENT_ENTRY})
    progress.close()
    assert [line for line in stream.getvalue().splitlines() if "p50" not in line] == [
        "wakelab: cell 1/2: python=3.10",
        "wakelab: [1/2] event ...",
        "wakelab: [2/2] pipe ... (about 6 s left)",
        "wakelab: cell 2/2: python=3.11",
        "wakelab: [1/2] event ... (about 4 s left)",
        "wakelab: [2/2] pipe ... (about 2 s left)",
    ]


@pytest.mark.parametrize(
    "seconds, text",
    [
        (0.2, "less than a second left"),
        (0.99, "less than a second left"),
        (1.0, "about 1 s left"),
        (2.5, "about 3 s left"),
        (89.0, "about 89 s left"),
        (90.0, "about 2 min left"),
        (250.0, "about 4 min left"),
        (89 * 60.0, "about 89 min left"),
        (7300.0, "about 2 h 2 min left"),
    ],
)
def test_format_time_left(seconds, text) -> None:
    assert format_time_left(seconds) == text


def test_format_arm_result_tolerates_missing_figures() -> None:
    assert ArmResult.from_entry({"latency": None, "rate": None, "wall_s": None}).text == "no figures"
    assert ArmResult.from_entry({"latency": {"p50_ns": None, "max_ns": None, "lost": 3}, "wall_s": 1}).text == "p50 -, max -, lost 3 in 1.00 s"


def test_plain_mode_ignores_unknown_events() -> None:
    stream = io.StringIO()
    progress = make_progress(1, quiet=False, stream=stream, clock=FakeClock())
    progress("worker-done", {"arm": "event", "worker": 0, "workers": 2})
    progress("something-new", {})
    progress.close()
    assert stream.getvalue() == ""


def test_quiet_is_silent_even_on_a_terminal(colour_terminal, capsys) -> None:
    terminal = FakeTerminal()
    for progress in (make_progress(4, quiet=True, stream=terminal), make_progress(4, quiet=True)):
        feed_three_arms(progress, FakeClock())
        progress.close()
    assert terminal.getvalue() == ""
    assert capsys.readouterr() == ("", "")


@pytest.mark.parametrize("env", [{"NO_COLOR": "1"}, {"TERM": "dumb"}])
def test_no_color_or_dumb_terminal_forces_plain_lines(monkeypatch, env) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    terminal, clock = FakeTerminal(), FakeClock()
    with make_progress(4, quiet=False, stream=terminal, clock=clock) as progress:
        feed_three_arms(progress, clock)
    assert terminal.getvalue().splitlines()[:2] == ["wakelab: [1/4] event ...", "wakelab:   p50 64.9 µs, max 120 µs, lost 0 in 0.35 s"]
    assert "\x1b" not in terminal.getvalue()


def test_wants_live_display() -> None:
    terminal = FakeTerminal()
    assert wants_live_display(terminal, {"TERM": "xterm"})
    assert wants_live_display(terminal, {"NO_COLOR": ""})  # an empty NO_COLOR does not count (no-color.org)
    assert not wants_live_display(terminal, {"NO_COLOR": "1"})
    assert not wants_live_display(terminal, {"TERM": "dumb"})
    assert not wants_live_display(io.StringIO(), {})
    closed = open(os.devnull, "w")
    closed.close()
    assert not wants_live_display(closed, {})  # isatty() on a closed stream raises ValueError
    assert not wants_live_display(object(), {})  # type: ignore[arg-type]


def test_live_display_renders_arm_names_and_figures(colour_terminal) -> None:
    terminal, clock = FakeTerminal(), FakeClock()
    threads_before = threading.active_count()
    stdout, stderr = sys.stdout, sys.stderr
    progress = make_progress(4, quiet=False, stream=terminal, clock=clock)
    progress("arm-start", {"arm": "event", "index": 0, "total": 4})
    # No redraw thread while arms measure, and sys.stdout/sys.stderr are left alone.
    assert threading.active_count() == threads_before
    assert (sys.stdout, sys.stderr) == (stdout, stderr)
    clock.advance(1.2)
    progress("arm-done", {"arm": "event", "entry": EVENT_ENTRY})
    progress("arm-start", {"arm": "sigusr1-self", "index": 1, "total": 4})
    progress("worker-done", {"arm": "sigusr1-self", "worker": 0, "workers": 2})
    progress("something-new", {"arm": "x"})
    clock.advance(0.5)
    progress("arm-failed", {"arm": "sigusr1-self", "reason": "[bold]not markup[/bold]"})
    progress("arm-start", {"arm": "signal-install", "index": 2, "total": 4})
    progress("arm-done", {"arm": "signal-install", "entry": RATE_ENTRY})
    progress("arm-start", {"arm": "native-cond", "index": 3, "total": 4})
    progress("arm-skipped", {"arm": "native-cond", "reason": "no C compiler"})
    progress.close()
    progress.close()  # idempotent
    progress("arm-start", {"arm": "late", "index": 0, "total": 1})  # ignored after close
    raw = terminal.getvalue()
    assert "\x1b[" in raw  # it is the live display, not plain lines
    text = ANSI.sub("", raw)
    assert "wakelab: [" not in text
    for expected in (
        "[1/4] event  p50 64.9 µs, max 120 µs, lost 0 in 0.35 s\n",
        "[2/4] sigusr1-self  FAILED: [bold]not markup[/bold]\n",
        "[3/4] signal-install  1,092,573 ops/s in 2.00 s\n",
        "[4/4] native-cond  skipped: no C compiler\n",
        "workers done: 1/2",
        "about 4 s left",
        "4/4 arms",
    ):
        assert expected in text
    assert "late" not in text
    assert raw.count("\x1b[?25l") == raw.count("\x1b[?25h") == 1  # the cursor, hidden while live, is shown again



def test_live_display_names_the_repetition_of_each_arm(colour_terminal) -> None:
    terminal, clock = FakeTerminal(), FakeClock()
    progress = make_progress(2, quiet=False, stream=terminal, clock=clock)
    for repetition in range(2):
        which = {"repetition": repetition, "repetitions": 2}
        progress("arm-start", dict(which, arm="event", index=repetition, total=2))
        progress("worker-done", {"arm": "event", "worker": 1, "workers": 1})
        progress("arm-done", dict(which, arm="event", entry=EVENT_ENTRY, final=repetition == 1))
    progress("arm-failed", {"arm": "pipe", "reason": "RuntimeError: planted"})  # keeps the result lines on screen
    progress.close()
    text = ANSI.sub("", terminal.getvalue())
    assert "event, repetition 1/2 (workers done: 1/1)" in text
    assert "[1/2] event  repetition 1/2, so far: p50 64.9 µs, max 120 µs, lost 0 in 0.35 s" in text
    assert "[2/2] event  repetition 2/2, all repetitions: p50 64.9 µs" in text


def test_live_display_with_no_events_writes_nothing(colour_terminal) -> None:
    terminal = FakeTerminal()
    make_progress(2, quiet=False, stream=terminal).close()
    assert terminal.getvalue() == ""


def test_plain_mode_survives_a_closed_stream() -> None:
    class Broken(io.StringIO):
        writes = 0

        def write(self, text: str) -> int:
            Broken.writes += 1
            raise BrokenPipeError(32, "Broken pipe")

    progress = make_progress(4, quiet=False, stream=Broken(), clock=FakeClock())
    feed_three_arms(progress, FakeClock())
    progress.close()
    assert Broken.writes == 1  # gave up after the first failure


def test_plain_mode_does_not_import_rich() -> None:
    code = (
        "import sys\n"
        "from wakelab.progress import make_progress\n"
        "p = make_progress(1, quiet=False)\n"
        "p('arm-start', {'arm': 'event', 'index': 0, 'total': 1})\n"
        "p('arm-done', {'arm': 'event', 'entry': {'latency': {'p50_ns': 1000, 'max_ns': 2000, 'lost': 0}, 'wall_s': 0.1}})\n"
        "p.close()\n"
        "assert 'rich' not in sys.modules, sorted(m for m in sys.modules if m.startswith('rich'))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    env["PYTHONPATH"] = SRC
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stderr == "wakelab: [1/1] event ...\nwakelab:   p50 1.00 µs, max 2.00 µs, lost 0 in 0.10 s\n"


def test_progress_of_a_real_run(tmp_path, tiny_params) -> None:
    stream = io.StringIO()
    plan = RunPlan(lab=LAB_135, arm_names=["event", "signal-install"], params=tiny_params, folder=str(tmp_path), command=["test"])
    with make_progress(len(plan.arm_names), quiet=False, stream=stream) as progress:
        run_plan(plan, progress)
    lines: List[str] = stream.getvalue().splitlines()
    assert len(lines) == 4
    assert lines[0] == "wakelab: [1/2] event ..."
    assert re.fullmatch(r"wakelab:   p50 \S+ \S+, max \S+ \S+, lost 0 in \d+\.\d\d s", lines[1])
    assert re.fullmatch(r"wakelab: \[2/2\] signal-install \.\.\. \((about \d+ s|less than a second) left\)", lines[2])
    assert re.fullmatch(r"wakelab:   [\d,]+ ops/s in \d+\.\d\d s", lines[3])



def test_plain_lines_name_the_repetition_and_say_when_figures_are_so_far() -> None:
    """With repetitions each arm line says which one, and a result before the last says it pools the ones so far."""
    stream, clock = io.StringIO(), FakeClock()
    with make_progress(4, quiet=False, stream=stream, clock=clock, heartbeat_s=None) as progress:
        for repetition in range(2):
            for index, arm in enumerate(("event", "pipe")):
                which = {"repetition": repetition, "repetitions": 2}
                progress("arm-start", dict(which, arm=arm, index=2 * repetition + index, total=4))
                clock.advance(1.0)
                progress("arm-done", dict(which, arm=arm, entry=EVENT_ENTRY, final=repetition == 1))
    assert stream.getvalue().splitlines() == [
        "wakelab: [1/4] event, repetition 1/2 ...",
        "wakelab:   repetition 1/2, so far: p50 64.9 µs, max 120 µs, lost 0 in 0.35 s",
        "wakelab: [2/4] pipe, repetition 1/2 ... (about 3 s left)",
        "wakelab:   repetition 1/2, so far: p50 64.9 µs, max 120 µs, lost 0 in 0.35 s",
        "wakelab: [3/4] event, repetition 2/2 ... (about 2 s left)",
        "wakelab:   repetition 2/2, all repetitions: p50 64.9 µs, max 120 µs, lost 0 in 0.35 s",
        "wakelab: [4/4] pipe, repetition 2/2 ... (about 1 s left)",
        "wakelab:   repetition 2/2, all repetitions: p50 64.9 µs, max 120 µs, lost 0 in 0.35 s",
    ]


def test_off_a_terminal_a_run_of_repetitions_names_each_one(tmp_path) -> None:
    """A real run of two arms in two repetitions of one worker each, stderr a pipe: every arm line names its
    repetition, and the first repetition's figures say they are so far."""
    env = dict(os.environ, PYTHONPATH=SRC, WAKELAB_HISTORY=str(tmp_path / "h.sqlite3"))
    env.pop("NO_COLOR", None)
    result = subprocess.run(
        [sys.executable, "-m", "wakelab", "run", "--arms", "event,pipe", "-n", "20", "--warmup", "2", "--workers", "2",
         "--repeat", "2", "--no-history", "-o", str(tmp_path / "out")],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, cwd=str(tmp_path), timeout=120)
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    # A loaded machine may slow an arm past the heartbeat: its lines name the repetition too.
    still = [line for line in lines if "still measuring" in line]
    assert all(re.fullmatch(r"wakelab:   still measuring (event|pipe), repetition [12]/2 \(\d+ s.*\)", line) for line in still), still
    lines = [line for line in lines if line not in still]
    figures = r"p50 \S+ \S+, max \S+ \S+, lost 0 in \d+\.\d\d s"
    left = r"( \((about \d+ s|less than a second) left\))?"
    expected = [
        r"wakelab: \[1/4\] event, repetition 1/2 \.\.\.",
        r"wakelab:   repetition 1/2, so far: " + figures,
        r"wakelab: \[2/4\] pipe, repetition 1/2 \.\.\." + left,
        r"wakelab:   repetition 1/2, so far: " + figures,
        r"wakelab: \[3/4\] event, repetition 2/2 \.\.\." + left,
        r"wakelab:   repetition 2/2, all repetitions: " + figures,
        r"wakelab: \[4/4\] pipe, repetition 2/2 \.\.\." + left,
        r"wakelab:   repetition 2/2, all repetitions: " + figures,
        r"wakelab: evidence in .* \(complete: true\)",
    ]
    assert len(lines) == len(expected), lines
    for pattern, line in zip(expected, lines):
        assert re.fullmatch(pattern, line), (pattern, line)


def _heartbeat_threads() -> List[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "wakelab-progress"]


def test_plain_heartbeat_during_a_long_arm_then_stops() -> None:
    """Off a terminal a long arm gets 'still measuring' lines; none after it ends, and no thread is left."""
    import time

    stream = io.StringIO()
    progress = make_progress(2, quiet=False, stream=stream, heartbeat_s=0.02)
    progress("arm-start", {"arm": "event", "index": 0, "total": 2})
    deadline = time.monotonic() + 5
    while stream.getvalue().count("still measuring") < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    progress("worker-done", {"arm": "event", "worker": 1, "workers": 3})
    while "workers done: 1/3" not in stream.getvalue() and time.monotonic() < deadline:
        time.sleep(0.01)
    progress("arm-done", {"arm": "event", "entry": EVENT_ENTRY})
    assert _heartbeat_threads() == []
    ended = stream.getvalue()
    time.sleep(0.1)
    assert stream.getvalue() == ended  # nothing after the arm's result
    lines = ended.splitlines()
    assert lines[0] == "wakelab: [1/2] event ..." and lines[-1] == "wakelab:   " + ArmResult.from_entry(EVENT_ENTRY).text
    middle = lines[1:-1]
    assert len(middle) >= 3 and all(re.fullmatch(r"wakelab:   still measuring event \(\d+ s(, workers done: 1/3)?\)", m) for m in middle)
    assert middle[-1].endswith(", workers done: 1/3)")
    # The next arm starts its own; close() (Ctrl-C, the end of the run) stops it too.
    progress("arm-start", {"arm": "signal", "index": 1, "total": 2})
    assert len(_heartbeat_threads()) == 1
    progress.close()
    assert _heartbeat_threads() == []


def test_no_heartbeat_when_none_is_asked_for() -> None:
    stream = io.StringIO()
    progress = make_progress(1, quiet=False, stream=stream, heartbeat_s=None)
    progress("arm-start", {"arm": "event", "index": 0, "total": 1})
    assert _heartbeat_threads() == []
    progress.close()
    assert stream.getvalue() == "wakelab: [1/1] event ...\n"


def test_live_display_keeps_only_failed_and_skipped_arms_on_screen(colour_terminal, monkeypatch) -> None:
    # Printed for good: what stays on the terminal after the run. Finished arms live above the bar
    # (transient) and go with it, so the catalogue's summary after them fits a screen.
    from rich.console import Console

    kept: List[str] = []
    real = Console.print

    def spy(self, *objects, **kwargs):  # type: ignore[no-untyped-def]
        kept.append(" ".join(str(o) for o in objects))
        return real(self, *objects, **kwargs)

    monkeypatch.setattr(Console, "print", spy)
    terminal, clock = FakeTerminal(), FakeClock()
    progress = make_progress(3, quiet=False, stream=terminal, clock=clock)
    progress("arm-start", {"arm": "event", "index": 0, "total": 3})
    progress("arm-done", {"arm": "event", "entry": EVENT_ENTRY})
    progress("arm-start", {"arm": "queue", "index": 1, "total": 3})
    progress("arm-failed", {"arm": "queue", "reason": "worker died"})
    progress("arm-start", {"arm": "native-cond", "index": 2, "total": 3})
    progress("arm-skipped", {"arm": "native-cond", "reason": "no C compiler"})
    progress.close()
    assert [k for k in kept if k and "NewLine" not in k] == ["[2/3] queue  FAILED: worker died", "[3/3] native-cond  skipped: no C compiler"]
    assert "[1/3] event  p50 64.9 µs" in ANSI.sub("", terminal.getvalue())  # shown while it ran
