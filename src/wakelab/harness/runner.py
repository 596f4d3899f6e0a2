"""The runner: lab preset -> arms -> raw samples -> statistics -> evidence, as it goes.

The runner never prints.  It reports progress through an optional callback
and writes the evidence bundle after every arm (summary.txt only as the run
ends), so a crash or Ctrl-C leaves a valid ``summary.json`` with ``complete: false``.  Any ``KeyboardInterrupt``
ends a run the way Ctrl-C does; one with a ``signum`` attribute (the CLI
raises one for SIGTERM and SIGHUP) is recorded as that signal.  Exceptions from one arm are
caught and recorded as a failed arm; the run goes on with the next.

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
import datetime
import os
import signal
import sys
import time
import uuid
from typing import Any, Callable, Dict, Generator, List, Mapping, Optional, Sequence, Tuple

from wakelab import __version__
from wakelab.core.registry import get_arm
from wakelab.core.model import LATENCY, Arm, MeasureParams, Raw, RawLatency, RawRate, raw_to_dict
from wakelab.errors import OutputError
from wakelab.evidence import bundle
from wakelab.harness.clock import calibrate
from wakelab.harness.conditions import Conditions, run_conditions, worker_conditions
from wakelab.harness.metadata import interpreter_info, machine_info, system_info
from wakelab.harness.observed import Observer
from wakelab.harness.workers import (
    ArmUnavailable,
    IncompleteReply,
    WorkerPool,
    check_raw,
    pool_raws,
    probe_interpreter,
    run_workers,
    split_counts,
)
from wakelab.labs import Lab
from wakelab.analysis.caveats import derive_caveats
from wakelab.analysis.guidance import guidance_dict
from wakelab.analysis.components import component_series, reblock_series, split_wakes, summarize_components, why_untraceable
from wakelab.harness import trace as sched_trace
from wakelab.analysis.quality import derive_warnings, gil_contended, quality_flags
from wakelab.analysis.stats import cpu_split, repetition_spread, summarize_latency, summarize_rate

# Arm statuses in summary.json.
OK = "ok"
SKIPPED = "skipped"
FAILED = "failed"
INTERRUPTED = "interrupted"
PENDING = "pending"

ProgressCallback = Callable[[str, Dict[str, Any]], None]


class WriteFailed(Exception):
    """Writing the evidence folder failed (``error``: the OSError); the run stops."""

    def __init__(self, folder: str, error: OSError) -> None:
        self.folder = folder
        self.error = error
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

    def __init__(self, summary: Dict[str, Any], folder: str, signum: int = signal.SIGINT) -> None:
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
REPEAT_LIMITS = (1, 1000)


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
    arm_origins: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)

    def worker_env(self) -> Dict[str, str]:
        """The environment this execution's workers add to wakelab's own (PYTHONPATH: the folders)."""
        extra = dict(self.env)
        if self.pythonpath:
            extra["PYTHONPATH"] = os.pathsep.join(self.pythonpath)
        return extra

    def to_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {
            "mode": "in-process" if self.in_process else "workers",
            "workers": 1 if self.in_process else self.workers,
            "python": self.python or sys.executable,
            "repeat": self.repeat,
        }
        if self.trace:
            out["trace"] = True
        if self.trace_frames:
            out["trace_frames"] = True
        if self.rigorous:
            out["rigorous"] = True
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
    render_text: Optional[Callable[[Dict[str, Any]], str]] = None


def utc_now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


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


def _arm_entry(arm: Arm, params: MeasureParams) -> Dict[str, Any]:
    entry: Dict[str, Any] = dict(arm.describe())
    if arm.kind == LATENCY and arm.params_for(params).settle_jitter_us != params.settle_jitter_us:
        # The arm asked for a larger random part of the settle than the run's: say so where its figures are.
        entry["settle_jitter_us"] = arm.params_for(params).settle_jitter_us
    entry.update(
        {
            "status": PENDING,
            "reason": None,
            "requested": params.install_n * params.rounds if arm.kind != LATENCY else params.n,
            "warmup_discarded": None,
            "wall_s": None,
            "latency": None,
            "components": {},
            "rate": None,
            "samples_file": None,
            "info": {},
            "workers": [],
            "spread": None,
            "repetitions": None,
            "cpu_split": None,
            "quality": {},
        }
    )
    return entry


def summarize_raw(entry: Dict[str, Any], raw: Raw) -> None:
    """Fill an arm's figures in ``entry`` from its raw record."""
    if isinstance(raw, RawLatency):
        entry["latency"] = summarize_latency(raw.samples_ns, raw.lost).to_dict()
        entry["components"] = {
            name: summarize_latency(series).to_dict() for name, series in sorted(raw.components_ns.items())
        }
        entry["warmup_discarded"] = raw.warmup_discarded
    else:
        assert isinstance(raw, RawRate)
        entry["rate"] = summarize_rate(raw.n_per_round, raw.round_ns, raw.baseline_round_ns).to_dict()
        entry["warmup_discarded"] = raw.warmup_rounds
    entry["info"] = _jsonable(raw.info)


def _jsonable(value: object) -> object:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)


def took_every_sample(entry: Dict[str, Any]) -> bool:
    """True when a measured arm's figures account for every counted wake or operation requested.

    Latency: ``n + lost == requested``; rate: ``rounds x n_per_round == requested``.
    """
    requested = entry.get("requested")
    latency: Dict[str, Any] = entry.get("latency") or {}
    rate: Dict[str, Any] = entry.get("rate") or {}
    if entry.get("kind") == LATENCY:
        return bool(latency) and latency.get("n", 0) + latency.get("lost", 0) == requested
    return bool(rate) and rate.get("rounds", 0) * rate.get("n_per_round", 0) == requested


def is_complete(summary: Dict[str, Any]) -> bool:
    """True when at least one arm was measured, every measured arm took every sample it was
    asked for (:func:`took_every_sample`) and lost none, and no arm failed, was cut short or
    was not reached.  Arms skipped because they cannot run here do not count against it.
    """
    measured = 0
    for entry in summary["arms"]:
        status = entry["status"]
        if status == SKIPPED:
            continue
        if status != OK or not took_every_sample(entry):
            return False
        latency = entry.get("latency")
        if latency and latency.get("lost"):
            return False
        measured += 1
    return measured > 0


def new_summary(plan: RunPlan, interpreter: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """The summary document before any arm ran (``complete: false``)."""
    arms = [_arm_entry(get_arm(name), plan.params) for name in plan.arm_names]
    for entry in arms:  # a side of an A/B that loads a user arm from its own file says so
        if entry["name"] in plan.execution.arm_origins:
            entry["origin"] = dict(plan.execution.arm_origins[entry["name"]])
    return {
        "schema": bundle.SCHEMA_NAME,
        "schema_version": bundle.SCHEMA_VERSION,
        "tool": {"name": "wakelab", "version": __version__},
        "lab": {
            "id": plan.lab.id,
            "title": plan.lab.title,
            "question": plan.lab.question,
            "methodology": list(plan.lab.methodology),
            "limits": list(plan.lab.limits),
            "reproduce_script": plan.lab.reproduce_script,
            "comparisons": [
                {"a": c.a, "b": c.b}
                for c in plan.lab.comparisons
                if c.a in plan.arm_names and c.b in plan.arm_names
            ],
        },
        "run_id": uuid.uuid4().hex,
        "started_utc": utc_now(),
        "finished_utc": None,
        "wall_s": None,
        "complete": False,
        "interrupted": False,
        "command": list(plan.command),
        "note": plan.note,
        "parameters": plan.params.to_dict(),
        "execution": plan.execution.to_dict(),
        "conditions": plan.execution.conditions.to_dict(),
        "interpreter": interpreter if interpreter is not None else interpreter_info(),
        "machine": machine_info(),
        "system": system_info(),
        "timer": None,
        "arms": arms,
        "caveats": [],
        "warnings": [],
    }


def new_tracing(requested: bool) -> Dict[str, Any]:
    """The summary's ``tracing`` record before any arm ran."""
    return {
        "requested": requested,
        "traced": False,
        "reason": None if requested else "not asked for (wakelab run --trace)",
        "tool": "perf record -a -k CLOCK_MONOTONIC",
        "events": list(sched_trace.default_events()),
        "clock": "CLOCK_MONOTONIC",
        "overhead_method": "each traced arm is measured three times in this run: untraced (its figures), traced, and "
        "an untraced one after it brackets the traced pass; overhead = traced p50 / mean of the two untraced p50s",
    }


def run_plan(plan: RunPlan, progress: Optional[ProgressCallback] = None) -> Dict[str, Any]:
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


def finish_turns(turns: "Generator[Dict[str, Any], None, tuple]") -> tuple:
    """Run a :func:`run_turns` generator to its end; its ``(summary, write_error)``."""
    while True:
        try:
            next(turns)
        except StopIteration as stop:
            return stop.value


def run_turns(plan: RunPlan, progress: Optional[ProgressCallback] = None,
              take_turns: bool = False) -> "Generator[Dict[str, Any], None, tuple]":
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

    def _interrupted(exc: BaseException) -> RunInterrupted:
        """Ctrl-C (or another signal): the arms it cut marked, the evidence written, the exception to raise."""
        signum = interrupting_signal(exc)
        for entry in arms:
            # The arm being measured, and every arm with repetitions still to come.
            if entry["status"] == PENDING and (entry is current or _measured(entry)):
                entry["status"] = INTERRUPTED
                entry["reason"] = interruption_reason(signum)
        summary["interrupted"] = True
        summary["observed"] = observer.finish()
        _finish(summary, started)
        _write_quietly(write, summary, plan.folder)
        return RunInterrupted(summary, plan.folder, signum)

    plan = seeded(plan)
    write = bundle_writer(plan)

    started = time.perf_counter()
    execution = plan.execution
    if execution.in_process or (execution.python in (None, sys.executable) and not execution.worker_env()):
        # Workers run this very interpreter: describe and calibrate it here, sparing a process.
        interpreter, timer = interpreter_info(), calibrate()
    else:
        probed = probe_interpreter(execution.python or sys.executable, env=execution.worker_env())
        interpreter, timer = probed["interpreter"], probed["timer"]
    summary = new_summary(plan, interpreter)
    summary["timer"] = timer
    observer = Observer()  # what the machine did meanwhile: summary.json's observed, as the run ends
    if execution.trace:
        summary["tracing"] = new_tracing(True)
        reason = sched_trace.precheck()
        if reason is None:
            summary["tracing"]["traced"] = True
        else:
            summary["tracing"]["reason"] = reason
            emit("trace-unavailable", reason=reason)
    # Where tails cluster at multiples of this, another thread held the GIL.
    switch_interval_s = float(execution.conditions.switch_interval_s or interpreter.get("switch_interval_s") or 0.005)  # type: ignore[arg-type]
    arms: List[Dict[str, Any]] = summary["arms"]
    current: Optional[Dict[str, Any]] = None
    failure: Optional[Exception] = None  # a WriteFailed, or the RunStopped a grid threw in
    worker_pool = None if execution.in_process else WorkerPool(execution.python, env=execution.worker_env())
    try:
        try:
            # Replacing a bundle: nothing of the old one may pass for this run's evidence.
            bundle.clear_bundle(plan.folder)
        except OSError as exc:
            raise WriteFailed(plan.folder, exc) from None
        repeat = max(1, execution.repeat)
        taken: List[_Taken] = [_Taken() for _ in arms]

        def record_applied(applied: Dict[str, Any]) -> None:
            """What the conditions were, as the first pass found them."""
            summary["conditions"].update({"applied_" + k: v for k, v in applied.items()})
            write(summary, text=False)

        def one_pass(repetition: int) -> None:
            nonlocal current
            final = repetition == repeat - 1
            for index, entry in enumerate(arms):
                if entry["status"] in (SKIPPED, FAILED):
                    continue  # cannot run here, or broke in an earlier repetition
                current = entry
                arm = get_arm(str(entry["name"]))
                emit("arm-start", arm=arm.name, index=repetition * len(arms) + index, total=repeat * len(arms),
                     repetition=repetition, repetitions=repeat)
                # Tails at switch-interval multiples are looked for only where a busy Python thread
                # may hold the GIL the waiter needs.
                tail_interval_s = switch_interval_s if gil_contended(entry, summary) else None
                _run_arm(plan, arm, entry, emit, tail_interval_s, worker_pool, taken[index], repetition, final)
                if execution.trace and final and entry["status"] == OK:
                    write(summary, text=False)  # the arm's own figures are evidence before the traced pass starts
                    _trace_arm(plan, arm, entry, summary["tracing"], emit, worker_pool)
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
                    yield summary  # another cell's turn
    except KeyboardInterrupt as exc:
        raise _interrupted(exc) from None
    except (WriteFailed, RunStopped) as exc:
        failure = exc
    finally:
        if worker_pool is not None:
            worker_pool.close()
    if failure is None:
        try:
            summary["observed"] = observer.finish()
            _finish(summary, started)
            write(summary)
        except WriteFailed as exc:
            failure = exc
        except KeyboardInterrupt as exc:  # while the finished run is written: it ends interrupted all the same
            raise _interrupted(exc) from None
        else:
            return summary, None
    _end_on_write_failure(summary, failure, emit)
    summary["observed"] = observer.finish()
    _finish(summary, started)
    summary["complete"] = False
    _write_quietly(write, summary, plan.folder)  # may fail too: the last whole summary.json then stands
    bundle.remove_unnamed_samples(plan.folder)  # samples written for arms the summary on disk never named
    if not any(entry["status"] == OK or _measured(entry) for entry in arms):
        raise OutputError("%s; nothing was measured (free space or choose another folder with --output)" % failure) from failure
    return summary, failure


def _measured(entry: Dict[str, Any]) -> bool:
    """True when an arm has figures of at least one repetition."""
    return bool(entry.get("latency") or entry.get("rate"))


def bundle_writer(plan: RunPlan) -> Callable[..., None]:
    """``write(summary)``: the summary's caveats, warnings and guidance derived afresh, then
    summary.json and summary.txt written into the plan's folder; :class:`WriteFailed` on an OS
    error.  ``write(summary, text=False)`` (the runner's writes after each arm) writes
    summary.json alone: summary.txt is laid out when the run ends, however it ends, and
    ``wakelab show`` lays out a summary.json caught mid-run."""

    def write(summary: Dict[str, Any], text: bool = True) -> None:
        summary["caveats"] = derive_caveats(summary)
        summary["warnings"] = derive_warnings(summary)
        summary["guidance"] = guidance_dict(summary)
        rendered = None if plan.render_text is None or not text else plan.render_text(summary)
        try:
            bundle.write_bundle(plan.folder, summary, rendered)
        except OSError as exc:
            raise WriteFailed(plan.folder, exc) from None

    return write


def _write_quietly(write: Callable[[Dict[str, Any]], None], summary: Dict[str, Any], folder: str) -> None:
    """``write(summary)`` as a run ends, a failure ignored (the last whole summary.json stands).

    If it fails, summary.txt (a copy laid out for people, made again by
    ``wakelab show``) is removed, so that it can neither contradict
    summary.json nor hold the space the final summary.json needs, and
    summary.json alone is tried once more.
    """
    try:
        write(summary)
        return
    except WriteFailed:
        pass
    try:
        os.unlink(os.path.join(folder, bundle.SUMMARY_TXT))
    except OSError:
        pass
    try:
        bundle.write_bundle(folder, summary, None)
    except OSError:
        pass


def _end_on_write_failure(summary: Dict[str, Any], failure: Exception, emit: Callable[..., None]) -> None:
    """Blame the write failure on an arm: the one already marked by :func:`_run_arm` (its samples
    could not be written), else the first arm not yet run.  Later arms stay pending."""
    arms: List[Dict[str, Any]] = summary["arms"]
    for entry in arms:
        if entry["status"] == PENDING and _measured(entry):  # repetitions still to come
            entry["status"] = FAILED
            entry["reason"] = "cut short after %d repetitions: %s" % ((entry.get("repetitions") or {}).get("count", 0), failure)
            emit("arm-failed", arm=entry["name"], reason=entry["reason"])
    if any(entry["status"] == FAILED and entry.get("reason") == str(failure) for entry in arms):
        return
    pending = next((entry for entry in arms if entry["status"] == PENDING), None)
    if pending is not None:
        pending["status"] = FAILED
        pending["reason"] = "not run: %s" % failure
        emit("arm-failed", arm=pending["name"], reason=pending["reason"])


def _measure_raws(
    plan: RunPlan, arm: Arm, emit: Callable[..., None], worker_pool: Optional[WorkerPool], stamps: bool = False,
    frames: bool = False,
) -> tuple:
    """``([raw of each worker], per-worker figures)``; ``stamps``: keep each wake's t0 (traced);
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
    return [r.raw for r in results], [worker_figures(r.raw, r.pid, r.applied) for r in results]


def _trace_arm(
    plan: RunPlan,
    arm: Arm,
    entry: Dict[str, Any],
    tracing: Dict[str, Any],
    emit: Callable[..., None],
    worker_pool: Optional[WorkerPool],
) -> None:
    """The traced pass of a measured arm: ``entry["trace"]``, and the samples file's ``traced`` part.

    Never fails the arm: whatever goes wrong is recorded as the reason the
    arm was not split.  A session perf cannot start ends tracing for the run.
    """
    if not tracing.get("traced"):
        entry["trace"] = {"traced": False, "reason": tracing.get("reason")}
        return
    reason = why_untraceable(entry)
    if reason is None and plan.params.mode != "closed":
        reason = "open loop: wakes are matched to notifies after the fact, so no wake has one t0 to split from"
    if reason is None and not arm.driver:
        reason = "this arm has no driver that reports its waiter's thread"
    if reason is not None:
        entry["trace"] = {"traced": False, "reason": reason}
        return
    emit("arm-trace", arm=arm.name)
    plan = dataclasses.replace(plan, params=arm_params(plan.params, arm))
    # --trace-frames: a C floor's threads have no Python frames, and an interpreter that said it
    # cannot publish them is not sampled again.
    frames = plan.execution.trace_frames and arm.family != "native" and not tracing.get("frames_unavailable")
    session = sched_trace.SchedTrace(frames=frames)
    try:
        try:
            session.start()
        except sched_trace.TraceUnavailable as exc:
            tracing["traced"] = False
            tracing["reason"] = str(exc)
            emit("trace-unavailable", reason=str(exc))
            entry["trace"] = {"traced": False, "reason": str(exc)}
            return
        started = time.perf_counter()
        try:
            # Quietly: the arm was reported done; its workers' progress would count twice.
            raws, figures = _measure_raws(plan, arm, lambda *args, **info: None, worker_pool, stamps=True, frames=frames)
        finally:
            session.stop()
        wall_s = round(time.perf_counter() - started, 6)
        traced = _split_traced(session, raws, figures)
        # The machine drifts between passes: an untraced pass after the traced one brackets it.
        after, _ = _measure_raws(plan, arm, lambda *args, **info: None, worker_pool)
        after_p50 = summarize_latency(pool_raws(after).samples_ns).percentiles_ns.get("p50")  # type: ignore[union-attr]
    except KeyboardInterrupt:
        raise
    except NotSplit as exc:
        entry["trace"] = {"traced": False, "reason": str(exc)}
        return
    except Exception as exc:  # the arm's own figures stand; say why it was not split
        entry["trace"] = {"traced": False, "reason": "the traced pass failed: %s: %s" % (type(exc).__name__, exc)}
        return
    finally:
        data_bytes = session.data_bytes()
        session.close()
    samples: List[int] = traced["samples_ns"]
    untraced_p50 = (entry.get("latency") or {}).get("p50_ns")
    traced_stats = summarize_latency(samples, traced["lost"]).to_dict()
    traced_p50 = _opt_number(traced_stats.get("p50_ns"))
    baselines = [v for v in (untraced_p50, after_p50) if isinstance(v, (int, float)) and v > 0]
    baseline = sum(baselines) / len(baselines) if baselines else None
    entry["trace"] = {
        "traced": True,
        "reason": None,
        "wall_s": wall_s,
        "perf_data_bytes": data_bytes,
        "events": traced["events"],
        "lost_events": session.lost_events,
        "latency": traced_stats,
        "overhead": {
            "untraced_p50_ns": untraced_p50,
            "untraced_after_p50_ns": after_p50,
            "traced_p50_ns": traced_p50,
            # Against the mean of the untraced passes before and after the traced one.
            "ratio": round(traced_p50 / baseline, 4) if baseline and traced_p50 is not None else None,
        },
        "components": summarize_components(samples, traced["splits"]),
    }
    if plan.execution.trace_frames:
        from wakelab.analysis.frames import not_sampled

        if frames:
            entry["trace"]["frames"] = traced["frames"]
            if not traced["frames"].get("sampled"):
                tracing["frames_unavailable"] = traced["frames"].get("reason")
        else:
            entry["trace"]["frames"] = not_sampled(
                "a C floor: its threads run no Python" if arm.family == "native" else str(tracing.get("frames_unavailable")))
    doc = bundle.samples_doc(arm.name, raw_to_dict(pool_raws(raws)))
    base = entry.get("samples_file")
    if base:  # keep the untraced samples the arm's figures come from; add the traced pass beside them
        doc = _untraced_doc(plan.folder, arm.name, base) or doc
    doc["traced"] = {
        "samples_ns": samples,
        "components_ns": component_series(traced["splits"]),
        "reblocks_ns": reblock_series(traced["splits"]),
        "components": list(traced["order"]),
        "unit": "ns",
    }
    _write_samples(plan, arm, entry, doc, emit)


class NotSplit(RuntimeError):
    """The driver says why its wakes cannot be split (the message), after the traced pass."""


def _opt_number(value: object) -> Optional[float]:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _write_samples(plan: RunPlan, arm: Arm, entry: Dict[str, Any], doc: Dict[str, Any], emit: Callable[..., None]) -> None:
    """Write the arm's samples file and name it in ``entry``; a write that fails fails the arm
    (its reason is the failure) and ends the run with :class:`WriteFailed`."""
    try:
        entry["samples_file"] = bundle.write_samples(plan.folder, arm.name, doc)
    except OSError as exc:
        failure = WriteFailed(plan.folder, exc)
        entry["status"] = FAILED
        entry["reason"] = str(failure)
        emit("arm-failed", arm=arm.name, reason=entry["reason"])
        raise failure from None


def _untraced_doc(folder: str, arm_name: str, relative: str) -> Optional[Dict[str, Any]]:
    """The samples document the untraced pass wrote (None if it cannot be read back)."""
    import json

    try:
        with open(os.path.join(folder, relative), "rb") as fh:
            doc = json.load(fh)
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and doc.get("arm") == arm_name else None


def _split_traced(session: sched_trace.SchedTrace, raws: Sequence[Raw], figures: Sequence[Dict[str, Any]] = ()) -> Dict[str, Any]:
    """Every worker's wakes split at its waiter's events, pooled in worker order (``figures``:
    each worker's, whose ``applied`` names its busy threads)."""
    from wakelab.analysis.components import COMPONENTS
    from wakelab.analysis.frames import count_frames, not_sampled, summarize_frames
    from wakelab.analysis.reblocks import context_from, gil_releases
    from wakelab.harness.frames import SAMPLE_HZ, remove_maps

    tids = set()
    for raw in raws:
        for key in ("waiter_tid", "notifier_tid"):
            value = raw.info.get(key)
            if isinstance(value, int):
                tids.add(value)
    busy = [list((f.get("applied") or {}).get("cpu_thread_tids") or ()) for f in figures]
    tids.update(t for worker in busy for t in worker if isinstance(t, int))  # who lets go of the GIL
    by_tid = session.events(tids)
    samples: List[int] = []
    splits: List[Any] = []
    lost = 0
    frame_counts: Dict[str, Dict[str, int]] = {}
    no_frames: Optional[str] = None
    for index, raw in enumerate(raws):
        assert isinstance(raw, RawLatency)
        info = raw.info
        t0s = info.pop("wake_t0_ns", None)  # bulky: in the samples file's traced part, not in info
        tid = info.get("waiter_tid")
        if isinstance(info.get("not_split"), str):
            raise NotSplit(str(info["not_split"]))
        if not isinstance(t0s, list) or len(t0s) != len(raw.samples_ns) or not isinstance(tid, int):
            raise RuntimeError("the traced worker did not report its waiter's thread and each wake's t0")
        notifier = info.get("notifier_tid")
        context = context_from(info, busy[index] if index < len(busy) else ())
        others = [e for t in {notifier, *context.busy_tids} if isinstance(t, int) for e in by_tid.get(t, []) if e.tid == t]
        context = dataclasses.replace(context, gil_releases=gil_releases(others, context))
        info.pop("interpreter_data", None)  # where the GIL lives: used here, not kept in summary.json
        these = split_wakes(by_tid.get(tid, []), tid, t0s, raw.samples_ns, notifier if isinstance(notifier, int) else None,
                            context)
        splits.extend(these)
        if session.frames:
            if isinstance(info.get("frames_unavailable"), str):
                no_frames = str(info.pop("frames_unavailable"))
            count_frames(session.samples, tid, notifier if isinstance(notifier, int) else None, t0s, raw.samples_ns,
                         [split.parts_ns["notify"] for split in these], frame_counts)
        samples.extend(raw.samples_ns)
        lost += raw.lost
    if session.frames:  # the workers' trampoline names, read by perf script: no longer needed
        # Only this run's processes: those of the events its own threads raised, and its workers.
        remove_maps({e.tgid for tid, events in by_tid.items() for e in events if e.tid == tid}
                    | {int(f["pid"]) for f in figures if f.get("pid")})
    return {
        "frames": not_sampled(no_frames) if no_frames else summarize_frames(frame_counts, SAMPLE_HZ),
        "samples_ns": samples,
        "lost": lost,
        "splits": splits,
        "order": COMPONENTS,
        "events": sum(len(v) for k, v in by_tid.items() if any(r.info.get("waiter_tid") == k for r in raws)),
    }


@dataclasses.dataclass
class _Taken:
    """What an arm's repetitions measured so far: every worker's raw record in order, their
    figures (each with its ``repetition``), and each repetition's pooled median."""

    raws: List[Raw] = dataclasses.field(default_factory=list)
    figures: List[Dict[str, Any]] = dataclasses.field(default_factory=list)
    medians: List[Optional[float]] = dataclasses.field(default_factory=list)
    wall_s: float = 0.0


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


def _run_arm(
    plan: RunPlan,
    arm: Arm,
    entry: Dict[str, Any],
    emit: Callable[..., None],
    switch_interval_s: Optional[float],
    worker_pool: Optional[WorkerPool],
    taken: Optional[_Taken] = None,
    repetition: int = 0,
    final: bool = True,
) -> None:
    """Measure one repetition of ``arm`` and publish the figures of every repetition so far in
    ``entry``; the arm is ``ok`` once its ``final`` repetition is in."""
    taken = taken if taken is not None else _Taken()
    repeat = max(1, plan.execution.repeat)
    params = arm_params(repetition_params(plan.params, arm.kind, repeat, repetition), arm, repetition, plan.execution)
    arm_started = time.perf_counter()
    try:
        if plan.params.mode == "open" and not arm.open_loop:
            raise ArmUnavailable(
                "no open-loop mode: %s closed loop only" % ("the %s driver runs" % arm.driver if arm.driver else "this arm runs")
            )
        if (params.rounds if arm.kind != LATENCY else params.n) > 0:  # more repetitions than wakes: none left for this one
            execution = dataclasses.replace(plan.execution, workers=workers_in_repetition(plan.execution, repetition))
            raws, per_worker = _measure_raws(dataclasses.replace(plan, params=params, execution=execution), arm, emit, worker_pool)
        else:
            raws, per_worker = [], []
    except ArmUnavailable as exc:
        entry["status"] = SKIPPED
        entry["reason"] = str(exc)
        emit("arm-skipped", arm=arm.name, reason=entry["reason"])
        return
    except Exception as exc:  # one arm's failure never ends the run
        entry["status"] = FAILED
        entry["reason"] = "%s: %s" % (type(exc).__name__, exc)
        if repeat > 1:
            entry["reason"] += " (repetition %d of %d)" % (repetition + 1, repeat)
        entry["wall_s"] = round(taken.wall_s + time.perf_counter() - arm_started, 6)
        emit("arm-failed", arm=arm.name, reason=entry["reason"])
        return
    taken.wall_s += time.perf_counter() - arm_started
    for figure in per_worker:
        figure["repetition"] = repetition
    taken.raws.extend(raws)
    taken.figures.extend(per_worker)
    if raws:
        taken.medians.append(_pooled_median(raws))
    if not taken.raws:
        if final:
            entry["status"] = FAILED
            entry["reason"] = "no repetition measured anything"
            emit("arm-failed", arm=arm.name, reason=entry["reason"])
        return
    raw = pool_raws(taken.raws)
    entry["wall_s"] = round(taken.wall_s, 6)
    _write_samples(plan, arm, entry, bundle.samples_doc(arm.name, raw_to_dict(raw)), emit)
    summarize_raw(entry, raw)
    if isinstance(raw, RawLatency):
        jitter = params.settle_jitter_us if params.mode == "closed" else None
        entry["quality"] = _jsonable(quality_flags(raw.samples_ns, switch_interval_s, settle_jitter_us=jitter))
        entry["cpu_split"] = cpu_split(raw.samples_ns, raw.waiter_cpus, raw.notifier_cpus)
    entry["workers"] = list(taken.figures)
    # With repetitions, the spread that matters is between them (each pools its workers' wakes).
    entry["spread"] = worker_spread(taken.figures) if repeat == 1 else repetitions_spread(taken.medians, arm.kind)
    entry["repetitions"] = {"count": len(taken.medians), "of": "p50_ns" if arm.kind == LATENCY else "ops_per_s",
                            "spread": repetition_spread(taken.medians)}
    if final:
        entry["status"] = OK
    emit("arm-done", arm=arm.name, entry=entry)


def _pooled_median(raws: Sequence[Raw]) -> Optional[float]:
    """One repetition's own median: p50 of its workers' pooled wakes, or its rate arm's ops/s."""
    raw = pool_raws(raws)
    if isinstance(raw, RawLatency):
        return summarize_latency(raw.samples_ns).percentiles_ns.get("p50")
    assert isinstance(raw, RawRate)
    return summarize_rate(raw.n_per_round, raw.round_ns, raw.baseline_round_ns).ops_per_s


def worker_figures(raw: Raw, pid: int, applied: Dict[str, Any]) -> Dict[str, Any]:
    """One worker's own figures, kept beside the pooled ones to show the spread."""
    figures: Dict[str, Any] = {"pid": pid, "applied": _jsonable(applied)}
    if isinstance(raw, RawLatency):
        stats = summarize_latency(raw.samples_ns, raw.lost)
        figures.update(n=stats.n, lost=stats.lost, p50_ns=stats.percentiles_ns.get("p50"), max_ns=stats.max_ns)
    else:
        rate = summarize_rate(raw.n_per_round, raw.round_ns, raw.baseline_round_ns)
        figures.update(rounds=rate.rounds, ops_per_s=rate.ops_per_s)
    return figures


def worker_spread(workers: Sequence[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """How far apart the workers' medians are (None with fewer than two workers)."""
    key = "p50_ns" if workers and "p50_ns" in workers[0] else "ops_per_s"
    values = [float(w[key]) for w in workers if w.get(key) is not None]
    if len(values) < 2 or min(values) <= 0:
        return None
    return {"of": key, "min": min(values), "max": max(values), "max_over_min": round(max(values) / min(values), 4)}


def repetitions_spread(medians: Sequence[Optional[float]], kind: str) -> Optional[Dict[str, Any]]:
    """How far apart the repetitions' own medians are, in :func:`worker_spread`'s form."""
    key = "p50_ns" if kind == LATENCY else "ops_per_s"
    spread = worker_spread([{key: m} for m in medians])
    if spread is not None:
        spread["between"] = "repetitions"
    return spread


def _finish(summary: Dict[str, Any], started: float) -> None:
    summary["finished_utc"] = utc_now()
    summary["wall_s"] = round(time.perf_counter() - started, 3)
    summary["complete"] = (not summary["interrupted"]) and is_complete(summary)

