"""Progress of a run on stderr: a live display on a terminal, plain lines elsewhere.

``make_progress`` returns the runner's progress callback (see
:func:`wakelab.harness.runner.run_plan`), chosen once per run:

- quiet: nothing at all;
- plain: one line per event, the same lines whether stderr is a log file, a
  pipe, a CI console, a terminal with ``NO_COLOR`` set or ``TERM=dumb``; after
  the first arm each start line carries an estimate of the time left, and
  while an arm runs a line every ``HEARTBEAT_S`` seconds says it still does
  (``still measuring event (8 s, workers done: 1/3)``), so a log never goes
  quiet for minutes; with several repetitions (``wakelab run --repeat``) every
  line of an arm names its repetition (``[3/10] event, repetition 2/5 ...``),
  and a result before the last one says its figures pool the repetitions so
  far (``repetition 2/5, so far: p50 ...``);
- live: a ``rich`` progress bar (current arm, arms done/total, elapsed, time
  left) with the last few finished arms above it; the bar and those lines
  vanish when the run ends (the summary that follows fits a screen), while a
  failed or skipped arm's line is printed for good.

Why the live display never refreshes on its own: rich's default is a thread
that redraws ten times a second.  Arms run in this process (and, with worker
processes, the parent still shares the CPUs with them), so a redraw thread
would take the GIL and the CPU in the middle of a measurement -- exactly the
disturbance wakelab measures.  The display is therefore redrawn only when an
event arrives, which is between measurements.  For the same reason it does
not redirect ``sys.stdout``/``sys.stderr`` (global state an arm might touch).

The plain mode's heartbeat is the one exception to "only when an event
arrives": the runner reports nothing between an arm's start and its end but
each worker's end, so a timer thread of this (parent) process writes the
line.  It sleeps on an ``Event`` between lines (a few microseconds of GIL
every few seconds, in the parent, not in the workers that measure), is
started only by the process that made the display, and is stopped and joined
when the arm ends or the display closes.  With ``--in-process`` the arms are
measured in this very process, so the run asks for no heartbeat
(``heartbeat_s=None``).

Each event's info is read once, where it arrives, into a record of its kind (:func:`read_event`:
:class:`ArmStart`, :class:`ArmDone`, :class:`ArmEnded`, :class:`WorkerDone`, :class:`CellStart`,
:class:`SoakProgress`); the displays lay out those records.

rich is imported only when the live display is chosen; plain mode uses the
standard library alone.
"""

from __future__ import annotations

import collections
import dataclasses
import os
import sys
import threading
import time
from typing import Any, Callable, List, Mapping, Optional, TextIO, Union

from wakelab.evidence.model import ArmRecord
from wakelab.formatting import format_ns, format_rate

Clock = Callable[[], float]

# Seconds between the plain display's "still measuring" lines during an arm.
HEARTBEAT_S = 4.0
# Finished arms the live display keeps in view above its bar (they go with it when the run ends).
RECENT_RESULTS = 4
# Seconds between the plain display's lines of a soak's live figures (wakelab run --duration).
SOAK_LINE_S = 10.0


def _int(info: Mapping[str, object], key: str, default: int) -> int:
    value = info.get(key, default)
    return value if isinstance(value, int) else default


@dataclasses.dataclass(frozen=True)
class Turn:
    """Which repetition of its arm (or cell) an event belongs to: ``repetition`` counts from 0."""

    repetition: int = 0
    repetitions: int = 1

    @classmethod
    def from_info(cls, info: Mapping[str, object]) -> "Turn":
        return cls(_int(info, "repetition", 0), _int(info, "repetitions", 1))

    @property
    def label(self) -> Optional[str]:
        """``repetition 2/5`` for a run with several repetitions; None with one."""
        return "repetition %d/%d" % (self.repetition + 1, self.repetitions) if self.repetitions > 1 else None


@dataclasses.dataclass(frozen=True)
class ArmResult:
    """An arm's headline figures as its summary.json entry holds them: latency or rate (``kind``), and its wall time.

    ``kind`` is ``latency``, ``rate`` or ``""`` (no figures); a figure the entry does not give is None.
    """

    kind: str = ""
    p50_ns: Any = None
    max_ns: Any = None
    lost: Any = None
    ops_per_s: Any = None
    wall_s: Union[int, float, None] = None

    @classmethod
    def from_entry(cls, entry: Mapping[str, object]) -> "ArmResult":
        """The figures of an arm's entry, read as the loader reads them."""
        arm = ArmRecord.from_dict(entry)
        wall = arm.wall_s if isinstance(arm.wall_s, (int, float)) else None
        if arm.latency is not None:
            return cls("latency", arm.latency.p50_ns, arm.latency.max_ns, arm.latency.lost, wall_s=wall)
        if arm.rate is not None:
            return cls("rate", ops_per_s=arm.rate.ops_per_s, wall_s=wall)
        return cls(wall_s=wall)

    @property
    def text(self) -> str:
        """``p50 64.9 µs, max 120 µs, lost 0 in 0.35 s`` or ``1,092,573 ops/s in ...``."""
        if self.kind == "latency":
            text = "p50 %s, max %s, lost %s" % (format_ns(self.p50_ns), format_ns(self.max_ns), self.lost)
        elif self.kind == "rate":
            text = "%s ops/s" % format_rate(self.ops_per_s)
        else:
            text = "no figures"
        if self.wall_s is not None:
            text += " in %.2f s" % self.wall_s
        return text


@dataclasses.dataclass(frozen=True)
class ArmStart:
    """``arm-start``: an arm (``index`` of ``total``, None where the event does not say) starts a repetition."""

    arm: object
    index: int = 0
    total: Optional[int] = None
    turn: Turn = Turn()

    @property
    def label(self) -> str:
        """The arm, with its repetition where the run has several: ``event, repetition 2/5``."""
        return "%s" % self.arm if self.turn.label is None else "%s, %s" % (self.arm, self.turn.label)


@dataclasses.dataclass(frozen=True)
class ArmDone:
    """``arm-done``: an arm's repetition ended with figures (before the ``final`` one, those of the repetitions so far)."""

    arm: object
    result: ArmResult = ArmResult()
    turn: Turn = Turn()
    final: bool = True


@dataclasses.dataclass(frozen=True)
class ArmEnded:
    """``arm-failed`` or ``arm-skipped`` (``failed`` false): an arm that ended without figures, and why."""

    arm: object
    reason: object
    failed: bool


@dataclasses.dataclass(frozen=True)
class WorkerDone:
    """``worker-done``: worker ``worker`` of the ``workers`` of the arm's current repetition finished."""

    arm: object
    worker: object
    workers: object


@dataclasses.dataclass(frozen=True)
class CellStart:
    """``cell-start``: a turn of cell ``cell`` (``index`` of ``total``) of an interpreter or conditions grid."""

    cell: object
    index: int = 0
    total: int = 1
    turn: Turn = Turn()


@dataclasses.dataclass(frozen=True)
class SoakProgress:
    """``soak-progress``: a soak's live figures after a chunk, and its seconds left (None: not said)."""

    arm: object
    n: object = None
    p50_ns: Any = None
    p99_ns: Any = None
    max_ns: Any = None
    left_s: Union[int, float, None] = None


Event = Union[ArmStart, ArmDone, ArmEnded, WorkerDone, CellStart, SoakProgress]


def read_event(event: str, info: Mapping[str, object]) -> Optional[Event]:
    """The record of event ``event`` with ``info`` (see :class:`Progress`); None for an event the displays do not show."""
    if event == "arm-start":
        total = info.get("total")
        return ArmStart(info.get("arm"), _int(info, "index", 0), total if isinstance(total, int) else None, Turn.from_info(info))
    if event == "arm-done":
        entry = info.get("entry")
        return ArmDone(info.get("arm"), ArmResult.from_entry(entry if isinstance(entry, Mapping) else {}), Turn.from_info(info),
                       bool(info.get("final", True)))
    if event in ("arm-failed", "arm-skipped"):
        return ArmEnded(info.get("arm"), info.get("reason"), event == "arm-failed")
    if event == "worker-done":
        return WorkerDone(info.get("arm"), info.get("worker"), info.get("workers"))
    if event == "cell-start":
        return CellStart(info.get("cell"), _int(info, "index", 0), _int(info, "total", 1), Turn.from_info(info))
    if event == "soak-progress":
        left = info.get("left_s")
        return SoakProgress(info.get("arm"), info.get("n"), info.get("p50_ns"), info.get("p99_ns"), info.get("max_ns"),
                            left if isinstance(left, (int, float)) else None)
    return None


class Progress:
    """The runner's progress callback; ``close()`` (or leaving a ``with``) tears the display down.

    Events: ``arm-start`` {arm, index, total, repetition, repetitions}, ``arm-skipped`` {arm, reason},
    ``arm-failed`` {arm, reason}, ``arm-done`` {arm, entry, repetition, repetitions, final}
    (before the ``final`` repetition the entry's figures are those of the repetitions so far;
    a run of one repetition, or a soak, may leave the three out), ``worker-done``
    {arm, worker, workers} (the workers of the arm's current repetition), and ``cell-start`` {cell, index, total, repetition,
    repetitions} before each turn of a cell of an interpreter or conditions grid (arm indices then count
    within the cell); a soak (``wakelab run --duration``) reports
    ``soak-progress`` {arm, n, p50_ns, p99_ns, max_ns, left_s, ...} after
    each of its chunks (:func:`format_soak_progress`).  Unknown events are ignored.  The base class is the
    quiet one: it shows nothing.
    """

    def __call__(self, event: str, info: Mapping[str, object]) -> None:
        """Report one event of the run."""

    def close(self) -> None:
        """Tear down whatever the display holds (idempotent)."""

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def make_progress(
    total_arms: int,
    *,
    quiet: bool,
    stream: Optional[TextIO] = None,
    clock: Clock = time.monotonic,
    heartbeat_s: Optional[float] = HEARTBEAT_S,
) -> Progress:
    """The progress display for a run of ``total_arms`` arms, writing to ``stream`` (default stderr).

    ``clock`` (seconds, monotonic) times the arms for the estimate of the time
    left; tests pass a fake one.  ``heartbeat_s``: the plain display's
    interval between "still measuring" lines during an arm (None: none; see
    the module docstring).
    """
    if quiet:
        return Progress()
    if stream is None:
        stream = sys.stderr
    if wants_live_display(stream):
        return _LiveProgress(total_arms, stream, clock)
    return _PlainProgress(total_arms, stream, clock, heartbeat_s)


def wants_live_display(stream: TextIO, environ: Optional[Mapping[str, str]] = None) -> bool:
    """True when ``stream`` is a terminal that may show colour and redraw lines.

    ``NO_COLOR`` (any non-empty value, see no-color.org) and ``TERM=dumb``
    ask for plain output.
    """
    env = os.environ if environ is None else environ
    if env.get("NO_COLOR") or env.get("TERM") == "dumb":
        return False
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):  # no isatty, or a closed stream
        return False


def format_time_left(seconds: float) -> str:
    """An estimate of time left, rounded as an estimate should be: ``about 3 s left``.

    >>> format_time_left(2.6), format_time_left(250), format_time_left(7300)
    ('about 3 s left', 'about 4 min left', 'about 2 h 2 min left')
    """
    # Round half up (Python's round() goes to even, which turns 2.5 s into "about 2 s").
    if seconds < 1:
        return "less than a second left"
    if seconds < 89.5:
        return "about %d s left" % int(seconds + 0.5)
    minutes = int(seconds / 60 + 0.5)
    if minutes < 90:
        return "about %d min left" % minutes
    return "about %d h %d min left" % divmod(minutes, 60)


def format_arm_done(done: ArmDone) -> str:
    """An ``arm-done`` event's line: its :class:`ArmResult`, after the repetition it ends where the run has several.

    Before the last repetition the figures pool the repetitions so far, and say so
    (``repetition 2/5, so far: p50 ...``); after it, ``repetition 5/5, all repetitions: p50 ...``.
    """
    which = done.turn.label
    if which is None:
        return done.result.text
    return "%s, %s: %s" % (which, "all repetitions" if done.final else "so far", done.result.text)


def format_soak_progress(soak: SoakProgress) -> str:
    """A soak's live figures: ``event: 1,234 wakes, p50 5.21 µs, p99 40.1 µs, max 1.20 ms, about 4 min left``."""
    text = "%s: %s wakes, p50 %s, p99 %s, max %s" % (
        soak.arm,
        format(soak.n, ",") if isinstance(soak.n, int) else "?",
        format_ns(soak.p50_ns),
        format_ns(soak.p99_ns),
        format_ns(soak.max_ns),
    )
    if soak.left_s is not None:
        text += ", " + format_time_left(float(soak.left_s))
    return text


class _ArmTimer:
    """Arms finished so far and how long the measured ones took, for the estimate of the time left.

    Skipped arms end at once and say nothing about how long the others take,
    so only arms that ran (done or failed) count towards the mean.  The
    estimate for the arms left is that mean times their number; it is an
    estimate, worded as one.
    """

    def __init__(self, total_arms: int, clock: Clock) -> None:
        self.total_arms = total_arms
        self.finished = 0
        self._clock = clock
        self._started: Optional[float] = None
        self._walls_s: List[float] = []

    def start(self) -> None:
        self._started = self._clock()

    def stop(self, ran: bool) -> None:
        self.finished += 1
        if self._started is not None and ran:
            self._walls_s.append(max(0.0, self._clock() - self._started))
        self._started = None

    def seconds_left(self, arms_left: int) -> Optional[float]:
        """Estimated seconds until ``arms_left`` more arms end, less what the running arm has taken."""
        if not self._walls_s:
            return None
        left = arms_left * sum(self._walls_s) / len(self._walls_s)
        if self._started is not None:
            left -= self._clock() - self._started
        return max(0.0, left)

    def arms_left(self, index: int, total: int) -> int:
        """Arms not finished, the running one included.

        ``index``/``total`` are the runner's (per cell of an interpreter or
        conditions grid); ``total_arms`` covers the whole run.
        """
        return max(self.total_arms - self.finished, total - index)


def cell_heading(cell: CellStart) -> str:
    """``cell 2/4: label``, and which of its repetitions this turn is when it has several."""
    text = "cell %d/%d: %s" % (cell.index + 1, cell.total, cell.cell)
    if cell.turn.label is not None:
        text += ", " + cell.turn.label
    return text


class _PlainProgress(Progress):
    """One line per event, stdlib only: logs, pipes, CI and terminals without colour."""

    def __init__(self, total_arms: int, stream: TextIO, clock: Clock, heartbeat_s: Optional[float] = None) -> None:
        self._stream: Optional[TextIO] = stream
        self._timer = _ArmTimer(total_arms, clock)
        self._clock = clock
        self._heartbeat_s = heartbeat_s
        self._pid = os.getpid()
        self._lock = threading.Lock()  # the heartbeat thread writes too
        self._ticker: Optional[threading.Thread] = None
        self._stop_ticker = threading.Event()
        self._arm: Optional[str] = None
        self._arm_started = 0.0
        self._workers: Optional[str] = None
        self._soak_line_at: Optional[float] = None

    def __call__(self, event: str, info: Mapping[str, object]) -> None:
        record = read_event(event, info)
        if isinstance(record, (ArmStart, ArmEnded, ArmDone)):
            self._stop_heartbeat()
        if isinstance(record, WorkerDone):
            self._workers = "%s/%s" % (record.worker, record.workers)
        elif isinstance(record, ArmStart):
            index, total = record.index, self._timer.total_arms if record.total is None else record.total
            line = "wakelab: [%d/%d] %s ..." % (index + 1, total, record.label)
            seconds = self._timer.seconds_left(self._timer.arms_left(index, total))
            if seconds is not None:
                line += " (%s)" % format_time_left(seconds)
            self._timer.start()
            self._write(line)
            self._start_heartbeat(record.label)
        elif isinstance(record, CellStart):
            self._write("wakelab: %s" % cell_heading(record))
        elif isinstance(record, ArmEnded):
            self._timer.stop(ran=record.failed)
            self._write("wakelab:   %s: %s" % ("FAILED" if record.failed else "skipped", record.reason))
        elif isinstance(record, ArmDone):
            self._timer.stop(ran=True)
            self._write("wakelab:   %s" % format_arm_done(record))
        elif isinstance(record, SoakProgress):
            # A soak's figures say it is alive: they replace the heartbeat, a line every SOAK_LINE_S.
            self._stop_heartbeat()
            now = self._clock()
            if self._soak_line_at is None or now - self._soak_line_at >= SOAK_LINE_S:
                self._soak_line_at = now
                self._write("wakelab:   %s" % format_soak_progress(record))

    def close(self) -> None:
        self._stop_heartbeat()

    def _start_heartbeat(self, arm: str) -> None:
        if self._heartbeat_s is None or self._stream is None or os.getpid() != self._pid:
            return  # none asked for, nowhere to write, or a forked child: the display is the parent's
        self._arm, self._arm_started, self._workers = arm, self._clock(), None
        stop = self._stop_ticker = threading.Event()
        self._ticker = threading.Thread(target=self._heartbeat, args=(stop, self._heartbeat_s), name="wakelab-progress", daemon=True)
        self._ticker.start()

    def _heartbeat(self, stop: threading.Event, interval_s: float) -> None:
        while not stop.wait(interval_s):
            line = "wakelab:   still measuring %s (%d s" % (self._arm, int(self._clock() - self._arm_started))
            workers = self._workers
            self._write(line + (", workers done: %s)" % workers if workers else ")"), unless=stop)

    def _stop_heartbeat(self) -> None:
        ticker, self._ticker = self._ticker, None
        self._stop_ticker.set()
        if ticker is not None and ticker is not threading.current_thread():
            ticker.join(timeout=1.0)  # it only ever waits on the event or writes one line

    def _write(self, line: str, unless: Optional[threading.Event] = None) -> None:
        with self._lock:
            if self._stream is None or (unless is not None and unless.is_set()):
                return
            try:
                self._stream.write(line + "\n")
                self._stream.flush()
            except (OSError, ValueError):
                # stderr went away (a closed pipe, a closed file): the run matters more than its progress.
                self._stream = None


class _LiveProgress(Progress):
    """A rich progress bar, redrawn only when an event arrives (see the module docstring)."""

    def __init__(self, total_arms: int, stream: TextIO, clock: Clock) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
        from rich.progress import Progress as RichProgress
        from rich.text import Text

        self._Text = Text
        self._timer = _ArmTimer(total_arms, clock)
        self._index, self._total = 0, total_arms
        self._cell: Optional[str] = None
        self._arm: Optional[str] = None
        self._workers_done = 0
        self._started = False
        self._closed = False
        # The caller decided this stream is a terminal; say so, so rich does not second-guess it.
        self._console = Console(file=stream, force_terminal=True, highlight=False)
        # Finished arms are shown above the bar while the run goes on, the last few only, and go
        # with it at the end (the summary follows and must fit a screen); a failed or skipped arm
        # is printed for good.
        recent: "collections.deque[Any]" = collections.deque(maxlen=RECENT_RESULTS)
        self._recent = recent

        class _Bar(RichProgress):
            def get_renderables(self) -> Any:
                yield from recent
                yield self.make_tasks_table(self.tasks)

        self._bar = _Bar(
            TextColumn("{task.description}", markup=False),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("arms"),
            TimeElapsedColumn(),
            TextColumn("{task.fields[left]}", markup=False),
            console=self._console,
            auto_refresh=False,
            transient=True,
            redirect_stdout=False,
            redirect_stderr=False,
            get_time=clock,
        )
        self._task = self._bar.add_task("starting", total=max(total_arms, 1), left="")

    def __call__(self, event: str, info: Mapping[str, object]) -> None:
        if self._closed:
            return
        record = read_event(event, info)
        if isinstance(record, ArmStart):
            self._index, self._total = record.index, self._timer.total_arms if record.total is None else record.total
            self._workers_done = 0
            self._timer.start()
            self._arm = record.label
            self._describe(self._arm)
        elif isinstance(record, CellStart):
            self._cell = str(record.cell)
            self._console.print(self._Text(cell_heading(record), style="bold"))
        elif isinstance(record, WorkerDone):
            self._workers_done += 1
            self._describe("%s (workers done: %d/%s)" % (self._arm or record.arm, self._workers_done, record.workers))
        elif isinstance(record, SoakProgress):
            # The soak's own figures and time left, in place of the arms' estimate.
            self._describe(format_soak_progress(dataclasses.replace(record, left_s=None)))
            left = record.left_s
            self._bar.update(self._task, left=format_time_left(float(left)) if left is not None else "")
            if self._started:
                self._bar.refresh()
            else:
                self._bar.start()
                self._started = True
            return
        elif isinstance(record, (ArmDone, ArmEnded)):
            self._timer.stop(ran=isinstance(record, ArmDone) or record.failed)
            if isinstance(record, ArmDone):
                self._recent.append(self._result_line(record))
            else:
                self._console.print(self._result_line(record))
            self._bar.update(self._task, completed=self._timer.finished)
        else:
            return
        self._show()

    def _describe(self, text: str) -> None:
        self._bar.update(self._task, description=text if self._cell is None else "%s: %s" % (self._cell, text))

    def _result_line(self, record: Union[ArmDone, ArmEnded]) -> Any:
        line = self._Text()
        line.append("[%d/%d] " % (self._index + 1, self._total), style="dim")
        line.append(str(record.arm), style="bold")
        if isinstance(record, ArmDone):
            line.append("  " + format_arm_done(record))
        elif record.failed:
            line.append("  FAILED: ", style="bold red")
            line.append(str(record.reason))
        else:
            line.append("  skipped: ", style="yellow")
            line.append(str(record.reason))
        return line

    def _show(self) -> None:
        total_arms, finished = self._timer.total_arms, self._timer.finished
        if finished < total_arms:
            # Arms still to come; while one runs it is among them, less the time it has taken.
            arms_left = total_arms - finished
            seconds = self._timer.seconds_left(arms_left)
            left = format_time_left(seconds) if seconds is not None else ""
        else:
            left = ""
        self._bar.update(self._task, total=max(total_arms, finished, 1), left=left)
        if self._started:
            self._bar.refresh()
        else:
            self._bar.start()  # draws the first frame
            self._started = True

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._started:
            self._bar.stop()
