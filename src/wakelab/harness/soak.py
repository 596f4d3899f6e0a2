"""Soak runs: one arm until a time is up, in bounded memory (``wakelab run --duration 30m``).

cyclictest is left running for an hour (``-D 1h``) because the tail of a
wake path shows up only over a long time: the rare preemption, the timer
that fires once a minute, the hourly cron job.  A soak here does the same for
one latency arm, and its memory stays flat however long it runs.

How.  The arm runs in consecutive chunks, each in a fresh worker process
forked from one :class:`~wakelab.harness.workers.WorkerPool` template (the
worker's usual measuring path: its own warm-up wakes, conditions, liveness
watch).  A chunk is a bounded number of wakes, sized from the rate the
previous chunks ran at to take about :data:`CHUNK_S` seconds, never more
than :data:`MAX_CHUNK_WAKES` (which bounds what a worker holds and what this
process parses at once) and never more than the time left or than the time
to the next checkpoint; the run ends when
the time is up (it may overrun by one chunk's misjudged share, a fraction of
a second).  Every counted wake of every chunk is folded into a log-linear
histogram (:mod:`wakelab.analysis.hdr`: HdrHistogram's layout, 3 significant
digits, 432 KiB whatever the duration); the raw samples of whole chunks are
kept too, in order, until the next chunk would pass ``raw_cap`` (1,000,000 by
default); after that only the histogram grows (in counts, not in size).

Figures.  n, lost, min, max, mean and standard deviation are exact (computed
from every wake).  The percentiles are exact (from the raw samples) while
every wake is kept; once the cap is passed they come from the histogram,
within ``2 ** -11`` (0.049 %) of the exact ones.  ``summary["soak"]["figures"]``
names which figures are exact and which come from the histogram, with each
one's precision; the samples file holds the kept raw samples and the whole
histogram (its counters, and HdrHistogram's interoperable encoded form).
Quality flags and the workers' spread are computed on the kept raw samples.

Checkpoints.  The samples file and summary.json (``complete: false``) are
rewritten after the first chunk and then every ``checkpoint_s`` seconds,
atomically (:mod:`wakelab.evidence.bundle`), so a crash loses at most one
checkpoint interval; Ctrl-C writes the state reached (the arm
``interrupted``, ``complete: false``) and raises
:class:`~wakelab.harness.runner.RunInterrupted`, as a run does.

Progress events (beside ``arm-start``/``arm-done``): ``soak-progress``
{arm, elapsed_s, duration_s, left_s, n, lost, p50_ns, p99_ns, max_ns,
percentiles_from, chunks} after every chunk; the live percentiles always come
from the histogram (``percentiles_from: "histogram"``), which costs
microseconds where sorting a million raw samples would cost a second.

Open loop (``--mode open --interval-us``) works as in a run: each chunk is an
open-loop schedule of its own (cyclictest's interval timing), its first
notify one settle period after the worker starts.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import time
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

if TYPE_CHECKING:
    from wakelab.analysis.quality import QualityFlags
    from wakelab.evidence.model import WorkerRecord
    from wakelab.harness.runner import ProgressCallback

# Seconds a soak may last: at least one second, at most thirty days.
DURATION_LIMITS_S = (1.0, 30 * 86400.0)
# Raw samples kept (whole chunks, the first ones), beyond which only the histogram grows.
RAW_CAP = 1_000_000
# Seconds between checkpoints (samples file and summary.json rewritten).
CHECKPOINT_S = 10.0
# Seconds of wakes a chunk aims at, the first chunk's aim (the rate is not known yet), and
# the bounds on a chunk's wakes (a worker's samples and the reply this process parses at once).
CHUNK_S = 5.0
FIRST_CHUNK_S = 1.0
MAX_CHUNK_WAKES = 200_000
MIN_CHUNK_WAKES = 1
# Seconds a chunk is given at least when it is cut short to end at a checkpoint.
MIN_CHUNK_S = 0.5
# While raw samples are kept, a chunk is cut to the room left under the cap, unless that room is
# smaller than this (a worker for a handful of wakes is not worth its start-up).
MIN_KEPT_CHUNK = 1000

_UNITS_S = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)([smhd]?)")



def parse_duration_s(text: str) -> float:
    """Seconds in a duration such as ``90``, ``90s``, ``30m``, ``2h``, ``1d`` or ``1h30m`` (cyclictest's ``-D``).

    A bare number is seconds.  Raises ValueError, worded for the command line,
    on anything else, on zero, and beyond :data:`DURATION_LIMITS_S`.
    """
    given = text.strip().lower()
    pos, total, parts = 0, 0.0, 0
    while pos < len(given):
        match = _DURATION.match(given, pos)
        # A bare number (seconds) is the whole text, never a part of "1h30m".
        if match is None or (not match.group(2) and (pos or match.end() != len(given))):
            raise ValueError("expected a time such as 90s, 30m, 2h or 1h30m, got %r" % text)
        total += float(match.group(1)) * _UNITS_S[match.group(2) or "s"]
        pos, parts = match.end(), parts + 1
    if not parts:
        raise ValueError("expected a time such as 90s, 30m, 2h or 1h30m, got %r" % text)
    low, high = DURATION_LIMITS_S
    if not math.isfinite(total) or total <= 0:
        raise ValueError("must be a positive time, got %r" % text)
    if not low <= total <= high:
        raise ValueError("must be between %g s and %g days, got %r" % (low, high / 86400, text))
    return total


def check_soak(arm_names: Sequence[str], options: Sequence[str]) -> None:
    """Raise ValueError, worded for the command line, where a soak cannot run ``arm_names`` with the other run
    ``options`` given (``--n``, ``--trace`` ...): it measures one latency arm in consecutive workers of its own sizing."""
    from wakelab.core.model import LATENCY
    from wakelab.core.registry import get_arm

    if "--n" in options:
        raise ValueError("--duration and --n exclude each other: a soak takes wakes until the time is up")
    if len(arm_names) != 1:
        raise ValueError("--duration runs one arm, and this run has %d (choose one with --arms A)" % len(arm_names))
    if get_arm(arm_names[0]).kind != LATENCY:
        raise ValueError("--duration needs a latency arm; %s measures a rate" % arm_names[0])
    if options:
        raise ValueError("--duration and %s exclude each other: a soak runs untraced, in consecutive fresh workers it "
                         "sizes itself" % options[0])


def next_chunk_wakes(rate_per_s: Optional[float], left_s: float, params: Any, chunk_s: float = CHUNK_S) -> int:
    """Counted wakes for the next chunk: about ``min(chunk_s, left_s)`` seconds at ``rate_per_s``.

    Before any chunk has run (``rate_per_s`` None) the rate is guessed from the
    settle time (closed loop) or the interval (open loop), for a first chunk of
    :data:`FIRST_CHUNK_S`.  Always within [:data:`MIN_CHUNK_WAKES`, :data:`MAX_CHUNK_WAKES`].
    """
    if rate_per_s is None:
        settle_us = params.settle_us + getattr(params, "settle_jitter_us", 0) / 2  # the settle's mean
        per_wake_s = (params.interval_us if params.mode == "open" else settle_us) / 1e6 + 20e-6
        target = min(FIRST_CHUNK_S, left_s) / per_wake_s
    else:
        target = rate_per_s * min(chunk_s, left_s)
    return int(max(MIN_CHUNK_WAKES, min(MAX_CHUNK_WAKES, target)))


@dataclasses.dataclass
class _Chunk:
    """What one chunk's worker measured, reduced to what the soak keeps: its wakes, the drivers' info,
    and its worker record (its lost wakes and its warm-up with it)."""

    samples: Sequence[int]
    info: Mapping[str, object]
    figures: "WorkerRecord"


class SoakState:
    """Everything a soak has measured so far, in bounded memory (see the module docstring).

    ``histogram`` holds every counted wake; ``kept`` the raw samples of the
    first whole chunks, up to ``raw_cap``; ``slices`` those chunks' worker
    records, in the order of ``kept``.
    """

    def __init__(self, raw_cap: int = RAW_CAP) -> None:
        from wakelab.analysis.hdr import LogLinearHistogram
        from wakelab.core.model import int64s

        self.raw_cap = raw_cap
        self.histogram = LogLinearHistogram()
        self.kept = int64s()
        self.kept_lost = 0
        self.keeping = True
        self.slices: List["WorkerRecord"] = []
        self.lost = 0
        self.warmup_discarded = 0
        self.chunks = 0
        self.first_info: Optional[Mapping[str, object]] = None

    @property
    def n(self) -> int:
        """Counted wakes that returned a sample, over the whole soak."""
        return self.histogram.total

    @property
    def every_wake_kept(self) -> bool:
        return len(self.kept) == self.histogram.total

    def fold(self, chunk: _Chunk) -> None:
        """Add one chunk: to the histogram always, to the raw samples while they stay within the cap."""
        self.histogram.record_many(chunk.samples)
        self.lost += chunk.figures.lost
        self.warmup_discarded += chunk.figures.warmup_discarded
        self.chunks += 1
        if self.first_info is None:
            self.first_info = chunk.info
        if self.keeping and len(self.kept) + len(chunk.samples) <= self.raw_cap:
            self.kept.extend(chunk.samples)
            self.kept_lost += chunk.figures.lost
            self.slices.append(dataclasses.replace(chunk.figures, repetition=0))
        else:
            self.keeping = False  # whole chunks only, in order: the samples file stays a prefix of the soak

    def latency_figures(self) -> Dict[str, object]:
        """The arm's ``latency`` entry: exact while every wake is kept, else percentiles from the histogram.

        Either way n, lost, min, max, mean and stdev are the histogram's exact
        running figures; while every wake is kept the percentiles are those of
        :func:`wakelab.analysis.stats.percentile` on the sorted raw samples
        (sorted as int64, 8 bytes a sample, not as a list of ints).
        """
        from wakelab.analysis.stats import PERCENTILES, percentile

        figures = self.histogram.latency_figures(self.lost)
        if self.every_wake_kept and len(self.kept):
            try:
                import numpy as np
            except ImportError:  # a plain install (numpy comes with the compare extra): a list of ints, same figures
                ordered: Any = sorted(self.kept)
            else:
                ordered = np.sort(np.frombuffer(self.kept, dtype=np.int64))
            for key, _ in PERCENTILES:
                if figures[key + "_ns"] is not None:
                    q = dict(PERCENTILES)[key]
                    figures[key + "_ns"] = float(percentile(_IntView(ordered), q))  # type: ignore[arg-type]
        return figures

    def soak_figures(self) -> "SoakFigures":
        """Which figures are exact and which come from the histogram, with each one's precision."""
        from wakelab.analysis.hdr import RELATIVE_ERROR, SIGNIFICANT_DIGITS
        from wakelab.analysis.stats import PERCENTILES

        percentiles = [key + "_ns" for key, _ in PERCENTILES]
        exact = ["n", "lost", "min_ns", "max_ns", "mean_ns", "stdev_ns"]
        from_histogram: List[str] = []
        if self.every_wake_kept:
            exact += percentiles
        else:
            from_histogram = percentiles
        latency = self.latency_figures()
        how = "type-7 percentile of the HdrHistogram counters' middles (%d significant digits)" % SIGNIFICANT_DIGITS
        return SoakFigures(
            exact=tuple(exact),
            from_histogram=tuple(from_histogram),
            precision=tuple((key, Precision(RELATIVE_ERROR, _opt_float(latency.get(key)), how)) for key in from_histogram),
            percentiles_from="raw" if self.every_wake_kept else "histogram",
        )


def _opt_float(value: object) -> Optional[float]:
    return None if value is None else float(value)  # type: ignore[arg-type]


@dataclasses.dataclass(frozen=True)
class Precision:
    """How close a figure read from the histogram is: its relative error, that error in ns, and how it was read."""

    relative_error: float
    value_ns: Optional[float]
    how: str

    def to_dict(self) -> Dict[str, object]:
        error = None if self.value_ns is None else round(self.value_ns * self.relative_error, 3)
        return {"relative_error": self.relative_error, "absolute_error_ns": error, "how": self.how}


@dataclasses.dataclass(frozen=True)
class SoakFigures:
    """``soak.figures``: which of the arm's figures are exact and which come from the histogram, with each one's precision."""

    exact: Tuple[str, ...]
    from_histogram: Tuple[str, ...]
    precision: Tuple[Tuple[str, Precision], ...]
    percentiles_from: str

    def to_dict(self) -> Dict[str, object]:
        return {
            "exact": list(self.exact),
            "from_histogram": list(self.from_histogram),
            "precision": {key: precision.to_dict() for key, precision in self.precision},
            "percentiles_from": self.percentiles_from,
        }


@dataclasses.dataclass(frozen=True)
class SoakArmFigures:
    """The soak's arm figures as its entry holds them, from the state reached: ``latency`` (None until a
    wake is taken) from :meth:`SoakState.latency_figures`; ``quality`` (on the kept raw samples) only at the end."""

    warmup_discarded: int
    info: Mapping[str, object]
    workers: Tuple["WorkerRecord", ...]
    n: int
    lost: int
    latency: Optional[Mapping[str, object]] = None
    quality: Optional["QualityFlags"] = None

    @property
    def counted(self) -> Optional[Tuple[int, int]]:
        return None if self.latency is None else (self.n + self.lost, self.lost)

    def to_dict(self) -> Dict[str, object]:
        from wakelab.harness.summary import Spread

        spread = Spread.of_values("p50_ns", [w.p50_ns for w in self.workers])
        out: Dict[str, object] = {"warmup_discarded": self.warmup_discarded, "info": dict(self.info),
                                  "workers": [w.to_dict() for w in self.workers], "spread": None if spread is None else spread.to_dict()}
        if self.latency is not None:
            out["latency"] = dict(self.latency)
        if self.quality is not None:
            out["quality"] = self.quality.to_dict()
        return out


class _IntView:
    """A sorted numpy array (or list) seen as a sequence of Python ints (for stats.percentile's arithmetic)."""

    def __init__(self, ordered: Any) -> None:
        self._ordered = ordered

    def __len__(self) -> int:
        return len(self._ordered)

    def __getitem__(self, index: int) -> int:
        return int(self._ordered[index])


@dataclasses.dataclass(frozen=True)
class SoakRecord:
    """summary.json's ``soak``: the soak's plan (duration, chunks, checkpoints, raw-sample cap) and how far it got.

    Replaced, never changed, as the soak goes (:func:`dataclasses.replace`), and written whole
    (:meth:`to_dict`) into the summary each time.
    """

    duration_s: float
    checkpoint_s: float
    raw_cap: int
    elapsed_s: float = 0.0
    finished: bool = False
    chunks: int = 0
    checkpoints: int = 0
    raw_kept: int = 0
    raw_kept_slices: int = 0
    #: Wakes the histogram counts.
    recorded: int = 0
    figures: SoakFigures = SoakFigures((), (), (), "raw")
    #: None until the first checkpoint.
    last_checkpoint_utc: Optional[str] = None

    def to_dict(self) -> Dict[str, object]:
        from wakelab.analysis.hdr import RELATIVE_ERROR, SIGNIFICANT_DIGITS

        out: Dict[str, object] = {
            "duration_s": self.duration_s,
            "elapsed_s": self.elapsed_s,
            "finished": self.finished,
            "chunks": self.chunks,
            "chunk_target_s": CHUNK_S,
            "max_chunk_wakes": MAX_CHUNK_WAKES,
            "checkpoint_s": self.checkpoint_s,
            "checkpoints": self.checkpoints,
            "raw_cap": self.raw_cap,
            "raw_kept": self.raw_kept,
            "raw_kept_slices": self.raw_kept_slices,
            "raw_which": "the raw samples of the soak's first whole chunks (one worker each), in order, up to raw_cap",
            "histogram": {
                "kind": "log-linear (HdrHistogram layout, lowest 1 ns)",
                "significant_digits": SIGNIFICANT_DIGITS,
                "relative_error": RELATIVE_ERROR,
                "recorded": self.recorded,
                "in": "the samples file, key 'histogram' (counters and HdrHistogram's encoded form)",
            },
            "figures": self.figures.to_dict(),
            "quality_on": "the kept raw samples",
        }
        if self.last_checkpoint_utc is not None:
            out["last_checkpoint_utc"] = self.last_checkpoint_utc
        return out


def _samples_text(doc: Mapping[str, object], samples: Sequence[int], chunk: int = 20000) -> str:
    """The samples file's JSON text, its ``samples_ns`` written from the compact array in chunks
    (no list of a million ints)."""
    marker = "\u0000samples\u0000"
    head, tail = json.dumps(dict(doc, samples_ns=marker), sort_keys=True, separators=(",", ":"), allow_nan=False).split(
        json.dumps(marker), 1
    )
    parts = [head, "["]
    for start in range(0, len(samples), chunk):
        parts.append(("," if start else "") + ",".join(map(str, samples[start : start + chunk])))
    parts += ["]", tail, "\n"]
    return "".join(parts)


def _write_samples(folder: str, arm_name: str, state: SoakState) -> str:
    """Write the soak's samples file (kept raw samples and the histogram); the path relative to ``folder``."""
    from wakelab.evidence import bundle

    os.makedirs(os.path.join(folder, bundle.SAMPLES_DIR), exist_ok=True)
    doc = bundle.samples_doc(
        arm_name,
        {
            "kind": "latency",
            "lost": state.kept_lost,
            "warmup_discarded": sum(s.warmup_discarded for s in state.slices if isinstance(s.warmup_discarded, int)),
            "components_ns": {},
            "info": {"soak": True, "slices": len(state.slices)},
            "histogram": state.histogram.to_dict(),
            "histogram_lost": state.lost,
        },
    )
    path = bundle.samples_path(folder, arm_name)
    bundle.atomic_write_text(path, _samples_text(doc, state.kept))
    return os.path.relpath(path, folder)


def run_soak(
    plan: Any,
    duration_s: float,
    progress: Optional["ProgressCallback"] = None,
    *,
    raw_cap: int = RAW_CAP,
    checkpoint_s: float = CHECKPOINT_S,
    chunk_s: float = CHUNK_S,
    clock: Callable[[], float] = time.monotonic,
    max_wakes: Optional[int] = None,
) -> tuple:
    """Run ``plan``'s one latency arm for ``duration_s`` seconds; ``(summary, write_error)`` as
    :func:`wakelab.harness.runner.run_plan_checked` returns them.

    ``max_wakes`` also ends the soak once that many counted wakes are taken
    (bench/soak_memory.py's 10,000,000 wakes); ``clock`` times it (seconds).

    Raises ValueError for a plan a soak cannot run (not exactly one arm, a rate
    arm, in-process or traced), :class:`~wakelab.harness.runner.RunInterrupted`
    on Ctrl-C (any KeyboardInterrupt) after writing the state reached, and
    :class:`~wakelab.errors.OutputError` when the folder is locked or nothing
    could be written.
    """
    from wakelab.core.model import LATENCY
    from wakelab.core.registry import get_arm
    from wakelab.harness.runner import lock_folder

    if len(plan.arm_names) != 1:
        raise ValueError("a soak runs one arm, not %d" % len(plan.arm_names))
    arm = get_arm(plan.arm_names[0])
    if arm.kind != LATENCY:
        raise ValueError("a soak needs a latency arm; %s is a %s arm" % (arm.name, arm.kind))
    if plan.execution.in_process or plan.execution.trace:
        raise ValueError("a soak runs untraced, in worker processes")
    if not DURATION_LIMITS_S[0] <= duration_s <= DURATION_LIMITS_S[1]:
        raise ValueError("duration %r s is out of range" % duration_s)
    lock = lock_folder(plan.folder)
    try:
        return _soak_locked(plan, arm, duration_s, progress, raw_cap, checkpoint_s, chunk_s, clock, max_wakes)
    finally:
        lock.release()


def _soak_locked(plan: Any, arm: Any, duration_s: float, progress: Optional["ProgressCallback"], raw_cap: int, checkpoint_s: float,
                 chunk_s: float, clock: Callable[[], float], max_wakes: Optional[int] = None) -> tuple:
    from wakelab.analysis.quality import gil_contended, quality_flags
    from wakelab.core.model import RawLatency
    from wakelab.errors import OutputError
    from wakelab.evidence import bundle
    from wakelab.harness import runner
    from wakelab.harness.conditions import run_conditions
    from wakelab.harness.summary import ArmEntry, RunSummary, jsonable, worker_record
    from wakelab.harness.workers import ArmUnavailable, WorkerPool, run_workers

    def emit(event: str, **info: object) -> None:
        if progress is not None:
            progress(event, info)

    plan = runner.seeded(plan)
    arm_params = arm.params_for(plan.params)  # the settle's random part: at least the arm's own minimum
    write = runner.bundle_writer(plan)

    started = time.perf_counter()
    execution = plan.execution
    probed = runner.probe_workers(execution)
    record = SoakRecord(duration_s, checkpoint_s, raw_cap)
    summary = RunSummary.start(plan, probed.interpreter, probed.timer).amend(execution=dict(execution.to_dict(), workers=1, soak=True))
    summary = dataclasses.replace(summary, soak=record)
    entry = summary.arms[0]
    switch_interval_s = float(execution.conditions.switch_interval_s or probed.interpreter.get("switch_interval_s") or 0.005)  # type: ignore[arg-type]
    state = SoakState(raw_cap)
    folding = False
    checkpointed: Optional[RunSummary] = None  # the summary as the last checkpoint wrote it

    def put(new: ArmEntry) -> None:
        nonlocal summary, entry
        entry, summary = new, summary.with_arm(new)

    def new_record(**changes: Any) -> None:
        """The soak record as it now stands, in the summary."""
        nonlocal record, summary
        record = dataclasses.replace(record, **changes)
        summary = dataclasses.replace(summary, soak=record)

    def fill(final: bool = False) -> None:
        """The summary from the state reached (between chunks: never half a chunk); the quality
        flags (which sort the kept raw samples more than once) only at the end."""
        nonlocal summary
        taken = state.n + state.lost
        figures = SoakArmFigures(state.warmup_discarded, dict(state.first_info or {}, soak_chunks=state.chunks),
                                 tuple(state.slices), state.n, state.lost, state.latency_figures() if taken else None)
        put(dataclasses.replace(entry, requested=taken, wall_s=round(clock() - soak_started, 6), figures=figures))
        if taken:
            summary = summary.amend(parameters=dict(plan.params.to_dict(), n=max(1, taken)))
        if final and len(state.kept):
            tail_interval_s = switch_interval_s if gil_contended(entry.to_dict(), summary.to_dict()) else None
            jitter = arm_params.settle_jitter_us if arm_params.mode == "closed" else None
            quality = quality_flags(state.kept, tail_interval_s, settle_jitter_us=jitter, settles=arm.settles)
            put(dataclasses.replace(entry, figures=dataclasses.replace(figures, quality=quality)))
        new_record(elapsed_s=round(clock() - soak_started, 3), chunks=state.chunks, raw_kept=len(state.kept),
                   raw_kept_slices=len(state.slices), figures=state.soak_figures(), recorded=state.histogram.total)

    def write_samples() -> None:
        put(dataclasses.replace(entry, samples_file=_write_samples(plan.folder, arm.name, state)))

    def checkpoint() -> None:
        nonlocal summary, checkpointed
        if state.n + state.lost:
            try:
                write_samples()
            except OSError as exc:
                raise runner.WriteFailed(plan.folder, exc) from None
        new_record(checkpoints=record.checkpoints + 1, last_checkpoint_utc=runner.utc_now())
        summary = dataclasses.replace(runner._finish(summary, started), complete=False)  # until the time is up
        write(summary)
        checkpointed = summary

    def interrupted(signum: int) -> Dict[str, object]:
        """Ctrl-C: write the state reached (or, if the signal came while a chunk was being folded in,
        the last checkpoint again), the arm ``interrupted``, ``complete: false``; never raises."""
        nonlocal summary, entry
        if folding and checkpointed is not None:
            # Half a chunk in: the last checkpoint is the last consistent state; its samples file stands.
            summary, entry = checkpointed, checkpointed.arms[0]
        elif state.n + state.lost:
            fill(True)
            try:
                write_samples()
            except OSError:
                pass  # the last checkpoint's samples file stands
        if entry.status in (runner.PENDING, runner.OK):
            put(entry.ended(runner.INTERRUPTED, runner.interruption_reason(signum)))
        assert summary.soak is not None  # the checkpoint's own, when the summary is the checkpoint's
        summary = dataclasses.replace(summary, interrupted=True, soak=dataclasses.replace(summary.soak, finished=False))
        summary = dataclasses.replace(runner._finish(summary, started), complete=False)
        try:
            return write(summary)
        except runner.WriteFailed:
            return runner.evidence(summary)  # the last whole summary.json stands

    failure: Optional[Any] = None
    pool = WorkerPool(execution.python)
    soak_started = clock()
    try:
        try:
            bundle.clear_bundle(plan.folder)
        except OSError as exc:
            raise runner.WriteFailed(plan.folder, exc) from None
        with run_conditions(execution.conditions) as applied:
            summary = dataclasses.replace(summary, applied=dict(applied))
            write(summary)
            emit("arm-start", arm=arm.name, index=0, total=1)
            runner.refuse_open_loop(plan.params, arm)
            rate: Optional[float] = None
            next_checkpoint = None
            while True:
                left = duration_s - (clock() - soak_started)
                if left <= 0:
                    break
                # A chunk never runs past the next checkpoint: a crash loses one checkpoint interval at most.
                budget = left if next_checkpoint is None else min(left, max(MIN_CHUNK_S, next_checkpoint - clock()))
                wakes = next_chunk_wakes(rate, budget, arm_params, chunk_s)
                if max_wakes is not None:
                    if state.n + state.lost >= max_wakes:
                        break
                    wakes = min(wakes, max_wakes - state.n - state.lost)
                room = raw_cap - len(state.kept)
                if state.keeping and MIN_KEPT_CHUNK <= room < wakes:
                    wakes = room  # fill the raw samples up to the cap exactly, with whole chunks
                # Each chunk's worker draws its settles from a stream of its own (chunk k: stream k).
                params = dataclasses.replace(arm_params, n=wakes, settle_stream=arm_params.settle_stream + state.chunks)
                chunk_started = clock()
                try:
                    result = run_workers(arm.name, params, execution.conditions, workers=1, python=execution.python, pool=pool)[0]
                except ArmUnavailable:
                    raise
                except Exception as exc:  # the arm fails; what the soak measured before stands
                    put(entry.ended(runner.FAILED, "chunk %d: %s: %s" % (state.chunks + 1, type(exc).__name__, exc)))
                    emit("arm-failed", arm=arm.name, reason=entry.reason)
                    break
                chunk_wall = max(clock() - chunk_started, 1e-6)
                raw = result.raw
                assert isinstance(raw, RawLatency)  # run_workers checked the record against the arm's kind
                figures = dataclasses.replace(worker_record(raw, result.pid, result.applied), warmup_discarded=raw.warmup_discarded)
                info = jsonable(raw.info)
                chunk = _Chunk(raw.samples_ns, info if isinstance(info, dict) else {}, figures)
                del result, raw
                folding = True
                state.fold(chunk)
                folding = False
                del chunk
                # The rate over the whole chunk, worker start-up included: what the next chunk will see.
                rate = (wakes + plan.params.warmup) / chunk_wall
                latency = state.histogram.latency_figures(state.lost)  # cheap; exact figures wait for a checkpoint
                elapsed = clock() - soak_started
                emit("soak-progress", arm=arm.name, elapsed_s=round(elapsed, 3), duration_s=duration_s,
                     left_s=round(max(0.0, duration_s - elapsed), 3), n=state.n, lost=state.lost,
                     p50_ns=latency.get("p50_ns"), p99_ns=latency.get("p99_ns"), max_ns=latency.get("max_ns"),
                     percentiles_from="histogram", chunks=state.chunks)
                if next_checkpoint is None or clock() >= next_checkpoint:
                    fill()
                    checkpoint()
                    next_checkpoint = clock() + checkpoint_s
            if entry.status == runner.PENDING:
                if state.n + state.lost:
                    put(entry.ended(runner.OK, None))
                else:
                    put(entry.ended(runner.FAILED, "the soak took no wakes in %g s" % duration_s))
            new_record(finished=entry.status == runner.OK)
            fill(final=True)
            if state.n + state.lost:
                write_samples()
    except ArmUnavailable as exc:
        put(entry.ended(runner.SKIPPED, str(exc)))
        emit("arm-skipped", arm=arm.name, reason=entry.reason)
    except KeyboardInterrupt as exc:
        signum = runner.interrupting_signal(exc)
        raise runner.RunInterrupted(interrupted(signum), plan.folder, signum) from None
    except runner.WriteFailed as exc:
        failure = exc
    except OSError as exc:  # the final samples file
        failure = runner.WriteFailed(plan.folder, exc)
    finally:
        pool.close()
    if failure is None:
        summary = runner._finish(summary, started)
        try:
            doc = write(summary)
        except runner.WriteFailed as exc:
            failure = exc
        else:
            if entry.status == runner.OK:
                emit("arm-done", arm=arm.name, entry=entry.to_dict())
            return doc, None
    summary = dataclasses.replace(summary, complete=False)
    if entry.status in (runner.PENDING, runner.OK):
        put(entry.ended(runner.FAILED, str(failure)))
    try:
        doc = write(summary)
    except runner.WriteFailed:
        doc = runner.evidence(summary)  # the last whole summary.json stands
    if checkpointed is None:
        raise OutputError("%s; nothing was measured (free space or choose another folder with --output)" % failure)
    return doc, failure
