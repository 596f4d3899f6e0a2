"""The runner: lab preset -> arms -> raw samples -> statistics -> evidence, as it goes.

The runner never prints.  It reports progress through an optional callback
and writes the evidence bundle after every arm (summary.txt only as the run
ends), so a crash or Ctrl-C leaves a valid ``summary.json`` with ``complete: false``.  Any ``KeyboardInterrupt``
ends a run the way Ctrl-C does; one with a ``signum`` attribute (the CLI
raises one for SIGTERM and SIGHUP) is recorded as that signal.  Exceptions from one arm are
caught and recorded as a failed arm; the run goes on with the next.

summary.json is a :class:`~wakelab.harness.summary.RunSummary` of frozen records (an arm's
:class:`~wakelab.harness.summary.ArmEntry`, replaced as the arm goes; a traced pass's record from
:mod:`wakelab.harness.trace_pass`), serialised each time it is written; the runner drives the
passes, the workers and the writes.

The output folder is locked for the whole run (a second run into it gets
:class:`~wakelab.errors.OutputError` before writing anything), and an older
bundle's evidence there is removed before the first write.  A write that
fails (a full disk, an I/O error, lost permission) ends the run at once:
the arm whose files could not be written, or else the next arm, is recorded
``failed`` with a reason naming the folder and the OS error, later arms stay
``pending``, and the summary (``complete: false``) is returned as usual, so
the caller records it and exits as for a failed arm.  The last summary.json
that was written whole stays valid.  If no arm was measured, OutputError is
raised instead.

By default each arm is measured in several fresh worker processes
(:mod:`wakelab.harness.workers`), on the interpreter the plan names; with
``in_process`` the arm runs here, under the same conditions layer, which is
easier to debug.

Repetitions (``Execution.repeat``, ``wakelab run --repeat R``).  Whole runs
shift level on real machines (the scheduler's choice of CPUs, frequency, other
tenants), and the workers of one arm, taken back to back, see only the noise
of a few seconds.  So every arm is measured in ``R`` passes over all the arms
(arm order within a pass as planned), in fresh workers each time: a slow drift
then reaches every arm alike.  An arm's ``workers`` fresh processes are spread
over the passes, at least one in each (:func:`workers_in_repetition`), and its
counted wakes (rate arms: rounds) are split between the passes, then between
each pass's workers: with ``wakelab run``'s defaults (3 workers, 5 repetitions)
a run takes as many wakes as a single pass did, in 5 workers per arm.  Each
worker's figures carry their ``repetition``; the arm's
``repetitions`` entry holds each repetition's own median and their range; the
samples file holds every wake in worker order (the slices compare's
hierarchical bootstrap resamples).  After each repetition the arm's figures so
far are written, so an interrupted run keeps them; the arm is ``ok`` once its
last repetition is in.  Each wake's CPUs (notifier before ``t0``, waiter after
``t1``), where the driver records them, give the arm's ``cpu_split``.

Tracing (``Execution.trace``).  Each latency arm the kernel wakes is measured
three times in the same run: first untraced (its figures, as always), then
while :mod:`wakelab.harness.trace` records the scheduler's events, with the
drivers keeping each wake's ``t0``, then untraced again, so that the tracing
overhead is the traced p50 against untraced passes on both sides of it.  The traced pass's wakes are split at the
waiter's events (:mod:`wakelab.analysis.components`) and stored in the arm's
samples file beside its latencies (``traced``); the arm's ``trace`` entry in
summary.json holds the component percentiles, where the median and tail
wakes go, and the tracing overhead (traced against untraced p50).  Where
tracing cannot run, the run goes on untraced and ``tracing.reason`` says why
(reported once through the progress callback as ``trace-unavailable``).
"""

from __future__ import annotations

import dataclasses
import os
import signal
import sys
import time
from typing import Callable, Collection, Dict, Generator, List, Mapping, Optional, Sequence, Tuple

from wakelab.core.registry import get_arm
from wakelab.core.model import LATENCY, RIGOROUS_FACTOR, RIGOROUS_WORKERS_PER_REPETITION, Arm, MeasureParams, Raw, raw_to_dict
from wakelab.errors import OutputError
from wakelab.evidence import bundle
from wakelab.evidence.model import WorkerRecord
from wakelab.harness.clock import calibrate
from wakelab.harness.conditions import Conditions, run_conditions, worker_conditions
from wakelab.harness.metadata import interpreter_info
from wakelab.harness.observed import Observer
from wakelab.harness.workers import (
    ArmUnavailable, IncompleteReply, Probe, WorkerPool, check_raw, pool_raws, probe_interpreter, run_workers, split_counts,
)
from wakelab.harness import trace as sched_trace
# The summary's building blocks, as the runner's own names (the command line and the tests use them so).
from wakelab.harness.summary import (  # noqa: F401
    FAILED, INTERRUPTED, OK, PENDING, SKIPPED, ArmEntry, ArmFigures, RunSummary, Taken, arm_figures,
    utc_now, worker_record,
)
from wakelab.harness.trace_pass import Tracing, trace_arm
from wakelab.labs import Lab
from wakelab.analysis.caveats import derive_caveats
from wakelab.analysis.guidance import guidance_dict
from wakelab.analysis.quality import derive_warnings, gil_contended

#: ``progress(event, info)``: what :mod:`wakelab.progress` shows (see its :class:`~wakelab.progress.Progress`).
ProgressCallback = Callable[[str, Dict[str, object]], None]


class WriteFailed(Exception):
    """Writing the evidence folder failed (``error``: the OSError); the run stops.  ``entry``: the arm
    whose samples could not be written, failed (None: no arm's)."""

    def __init__(self, folder: str, error: OSError, entry: Optional[ArmEntry] = None) -> None:
        self.folder = folder
        self.error = error
        self.entry = entry
        super().__init__(write_failure_reason(folder, error))


class RunStopped(Exception):
    """Thrown into a run that waits for its turn (:func:`run_turns`) when the grid around it stops
    for another cell's reason; the run ends as one whose write failed, its arms cut short with it."""


def write_failure_reason(folder: str, error: OSError) -> str:
    """``cannot write evidence to FOLDER: No space left on device``."""
    return "cannot write evidence to %s: %s" % (folder, error.strerror or error)


def lock_folder(folder: str) -> bundle.FolderLock:
    """The output folder's lock, held; :class:`OutputError` if another run holds it or it cannot be made."""
    try:
        return bundle.FolderLock(folder).acquire()
    except bundle.FolderBusy:
        raise OutputError(
            "cannot write evidence to %s: another wakelab run is writing there (wait for it to end, "
            "or choose another folder with --output)" % folder
        ) from None
    except OSError as exc:
        raise OutputError("%s (choose another folder with --output)" % write_failure_reason(folder, exc)) from None


class RunInterrupted(Exception):
    """Ctrl-C (or another signal) during a run; ``summary`` is what was written (``complete: false``).

    ``signum`` is the signal that interrupted it (``SIGINT`` for Ctrl-C).
    """

    def __init__(self, summary: Dict[str, object], folder: str, signum: int = signal.SIGINT) -> None:
        super().__init__("run interrupted")
        self.summary = summary
        self.folder = folder
        self.signum = signum


def interrupting_signal(exc: BaseException) -> int:
    """The signal behind a ``KeyboardInterrupt``: its ``signum`` if it carries one, else SIGINT."""
    signum = getattr(exc, "signum", None)
    return int(signum) if isinstance(signum, int) else int(signal.SIGINT)


def interruption_reason(signum: int) -> str:
    """What an interrupted arm's ``reason`` says."""
    if signum == signal.SIGINT:
        return "interrupted by the user (Ctrl-C)"
    try:
        name = signal.Signals(signum).name
    except ValueError:
        name = "signal %d" % signum
    return "interrupted by %s" % name


DEFAULT_WORKERS = 3
# The most a compare-grade plan asks for: ``wakelab run``'s bounds on --n, --rounds and --workers.
RIGOROUS_CAPS = {"n": 1_000_000, "rounds": 1_000, "workers": 64}


def rigorous_params(params: MeasureParams, given: Collection[str] = ()) -> MeasureParams:
    """``params`` compare-grade: :data:`RIGOROUS_FACTOR` times the counted wakes and rounds, but those in ``given``."""
    return dataclasses.replace(params, **{field: min(RIGOROUS_CAPS[field], RIGOROUS_FACTOR * getattr(params, field))
                                          for field in ("n", "rounds") if field not in given})


def rigorous_workers(repeat: int) -> int:
    """A compare-grade run's workers per arm: :data:`RIGOROUS_WORKERS_PER_REPETITION` per repetition, never fewer than a plain run's."""
    return min(RIGOROUS_CAPS["workers"], max(DEFAULT_WORKERS, RIGOROUS_WORKERS_PER_REPETITION * repeat))


@dataclasses.dataclass(frozen=True)
class Execution:
    """How arms are run: in ``workers`` fresh processes of ``python`` (None: this
    interpreter), or ``in_process``; under ``conditions``."""

    workers: int = DEFAULT_WORKERS
    python: Optional[str] = None
    in_process: bool = False
    conditions: Conditions = Conditions()
    # Split every wake at the kernel's scheduler events (see "Tracing" above).
    trace: bool = False
    # With trace: also sample the CPUs and split the notify path and the waiter's own work by
    # Python function, where the interpreter can publish its frames (wakelab.harness.frames).
    trace_frames: bool = False
    # Repetitions: every arm is measured this many times, in fresh workers each time, one
    # pass over all arms after another (see "Repetitions" above).  ``wakelab run``'s default is
    # wakelab.evidence.model.DEFAULT_REPEAT; a plan built in code measures once unless it asks.
    repeat: int = 1
    # Made with ``wakelab run --rigorous`` (compare-grade: more wakes and workers than the lab's
    # defaults, chosen by the command line; the counts themselves are in parameters and here).
    rigorous: bool = False
    # One side of an A/B (``wakelab ab``): folders put first on the workers' PYTHONPATH (after
    # wakelab's own folder), environment variables set for them, and the origin of each user
    # arm as this side loads it (its own arm file; the registry's otherwise).  Empty: a plain run.
    pythonpath: Tuple[str, ...] = ()
    env: Tuple[Tuple[str, str], ...] = ()
    arm_origins: Mapping[str, Mapping[str, object]] = dataclasses.field(default_factory=dict)

    def worker_env(self) -> Dict[str, str]:
        """The environment this execution's workers add to wakelab's own (PYTHONPATH: the folders)."""
        extra = dict(self.env)
        if self.pythonpath:
            extra["PYTHONPATH"] = os.pathsep.join(self.pythonpath)
        return extra

    def to_dict(self) -> Dict[str, object]:
        out: Dict[str, object] = {
            "mode": "in-process" if self.in_process else "workers",
            "workers": 1 if self.in_process else self.workers,
            "python": self.python or sys.executable,
            "repeat": self.repeat,
        }
        out.update({key: True for key in ("trace", "trace_frames", "rigorous") if getattr(self, key)})
        if self.pythonpath:
            out["pythonpath"] = list(self.pythonpath)
        if self.env:
            out["env"] = dict(self.env)
        return out


@dataclasses.dataclass(frozen=True)
class RunPlan:
    """What to run, how, and where to write it."""

    lab: Lab
    arm_names: Sequence[str]
    params: MeasureParams
    folder: str
    command: Sequence[str] = ()
    note: Optional[str] = None
    execution: Execution = Execution()
    # Lays out summary.txt from the summary document; the harness imports no renderer, so the
    # caller (the CLI) hands one in.  None: summary.json and samples/ only.
    render_text: Optional[Callable[[Dict[str, object]], str]] = None


def fresh_seed() -> int:
    """A seed for a run's random settles, drawn from the OS (32 bits: short enough to type back)."""
    return int.from_bytes(os.urandom(4), "big")


def seeded(plan: "RunPlan") -> "RunPlan":
    """``plan`` with a seed for its random settles: its own, or a fresh one (:func:`fresh_seed`) that
    the summary then records, so that ``--seed`` reproduces the run's settles."""
    if plan.params.seed is not None:
        return plan
    return dataclasses.replace(plan, params=dataclasses.replace(plan.params, seed=fresh_seed()))


def arm_params(params: MeasureParams, arm: Arm, repetition: int = 0, execution: Optional["Execution"] = None) -> MeasureParams:
    """``params`` as ``arm`` is measured with them in ``repetition``: the settle's random part at least
    the arm's own minimum (:meth:`~wakelab.core.model.Arm.params_for`), and the settle stream of the
    repetition's first worker -- the arm's workers are numbered across the repetitions, worker k
    drawing stream k (:func:`~wakelab.harness.workers.run_workers` numbers a repetition's own)."""
    params = arm.params_for(params)
    if execution is not None and repetition:
        first = sum(workers_in_repetition(execution, r) for r in range(repetition))
        params = dataclasses.replace(params, settle_stream=params.settle_stream + first)
    return params


def run_plan(plan: RunPlan, progress: Optional[ProgressCallback] = None) -> Dict[str, object]:
    """Run every arm of ``plan``, writing the bundle into ``plan.folder`` after each.

    Returns the final summary document.  Raises :class:`RunInterrupted` on
    Ctrl-C (any ``KeyboardInterrupt``: see the module docstring), after
    killing the workers and writing what was measured so far; raises
    :class:`OutputError` when the folder is locked by another run, or cannot
    be written before any arm was measured.
    """
    return run_plan_checked(plan, progress)[0]


def run_plan_checked(plan: RunPlan, progress: Optional[ProgressCallback] = None) -> tuple:
    """``(summary, write_error)``: :func:`run_plan`, and the :class:`WriteFailed` that
    ended the run early (None if every write succeeded)."""
    lock = lock_folder(plan.folder)
    try:
        return finish_turns(run_turns(plan, progress))
    finally:
        lock.release()


def finish_turns(turns: "Generator[Dict[str, object], None, tuple]") -> tuple:
    """Run a :func:`run_turns` generator to its end; its ``(summary, write_error)``."""
    while True:
        try:
            next(turns)
        except StopIteration as stop:
            return stop.value


def run_turns(plan: RunPlan, progress: Optional[ProgressCallback] = None,
              take_turns: bool = False) -> "Generator[Dict[str, object], None, tuple]":
    """:func:`run_plan_checked`'s body, as a generator; the caller holds the folder's lock.

    With ``take_turns`` it yields the summary as it stands after every repetition but the
    last, so that a grid can run its cells' repetitions in turn (one cell's pass, then the
    next cell's): the run's conditions are then applied for each pass and removed after it,
    not held while another cell measures.  Without, it never yields.  Its return value
    (``StopIteration.value``) is ``(summary, write_error)``.  A ``KeyboardInterrupt``
    thrown in at a yield ends the run as Ctrl-C does (:class:`RunInterrupted`); closing it
    there kills its workers and leaves the bundle as last written.
    """
    def emit(event: str, **info: object) -> None:
        if progress is not None:
            progress(event, info)

    summary: RunSummary

    def put(entry: ArmEntry) -> None:
        nonlocal summary
        summary = summary.with_arm(entry)

    def _interrupted(exc: BaseException) -> RunInterrupted:
        """Ctrl-C (or another signal): the arms it cut marked, the evidence written, the exception to raise."""
        nonlocal summary
        signum = interrupting_signal(exc)
        for entry in summary.arms:
            # The arm being measured, and every arm with repetitions still to come.
            if entry.status == PENDING and (entry.name == current or entry.figures is not None):
                put(entry.ended(INTERRUPTED, interruption_reason(signum)))
        summary = _finish(dataclasses.replace(summary, interrupted=True, observed=observer.observe()), started)
        return RunInterrupted(_write_quietly(write, summary, plan.folder), plan.folder, signum)

    plan = seeded(plan)
    write = bundle_writer(plan)

    started = time.perf_counter()
    execution = plan.execution
    probed = probe_workers(execution)
    summary = RunSummary.start(plan, probed.interpreter, probed.timer)
    observer = Observer()  # what the machine did meanwhile: summary.json's observed, as the run ends
    if execution.trace:
        reason = sched_trace.precheck()
        summary = dataclasses.replace(summary, tracing=dataclasses.replace(Tracing.new(True), traced=reason is None, reason=reason))
        if reason is not None:
            emit("trace-unavailable", reason=reason)
    # Where tails cluster at multiples of this, another thread held the GIL.
    switch_interval_s = float(execution.conditions.switch_interval_s or probed.interpreter.get("switch_interval_s") or 0.005)  # type: ignore[arg-type]
    current: Optional[str] = None  # the arm being measured
    failure: Optional[Exception] = None  # a WriteFailed, or the RunStopped a grid threw in
    worker_pool = None if execution.in_process else WorkerPool(execution.python, env=execution.worker_env())
    try:
        try:
            # Replacing a bundle: nothing of the old one may pass for this run's evidence.
            bundle.clear_bundle(plan.folder)
        except OSError as exc:
            raise WriteFailed(plan.folder, exc) from None
        repeat = max(1, execution.repeat)
        taken: List[Taken] = [Taken() for _ in summary.arms]

        def record_applied(applied: Mapping[str, object]) -> None:
            """What the conditions were, as the first pass found them."""
            nonlocal summary
            summary = dataclasses.replace(summary, applied=dict(applied))
            write(summary, text=False)

        def one_pass(repetition: int) -> None:
            nonlocal current, summary
            final = repetition == repeat - 1
            for index, entry in enumerate(summary.arms):
                if entry.status in (SKIPPED, FAILED):
                    continue  # cannot run here, or broke in an earlier repetition
                current = entry.name
                arm = get_arm(entry.name)
                emit("arm-start", arm=arm.name, index=repetition * len(taken) + index, total=repeat * len(taken),
                     repetition=repetition, repetitions=repeat)
                # Tails at switch-interval multiples are looked for only where a busy Python thread
                # may hold the GIL the waiter needs.
                tail_interval_s = switch_interval_s if gil_contended(entry.to_dict(), summary.to_dict()) else None
                try:
                    entry = _run_arm(plan, arm, entry, emit, tail_interval_s, worker_pool, taken[index], repetition, final)
                    put(entry)
                    if summary.tracing is not None and final and entry.status == OK:
                        write(summary, text=False)  # the arm's own figures are evidence before the traced pass starts
                        entry, doc, tracing = _trace_arm(plan, arm, entry, summary.tracing, emit, worker_pool)
                        summary = dataclasses.replace(summary.with_arm(entry), tracing=tracing)
                        if doc is not None:
                            put(_write_samples(plan, entry, doc, emit))
                except WriteFailed as exc:
                    if exc.entry is not None:
                        put(exc.entry)
                    raise
                current = None
                write(summary, text=False)

        if not take_turns:
            with run_conditions(execution.conditions) as applied:
                record_applied(applied)
                for repetition in range(repeat):
                    one_pass(repetition)
        else:
            for repetition in range(repeat):
                with run_conditions(execution.conditions) as applied:
                    if repetition == 0:
                        record_applied(applied)
                    one_pass(repetition)
                if repetition < repeat - 1:
                    yield evidence(summary)  # another cell's turn
    except KeyboardInterrupt as exc:
        raise _interrupted(exc) from None
    except (WriteFailed, RunStopped) as exc:
        failure = exc
    finally:
        if worker_pool is not None:
            worker_pool.close()
    if failure is None:
        try:
            summary = _finish(dataclasses.replace(summary, observed=observer.observe()), started)
            return write(summary), None
        except WriteFailed as exc:
            failure = exc
        except KeyboardInterrupt as exc:  # while the finished run is written: it ends interrupted all the same
            raise _interrupted(exc) from None
    summary = _end_on_write_failure(summary, failure, emit)
    summary = dataclasses.replace(_finish(dataclasses.replace(summary, observed=observer.observe()), started), complete=False)
    doc = _write_quietly(write, summary, plan.folder)  # may fail too: the last whole summary.json then stands
    bundle.remove_unnamed_samples(plan.folder)  # samples written for arms the summary on disk never named
    if not any(entry.status == OK or entry.figures is not None for entry in summary.arms):
        raise OutputError("%s; nothing was measured (free space or choose another folder with --output)" % failure) from failure
    return doc, failure


#: ``write(summary, text=True)``: see :func:`bundle_writer`.
Writer = Callable[..., Dict[str, object]]


def evidence(summary: RunSummary) -> Dict[str, object]:
    """summary.json's document: ``summary``'s record, with its caveats, warnings and guidance derived from it."""
    doc = summary.to_dict()
    doc["caveats"] = derive_caveats(doc)
    doc["warnings"] = derive_warnings(doc)
    doc["guidance"] = guidance_dict(doc)
    return doc


def bundle_writer(plan: RunPlan) -> Writer:
    """``write(summary)``: the summary's document (:func:`evidence`) written into the plan's folder as
    summary.json and summary.txt, and returned; :class:`WriteFailed` on an OS error.
    ``write(summary, text=False)`` (the runner's writes after each arm) writes summary.json alone:
    summary.txt is laid out when the run ends, however it ends, and ``wakelab show`` lays out a
    summary.json caught mid-run."""

    def write(summary: RunSummary, text: bool = True) -> Dict[str, object]:
        doc = evidence(summary)
        rendered = None if plan.render_text is None or not text else plan.render_text(doc)
        try:
            bundle.write_bundle(plan.folder, doc, rendered)
        except OSError as exc:
            raise WriteFailed(plan.folder, exc) from None
        return doc

    return write


def _write_quietly(write: Writer, summary: RunSummary, folder: str) -> Dict[str, object]:
    """``write(summary)`` as a run ends, a failure ignored (the last whole summary.json stands); the document.

    If it fails, summary.txt (a copy laid out for people, made again by
    ``wakelab show``) is removed, so that it can neither contradict
    summary.json nor hold the space the final summary.json needs, and
    summary.json alone is tried once more.
    """
    try:
        return write(summary)
    except WriteFailed:
        pass
    try:
        os.unlink(os.path.join(folder, bundle.SUMMARY_TXT))
    except OSError:
        pass
    doc = evidence(summary)
    try:
        bundle.write_bundle(folder, doc, None)
    except OSError:
        pass
    return doc


def _end_on_write_failure(summary: RunSummary, failure: Exception, emit: Callable[..., None]) -> RunSummary:
    """Blame the write failure on an arm: the one already marked by :func:`_run_arm` (its samples
    could not be written), else the first arm not yet run.  Later arms stay pending."""
    for entry in summary.arms:
        if entry.status == PENDING and isinstance(entry.figures, ArmFigures):  # repetitions still to come
            entry = entry.ended(FAILED, "cut short after %d repetitions: %s" % (entry.figures.repetitions.count, failure))
            summary = summary.with_arm(entry)
            emit("arm-failed", arm=entry.name, reason=entry.reason)
    if any(entry.status == FAILED and entry.reason == str(failure) for entry in summary.arms):
        return summary
    pending = next((entry for entry in summary.arms if entry.status == PENDING), None)
    if pending is None:
        return summary
    emit("arm-failed", arm=pending.name, reason="not run: %s" % failure)
    return summary.with_arm(pending.ended(FAILED, "not run: %s" % failure))


def _measure_raws(plan: RunPlan, arm: Arm, emit: Callable[..., None], worker_pool: Optional[WorkerPool], stamps: bool = False,
                  frames: bool = False) -> Tuple[List[Raw], List[WorkerRecord]]:
    """``([raw of each worker], each worker's record)``; ``stamps``: keep each wake's t0 (traced);
    ``frames``: publish the Python frames to perf while measuring (``--trace-frames``)."""
    execution = plan.execution
    if execution.in_process:
        reason = arm.unavailable_reason()
        if reason is not None:
            raise ArmUnavailable(reason)
        import wakelab.core.drivers as drivers
        from wakelab.harness.frames import published_frames

        recording = drivers.RECORD_T0
        drivers.RECORD_T0 = stamps
        try:
            with worker_conditions(plan.params, execution.conditions), published_frames(frames) as no_frames:
                raw = arm.measure(plan.params)
            if no_frames is not None:
                raw.info["frames_unavailable"] = no_frames
        finally:
            drivers.RECORD_T0 = recording
        problem = check_raw(raw, plan.params, arm.kind)
        if problem is not None:
            raise IncompleteReply("the arm %s" % problem)
        return [raw], []
    results = run_workers(
        arm.name,
        plan.params,
        execution.conditions,
        workers=execution.workers,
        python=execution.python,
        on_worker=lambda i, total: emit("worker-done", arm=arm.name, worker=i + 1, workers=total),
        pool=worker_pool,
        stamps=stamps,
        origin=execution.arm_origins.get(arm.name),
        frames=frames,
    )
    return [r.raw for r in results], [worker_record(r.raw, r.pid, r.applied) for r in results]


def _trace_arm(plan: RunPlan, arm: Arm, entry: ArmEntry, tracing: Tracing, emit: Callable[..., None],
               worker_pool: Optional[WorkerPool]) -> Tuple[ArmEntry, Optional[Dict[str, object]], Tracing]:
    """The traced pass of a measured arm (:func:`wakelab.harness.trace_pass.trace_arm`): ``entry`` with its
    ``trace``, the samples document to write in place of its own (None: none), and the run's tracing record."""

    def measure(plan: RunPlan, stamps: bool = False, frames: bool = False) -> Tuple[List[Raw], List[WorkerRecord]]:
        # Quietly: the arm was reported done; its workers' progress would count twice.
        return _measure_raws(plan, arm, lambda *args, **info: None, worker_pool, stamps=stamps, frames=frames)

    figures = entry.figures
    latency = figures.figures.latency if isinstance(figures, ArmFigures) else None
    p50 = latency.percentiles_ns.get("p50") if latency is not None else None
    record, doc, tracing = trace_arm(plan, arm, entry, p50, tracing, emit, measure)
    return dataclasses.replace(entry, trace=record), doc, tracing


def _write_samples(plan: RunPlan, entry: ArmEntry, doc: Mapping[str, object], emit: Callable[..., None]) -> ArmEntry:
    """Write the arm's samples file; ``entry`` naming it.  A write that fails fails the arm (its reason is
    the failure) and ends the run with :class:`WriteFailed`, which carries the failed entry."""
    try:
        return dataclasses.replace(entry, samples_file=bundle.write_samples(plan.folder, entry.name, doc))
    except OSError as exc:
        failed = entry.ended(FAILED, write_failure_reason(plan.folder, exc))
        emit("arm-failed", arm=entry.name, reason=failed.reason)
        raise WriteFailed(plan.folder, exc, failed) from None


def probe_workers(execution: Execution) -> Probe:
    """The interpreter the workers run, and its timer: described and calibrated here when they run this
    very interpreter (sparing a process), else as a probe of it found them."""
    if execution.in_process or (execution.python in (None, sys.executable) and not execution.worker_env()):
        return Probe(interpreter_info(), calibrate())
    return probe_interpreter(execution.python or sys.executable, env=execution.worker_env())


def refuse_open_loop(params: MeasureParams, arm: Arm) -> None:
    """:class:`ArmUnavailable` for an arm without an open-loop mode, in an open-loop run."""
    if params.mode == "open" and not arm.open_loop:
        raise ArmUnavailable("no open-loop mode: %s closed loop only" % ("the %s driver runs" % arm.driver if arm.driver else "this arm runs"))


def workers_in_repetition(execution: Execution, repetition: int) -> int:
    """How many of an arm's fresh workers run in ``repetition``: ``execution.workers`` in all,
    spread over the repetitions as evenly as possible, and at least one in each (so an arm
    has ``max(workers, repeat)`` workers)."""
    repeat = max(1, execution.repeat)
    counts = split_counts(max(execution.workers, repeat), repeat)
    return counts[repetition] if repetition < len(counts) else 1


def repetition_params(params: MeasureParams, kind: str, repeat: int, repetition: int) -> MeasureParams:
    """``params`` for one repetition: the counted wakes (rate arms: rounds) split between the
    repetitions as evenly as possible (see :func:`split_counts`)."""
    total = params.rounds if kind != LATENCY else params.n
    counts = split_counts(total, repeat)
    count = counts[repetition] if repetition < len(counts) else 0
    return dataclasses.replace(params, rounds=count) if kind != LATENCY else dataclasses.replace(params, n=count)


def _run_arm(plan: RunPlan, arm: Arm, entry: ArmEntry, emit: Callable[..., None], switch_interval_s: Optional[float],
             worker_pool: Optional[WorkerPool], taken: Optional[Taken] = None, repetition: int = 0, final: bool = True) -> ArmEntry:
    """Measure one repetition of ``arm``; ``entry`` with the figures of every repetition so far.
    The arm is ``ok`` once its ``final`` repetition is in."""
    taken = taken if taken is not None else Taken()
    repeat = max(1, plan.execution.repeat)
    params = arm_params(repetition_params(plan.params, arm.kind, repeat, repetition), arm, repetition, plan.execution)
    arm_started = time.perf_counter()
    try:
        refuse_open_loop(plan.params, arm)
        if (params.rounds if arm.kind != LATENCY else params.n) > 0:  # more repetitions than wakes: none left for this one
            execution = dataclasses.replace(plan.execution, workers=workers_in_repetition(plan.execution, repetition))
            raws, per_worker = _measure_raws(dataclasses.replace(plan, params=params, execution=execution), arm, emit, worker_pool)
        else:
            raws, per_worker = [], []
    except ArmUnavailable as exc:
        emit("arm-skipped", arm=arm.name, reason=str(exc))
        return entry.ended(SKIPPED, str(exc))
    except Exception as exc:  # one arm's failure never ends the run
        reason = "%s: %s" % (type(exc).__name__, exc)
        if repeat > 1:
            reason += " (repetition %d of %d)" % (repetition + 1, repeat)
        emit("arm-failed", arm=arm.name, reason=reason)
        return dataclasses.replace(entry.ended(FAILED, reason), wall_s=round(taken.wall_s + time.perf_counter() - arm_started, 6))
    taken.wall_s += time.perf_counter() - arm_started
    taken.add(repetition, raws, per_worker)
    if not taken.raws:
        if final:
            emit("arm-failed", arm=arm.name, reason="no repetition measured anything")
            return entry.ended(FAILED, "no repetition measured anything")
        return entry
    raw = pool_raws(taken.raws)
    entry = dataclasses.replace(entry, wall_s=round(taken.wall_s, 6))
    entry = _write_samples(plan, entry, bundle.samples_doc(arm.name, raw_to_dict(raw)), emit)
    jitter = params.settle_jitter_us if params.mode == "closed" else None
    entry = dataclasses.replace(entry, figures=arm_figures(raw, taken, arm.kind, repeat, switch_interval_s, jitter, arm.settles),
                                status=OK if final else entry.status)
    # Before the final repetition the figures are those of the repetitions so far.
    emit("arm-done", arm=arm.name, entry=entry.to_dict(), repetition=repetition, repetitions=repeat, final=final)
    return entry


def _finish(summary: RunSummary, started: float) -> RunSummary:
    """``summary`` as the run ends: when, how long, and whether it is complete."""
    summary = dataclasses.replace(summary, finished_utc=utc_now(), wall_s=round(time.perf_counter() - started, 3))
    return dataclasses.replace(summary, complete=not summary.interrupted and summary.is_complete())
