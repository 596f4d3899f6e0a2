"""``wakelab run``: run a lab and write its evidence bundle."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import sys
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, TYPE_CHECKING

from wakelab.commands import EXIT_ARM_FAILED, EXIT_INTERRUPTED, EXIT_OK, raise_if_interrupted
from wakelab.evidence.model import DEFAULT_REPEAT
from wakelab.core.model import DEFAULT_SETTLE_JITTER_US, RIGOROUS_FACTOR, RIGOROUS_WORKERS_PER_REPETITION
from wakelab.commands._options import (is_utf8, not_utf8_message, number_in, parsed_by, path_value, suggest_long_options,
                                       usage_errors, utf8_text, whole_number)
from wakelab.commands.history import add_history_option
from wakelab.errors import EvidenceError, OutputError, UsageError

if TYPE_CHECKING:
    from wakelab.core.model import MeasureParams
    from wakelab.evidence.model import Bundle
    from wakelab.evidence.matrix import MatrixDoc
    from wakelab.harness.runner import Execution, ProgressCallback
    from wakelab.labs import Lab

DEFAULT_RUNS_DIR = "wakelab-runs"
DEFAULT_LAB = "135-signal-vs-event-wakeup"
ARM_FILE_AS_TEXT = "an arm file's path is recorded as text in the evidence: give a UTF-8 path"
# Why a path that is not valid UTF-8 is refused up front rather than carried through.
FOLDER_AS_TEXT = "the folder's name is recorded as text in the evidence and the history: choose a UTF-8 name"
INTERPRETER_AS_TEXT = "the interpreter's path is recorded as text in the evidence: give a UTF-8 path"

# Bounds of the numeric options: beyond them a value is a typo, not a plan.
LIMITS = {
    "n": (1, 1_000_000), "warmup": (0, 100_000), "settle_us": (0, 10_000_000), "settle_jitter_us": (0, 10_000_000),
    "seed": (0, 2**63 - 1), "install_n": (1, 100_000_000), "rounds": (1, 1_000), "planted_delay_us": (0, 1_000_000),
    "workers": (1, 64), "repeat": (1, 1000), "cpu_threads": (0, 64), "cpu_procs": (0, 64), "interval_us": (1, 10_000_000),
    "cpu": (0, 4095), "priority": (0, 99),
}
TIMEOUT_LIMITS = (0.001, 3600.0)
SWITCH_INTERVAL_LIMITS = (1e-6, 1.0)


def _whole_number(option: str) -> Callable[[str], int]:
    return whole_number(*LIMITS[option])


def _list_of(parse_one: Callable[[str], object], what: str) -> Callable[[str], List[object]]:
    def parse(text: str) -> List[object]:
        items = [item.strip() for item in text.split(",")]
        if not all(items):
            raise argparse.ArgumentTypeError("expected a comma-separated list of %s, got %r" % (what, text))
        values = [parse_one(item) for item in items]
        if len(set(map(str, values))) != len(values):
            raise argparse.ArgumentTypeError("a value is listed twice in %r" % text)
        return values

    return parse


def _placement(text: str) -> str:
    from wakelab.core.placement import PLACEMENTS
    from wakelab.core.registry import did_you_mean

    if text not in PLACEMENTS:
        suggestion = did_you_mean(text, PLACEMENTS)
        raise argparse.ArgumentTypeError("expected %s, got %r%s" % (", ".join(PLACEMENTS), text, " (%s)" % suggestion if suggestion else ""))
    return text


_switch_interval = number_in("a number of seconds", lambda v: SWITCH_INTERVAL_LIMITS[0] <= v <= SWITCH_INTERVAL_LIMITS[1],
                             "between %g and %g seconds" % SWITCH_INTERVAL_LIMITS)
_seconds = number_in("a number of seconds", lambda v: TIMEOUT_LIMITS[0] <= v <= TIMEOUT_LIMITS[1],
                     "between %s and %s seconds" % TIMEOUT_LIMITS)
_duration = parsed_by("wakelab.harness.soak", "parse_duration_s")


def register(sub: Any) -> None:
    run = sub.add_parser("run", help="run a lab and write its evidence bundle",
                         description="Run a lab (default: Lab 135, the original signal vs threading.Event lab) and write summary.json, "
                                     "summary.txt and the raw samples into a new folder. Options not given take the lab's defaults.")
    run.add_argument("--lab", type=utf8_text(), help="lab preset (default: %s; see 'wakelab list')" % DEFAULT_LAB)
    arms = run.add_argument("--arms", type=utf8_text(), metavar="A,B,...", help="comma-separated arms to run instead of the lab's own; another choice than the lab's is "
                          "recorded as a lab of its own, 'custom', with the lab's parameters. A name that is neither built "
                          "in nor in an --arm-file is looked up in the installed packages' 'wakelab.arms' entry points")
    run.add_argument("--arm-file", action="append", metavar="PATH", type=path_value("a Python file", ARM_FILE_AS_TEXT),
                     help="load your own arms from this Python file (repeatable; the API is wakelab.api.v1, see "
                          "'pydoc wakelab.api.v1'). Without --arms the files' arms are run (after the lab's own "
                          "when --lab is given); the evidence records each file's path and sha256")
    # "--arm" stays the abbreviation of --arms it always was (beside --arm-file argparse would call it
    # ambiguous); registered by hand so that it is neither in --help nor offered as a suggestion.
    run._option_string_actions["--arm"] = arms
    run.add_argument("-n", "--n", type=_whole_number("n"), metavar="N", help="counted wakes per latency arm (lab 135: 200)")
    run.add_argument("--warmup", type=_whole_number("warmup"), metavar="N", help="warm-up wakes discarded per latency arm (default 10)")
    run.add_argument("--settle-us", type=_list_of(_whole_number("settle_us"), "microseconds"), metavar="US[,US...]",
                     help="quiet time after a blocked waiter announces its wait, before t0 (default 1000); "
                          "several values sweep it, one cell each")
    run.add_argument("--settle-jitter-us", type=_whole_number("settle_jitter_us"), metavar="US",
                     help="random part of every settle, drawn afresh for each wake from 0..US (default %d). It reveals "
                          "a wait that polls instead of blocking (sleeps P between checks) when US spans P: the default "
                          "shows polls of up to about 2 ms and costs 1 ms a blocked wake on average; raise it above a "
                          "longer period to see it (10 ms: 12000); 0 gives every wake the same settle, which locks onto "
                          "a poll's phase and hides it" % DEFAULT_SETTLE_JITTER_US)
    run.add_argument("--seed", type=_whole_number("seed"), metavar="N",
                     help="seed of the random settles (default: drawn for the run and recorded in summary.json, so "
                          "that --seed N repeats a run's settles wake for wake)")
    run.add_argument("--timeout-s", type=_seconds, metavar="S", help="bound on every wait; a wake not seen by then is lost (default 1.0)")
    run.add_argument("--install-n", type=_whole_number("install_n"), metavar="N", help="calls per round of a rate arm (lab 135: 20000)")
    run.add_argument("--rounds", type=_whole_number("rounds"), metavar="R", help="counted rounds of a rate arm (lab 135: 7)")
    run.add_argument("--planted-delay-us", type=_whole_number("planted_delay_us"), metavar="US",
                     help="self-test: wait this long between t0 and every notify (sleeping, spinning only its last 200 µs, so "
                          "the wait holds no GIL the waiter needs); every figure must grow by it")
    conditions = run.add_argument_group("conditions (a comma-separated list runs one cell per value, side by side)")
    conditions.add_argument("--placement", type=_list_of(_placement, "placements"), metavar="P[,P...]",
                            help="any (unpinned, default), same (notifier and waiter on one CPU) or split (different CPUs)")
    conditions.add_argument("--cpus", type=_list_of(_whole_number("cpu"), "CPU numbers"), metavar="A[,B]",
                            help="the CPU for --placement same, or the notifier's and waiter's CPUs for split (default: the first allowed)")
    conditions.add_argument("--cpu-threads", type=_list_of(_whole_number("cpu_threads"), "thread counts"), metavar="N[,N...]",
                            help="busy Python threads beside the waiter, competing for the GIL (default 0)")
    conditions.add_argument("--cpu-procs", type=_whole_number("cpu_procs"), metavar="N",
                            help="busy processes on the machine for the whole run (default 0)")
    conditions.add_argument("--switch-interval", type=_switch_interval, metavar="S",
                            help="sys.setswitchinterval for the measuring process (default: the interpreter's, 0.005)")
    conditions.add_argument("--idle-hold", action="store_true",
                            help="hold /dev/cpu_dma_latency at 0 during the run so idle CPUs stay shallow (needs root)")
    conditions.add_argument("--policy", choices=("fifo", "rr", "other"),
                            help="scheduling policy of the waiter thread (thread-driver arms, and the C floor's waiter), "
                                 "set by the thread itself: fifo or rr are realtime and need root or RLIMIT_RTPRIO "
                                 "(refused up front otherwise); other is the normal policy. Restored after every arm")
    conditions.add_argument("--priority", type=_whole_number("priority"), metavar="N",
                            help="the waiter's realtime priority with --policy fifo or rr (1..99; cyclictest's -p)")
    conditions.add_argument("--notifier-policy", choices=("fifo", "rr", "other"),
                            help="scheduling policy of the notifier (the measuring process's main thread, and the C "
                                 "floor's notifier), as --policy; restored after every arm")
    conditions.add_argument("--notifier-priority", type=_whole_number("priority"), metavar="N",
                            help="the notifier's realtime priority with --notifier-policy fifo or rr (1..99)")
    conditions.add_argument("--mlock", action="store_true",
                            help="lock the measuring process's memory (mlockall(MCL_CURRENT|MCL_FUTURE), as cyclictest "
                                 "-m) for every arm; needs root or an unlimited RLIMIT_MEMLOCK")
    conditions.add_argument("--mode", choices=("closed", "open"),
                            help="closed (default): notify once the waiter has settled, latency from t0; open: notify on a "
                                 "fixed schedule and take latency from the scheduled instant (no coordinated omission); thread, signal "
                                 "and process arms have it, asyncio and C arms are skipped")
    conditions.add_argument("--interval-us", type=_whole_number("interval_us"), metavar="US",
                            help="open-loop schedule period (default 1000)")
    execution = run.add_argument_group("execution")
    execution.add_argument("--duration", type=_duration, metavar="TIME",
                           help="soak: run one latency arm until TIME is up (90s, 30m, 2h, 1h30m; a bare number is seconds; cyclictest's -D) instead "
                                "of for --n wakes, in consecutive fresh workers; raw samples are kept up to 1,000,000, "
                                "every wake goes into a log-linear histogram (3 significant digits) that the percentiles "
                                "come from beyond that, as the evidence says; the bundle is checkpointed every 10 s")
    execution.add_argument("--workers", type=_whole_number("workers"), metavar="N",
                           help="fresh worker processes per arm, spread over the repetitions (at least one in each); "
                                "the wakes are split between them and pooled (default 3, and never fewer than the repetitions: 5 with the "
                                "default --repeat 5)")
    execution.add_argument("--repeat", type=_whole_number("repeat"), metavar="R",
                           help="measure every arm in R passes over all the arms, one after another, each in fresh "
                                "workers, so that a drift over the run reaches every arm alike; the wakes are split "
                                "between the passes, and compare resamples the workers (default %d; 1..1000)" % DEFAULT_REPEAT)
    execution.add_argument("--rigorous", action="store_true",
                           help="compare-grade: %d times the lab's counted wakes (--n) and rounds (--rounds), and %d fresh "
                                "workers per repetition, so that compare can tell smaller changes (an --n, --rounds or "
                                "--workers given wins)" % (RIGOROUS_FACTOR, RIGOROUS_WORKERS_PER_REPETITION))
    execution.add_argument("--in-process", action="store_true", help="measure in this process instead of workers (debugging: no stall watch, and off a "
                                "terminal no 'still measuring' lines, as a thread beside the arm would disturb it)")
    execution.add_argument("--trace", action="store_true",
                           help="also split every wake into notify path, scheduler, GIL wait and interpreter, from the "
                                "kernel's scheduler events (perf; needs root or kernel.perf_event_paranoid=-1): each "
                                "latency arm is measured twice more, traced and then untraced again, for the overhead; "
                                "without permission the run goes on untraced")
    execution.add_argument("--trace-frames", action="store_true",
                           help="with --trace (implied): also sample every CPU (perf, 20 kHz, call chains) and split the "
                                "notify path and the waiter's own work by Python function, where the interpreter "
                                "publishes its frames to perf (CPython 3.12+ built with frame pointers, as 3.15 is); "
                                "elsewhere one line says why")
    execution.add_argument("--python", action="append", metavar="PYTHON", type=utf8_text(why=INTERPRETER_AS_TEXT),
                           help="interpreter to measure with (repeatable: one cell each): a path; a command on PATH "
                                "(python3.12); a release (3.14 takes the GIL build, 3.14t the free-threaded one, and of "
                                "several patch releases the newest) or a label 'wakelab interpreters' prints "
                                "(cpython-3.15.2, pypy); or 'all', every usable one -- CPython >= 3.9, free-threaded "
                                "builds and PyPy -- on PATH, in pyenv, uv and conda folders, $WAKELAB_INTERPRETERS and "
                                "the interpreter cache; the free-threading lab takes a GIL build, its free-threaded build "
                                "and that with PYTHON_GIL=1 when none is given")
    run.add_argument("-o", "--output", metavar="DIR", type=path_value("a folder", FOLDER_AS_TEXT),
                     help="evidence folder; an existing bundle there is replaced (default: a new folder under ./%s/)" % DEFAULT_RUNS_DIR)
    output = run.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print summary.json to stdout instead of summary.txt")
    output.add_argument("--full", action="store_true",
                        help="print the whole summary.txt to stdout, on a terminal too (the default off a terminal: "
                             "pipes and files get the full text)")
    output.add_argument("--brief", action="store_true",
                        help="print the short summary (verdict, guidance headline, compact table, where the full text "
                             "is), off a terminal too (the default on a terminal); a grid prints its matrix either way")
    run.add_argument("--note", type=utf8_text(), help="free text recorded in the evidence (for example where the run was made)")
    run.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    add_history_option(run, no_history=True)
    run.set_defaults(handler=cmd_run, looks_again=True)
    suggest_long_options(run)


def _load_user_arms(args: argparse.Namespace) -> List[str]:
    from wakelab.core.user_arms import ArmFileError, load_arm_file

    files = list(args.arm_file or [])
    real = [os.path.realpath(path) for path in files]
    for index, path in enumerate(real):
        if path in real[:index]:
            raise UsageError("--arm-file names %s twice" % files[index])
    names: List[str] = []
    for path in files:
        with usage_errors(ArmFileError):
            names += [arm.name for arm in load_arm_file(path)]
    return names


def _resolve_arms(args: argparse.Namespace, lab: Lab, file_arms: Sequence[str] = ()) -> List[str]:
    from wakelab.core.registry import UnknownArmError
    from wakelab.core.user_arms import ArmFileError, require_arms
    from wakelab.labs import CUSTOM_ID, lab_arm_names

    if args.arms is None:
        if file_arms and args.lab is None:
            return list(file_arms)  # the files' arms, and nothing the user did not ask for
        if lab.id == CUSTOM_ID:
            raise UsageError("--lab %s needs --arms A,B,... (the arms to run)" % CUSTOM_ID)
        names = lab_arm_names(lab)
        return names + [name for name in file_arms if name not in names]
    names = [name.strip() for name in args.arms.split(",") if name.strip()]
    if not names:
        raise UsageError("--arms needs at least one arm name")
    with usage_errors(ArmFileError, UnknownArmError):
        require_arms(names)
    if len(set(names)) != len(names):
        raise UsageError("--arms names an arm twice")
    return names


def _params(args: argparse.Namespace, defaults: MeasureParams) -> MeasureParams:
    given = ("n", "warmup", "timeout_s", "install_n", "rounds", "planted_delay_us", "mode", "interval_us", "settle_jitter_us", "seed")
    from wakelab.harness.runner import rigorous_params

    overrides = {field: getattr(args, field) for field in given if getattr(args, field) is not None}
    params = dataclasses.replace(rigorous_params(defaults, overrides) if getattr(args, "rigorous", False) else defaults, **overrides)
    if params.planted_delay_us / 1e6 >= params.timeout_s:
        raise UsageError("--planted-delay-us must be shorter than --timeout-s, or every wake would be lost")
    return params


def _output_folder(args: argparse.Namespace, stem: str) -> str:
    """``--output``, or a new folder under ./wakelab-runs/ named ``STEM-<UTC time>``, ready for a bundle."""
    from wakelab.evidence import bundle
    from wakelab.harness.runner import utc_now

    try:
        if args.output:
            return bundle.prepare_output_folder(args.output)
        stamp = utc_now().replace("-", "").replace(":", "")
        folder = bundle.create_unique_folder(DEFAULT_RUNS_DIR, "%s-%s" % (stem, stamp))
        return bundle.prepare_output_folder(folder)
    except OSError as exc:
        target = args.output or DEFAULT_RUNS_DIR
        raise OutputError("cannot write evidence to %s: %s (choose another folder with --output)" % (target, exc.strerror or exc)) from None


def _pythons(args: argparse.Namespace, lab: Lab) -> Sequence[Tuple[Optional[str], Optional[str]]]:
    """``[(path or None, label or None)]`` for the --python options (None: this interpreter); without
    --python, the lab's own interpreters (the free-threading lab's three columns)."""
    from wakelab.harness.interpreters import choose_pythons, free_threading_pythons

    if args.python and args.in_process:
        raise UsageError("--in-process measures in this interpreter; drop --python or --in-process")
    if args.python:
        with usage_errors(ValueError, OSError):
            return choose_pythons(args.python)
    if lab.grid is None or not lab.grid.pythons or args.in_process:
        return [(None, None)]
    try:
        return free_threading_pythons()
    except (ValueError, OSError) as exc:
        raise UsageError("--lab %s: %s" % (lab.id, exc)) from None


def _placements(args: argparse.Namespace, lab: Lab) -> List[Tuple[str, Optional[int], Optional[int]]]:
    from wakelab.core.placement import PlacementError, resolve_placements

    with usage_errors(PlacementError):
        return resolve_placements(args.placement or (lab.grid is not None and lab.grid.placements) or ["any"], args.cpus)


def _execution(args: argparse.Namespace) -> Execution:
    from wakelab.core.realtime import requested
    from wakelab.harness.conditions import ConditionError, Conditions, check_idle_hold, check_realtime
    from wakelab.harness.runner import DEFAULT_WORKERS, Execution, rigorous_workers

    if args.in_process and args.workers is not None:
        raise UsageError("--workers and --in-process exclude each other")
    if args.in_process and args.rigorous:
        raise UsageError("--rigorous and --in-process exclude each other: --rigorous measures in more fresh workers")
    with usage_errors(ConditionError, ValueError):
        if args.idle_hold:
            check_idle_hold()
        waiter_policy, waiter_priority = requested(args.policy, args.priority, "--policy", "--priority")
        notifier_policy, notifier_priority = requested(args.notifier_policy, args.notifier_priority, "--notifier-policy",
                                                       "--notifier-priority")
        conditions = Conditions(cpu_procs=args.cpu_procs or 0, switch_interval_s=args.switch_interval, idle_hold=args.idle_hold,
                                mlock=bool(args.mlock), waiter_policy=waiter_policy, waiter_priority=waiter_priority,
                                notifier_policy=notifier_policy, notifier_priority=notifier_priority)
        check_realtime(conditions)  # refused now, one line, where this user or this kernel cannot have them
    repeat = DEFAULT_REPEAT if args.repeat is None else args.repeat
    workers = args.workers if args.workers is not None else rigorous_workers(repeat) if args.rigorous else DEFAULT_WORKERS
    return Execution(workers=workers, in_process=args.in_process, conditions=conditions, repeat=repeat,
                     trace=args.trace or args.trace_frames, trace_frames=args.trace_frames, rigorous=args.rigorous)


def _trace_notice(progress: ProgressCallback) -> ProgressCallback:
    """``progress``, and once per run, on stderr, why a --trace run goes on untraced."""
    from wakelab.formatting import escape_text

    said: List[bool] = []

    def callback(event: str, info: Dict[str, object]) -> None:
        if event == "trace-unavailable" and not said:
            said.append(True)
            sys.stderr.write("wakelab: not tracing (the run goes on untraced): %s\n" % escape_text(info.get("reason")))
        progress(event, info)

    return callback


def _record_history(args: argparse.Namespace, runs: Sequence[Bundle]) -> None:
    """Record each finished run in the history database; a failure is a warning, never lost evidence."""
    from wakelab.history import HistoryError, record_run

    if args.no_history:
        return
    for run in runs:
        try:
            record_run(run, args.history)
        except HistoryError as exc:
            sys.stderr.write("wakelab: warning: run not recorded in history (%s); its evidence is in %s\n" % (exc, run.folder))
            return


def _on_disk(folders: Sequence[str], fallback: Optional[Mapping[str, object]] = None) -> List[Bundle]:
    """Each bundle as its summary.json says (after a failed write, the history records what the disk holds), else with
    ``fallback``; without one the folder is left out (a grid cell interrupted before its first write)."""
    from wakelab.evidence.load import load_summary
    from wakelab.evidence.model import Bundle

    runs = []
    for folder in folders:
        try:
            runs.append(Bundle(folder, folder, load_summary(folder)))
        except EvidenceError:
            if fallback is not None:
                runs.append(Bundle(folder, folder, fallback))
    return runs


def _cell_runs(matrix: MatrixDoc, folder: str) -> List[Bundle]:
    from wakelab.evidence.load import CELLS_DIR

    return _on_disk([os.path.join(folder, CELLS_DIR, cell.label) for cell in matrix.cells if cell.status != "pending"])  # reached


def _check_history(args: argparse.Namespace) -> None:
    """Refuse, before anything is measured, a history database the run could not be recorded in."""
    from wakelab.history.store import HistoryError, check_recordable, resolve_db_path

    if args.no_history:
        return
    path, hint = resolve_db_path(args.history), "choose another with --history PATH, or --no-history"
    if not is_utf8(path):  # from $WAKELAB_HISTORY or $XDG_DATA_HOME; --history is checked by argparse
        raise UsageError("history database path %s" % not_utf8_message(path, hint))
    with usage_errors(HistoryError):
        check_recordable(path, hint)


def _check_command_line(argv: List[str]) -> None:
    """The command line is recorded in the evidence as text: refuse an argument that is not UTF-8."""
    for position, value in enumerate(argv, 1):
        if not is_utf8(value):
            raise UsageError("argument %d is %s" % (position, not_utf8_message(value, "the command line is recorded as text")))


def _brief_wanted(args: argparse.Namespace) -> bool:
    """The short form for ``--brief``, or by default when stdout is a terminal (as ``ls`` does: people
    get a screen, pipes and files the full text, so scripts read what they always read)."""
    if args.json or args.full or args.brief:
        return bool(args.brief)
    try:
        return bool(sys.stdout.isatty())
    except (AttributeError, ValueError, OSError):  # no isatty, or a closed stream
        return False


def _remove_if_empty(folder: str) -> None:
    with contextlib.suppress(OSError):  # not empty: it holds evidence worth keeping
        os.rmdir(folder)


def cmd_run(args: argparse.Namespace) -> int:
    from wakelab.evidence.bundle import dumps
    from wakelab.evidence.matrix import MatrixDoc
    from wakelab.evidence.model import Bundle
    from wakelab.harness import grid
    from wakelab.harness.conditions import ConditionError
    from wakelab.harness.runner import FAILED, RunInterrupted, RunPlan, run_plan_checked
    from wakelab.harness.soak import check_soak, run_soak
    from wakelab.harness.workers import InterpreterError
    from wakelab.labs import RunShape, get_lab, lab_for_run
    from wakelab.progress import HEARTBEAT_S, make_progress
    from wakelab.report.matrix_text import format_matrix
    from wakelab.report.text import format_brief, format_summary

    raise_if_interrupted()  # a Ctrl-C lost in the imports above: stop before anything is measured
    _check_command_line(list(args.argv))
    preset = get_lab(DEFAULT_LAB if args.lab is None else args.lab)
    file_arms = _load_user_arms(args)
    arm_names = _resolve_arms(args, preset, file_arms)
    params = _params(args, preset.params)
    execution = _execution(args)
    if args.duration is not None:
        given = (("--n", args.n is not None), ("--in-process", args.in_process), ("--trace", args.trace or args.trace_frames),
                 ("--repeat", args.repeat is not None), ("--workers", args.workers is not None), ("--rigorous", args.rigorous))
        with usage_errors(ValueError):
            check_soak(arm_names, [flag for flag, value in given if value])
        execution = dataclasses.replace(execution, workers=1, repeat=1)
    pythons = _pythons(args, preset)
    placements = _placements(args, preset)
    # A selection that is not the preset's own arms is a lab of its own ("custom"), and the lab's
    # prose is worded for how this run is made.
    lab = lab_for_run(preset, arm_names, RunShape(in_process=execution.in_process, workers=execution.workers, repeat=execution.repeat,
                                                  placements=tuple(name for name, _, _ in placements), open_loop=params.mode == "open"))
    cells = grid.expand([p for p, _ in pythons], [label for _, label in pythons], placements, args.settle_us or [params.settle_us],
                        args.cpu_threads or list(preset.grid.cpu_threads if preset.grid is not None and preset.grid.cpu_threads else [0]))
    if args.duration is not None and len(cells) != 1:
        raise UsageError("--duration runs one cell: give one value each to --python, --placement, --settle-us and --cpu-threads")
    _check_history(args)
    folder = _output_folder(args, lab.id)
    base = RunPlan(lab=lab, arm_names=arm_names, params=params, folder=folder, command=["wakelab"] + list(args.argv), note=args.note,
                   execution=execution, render_text=format_summary)
    write_error = None
    try:
        # --in-process measures in this process: no heartbeat thread beside the arm (see wakelab.progress).
        heartbeat_s = None if execution.in_process else HEARTBEAT_S
        with make_progress(len(arm_names) * len(cells) * execution.repeat, quiet=args.quiet, heartbeat_s=heartbeat_s) as shown:
            progress = _trace_notice(shown) if execution.trace else shown
            if len(cells) == 1:
                plan = grid.cell_plan(base, cells[0], folder)
                summary, write_error = (run_plan_checked(plan, progress) if args.duration is None
                                        else run_soak(plan, args.duration, progress))
                brief = _brief_wanted(args)
                text = dumps(summary) if args.json else format_brief(summary, folder) if brief else format_summary(summary)
                run = Bundle(source=folder, folder=folder, summary=summary)
                arm_failed = any(a.status == FAILED for a in run.arms())
                complete = run.complete
                runs = [run] if write_error is None else _on_disk([folder], summary)
            else:
                brief = False  # a grid's matrix is its summary, on a terminal or not
                doc = grid.run_grid(base, cells, progress, render_matrix=format_matrix)
                text = dumps(doc) if args.json else format_matrix(doc)
                matrix = MatrixDoc.from_dict(doc)
                arm_failed = any(e.arm.status == FAILED for _, entries in matrix.arms for e in entries)
                complete = matrix.complete
                runs = _cell_runs(matrix, folder)
    except RunInterrupted as exc:
        # What was measured before the signal is history too (marked interrupted, complete: false).
        _record_history(args, [Bundle(exc.folder, exc.folder, exc.summary)] if len(cells) == 1
                        else _cell_runs(MatrixDoc.from_dict(exc.summary), exc.folder))
        sys.stderr.write("wakelab: interrupted; the evidence so far (complete: false) is in %s\n" % exc.folder)
        return EXIT_INTERRUPTED
    except (InterpreterError, ConditionError) as exc:
        _remove_if_empty(folder)
        raise UsageError(str(exc)) from None
    _record_history(args, runs)
    sys.stdout.write(text)
    sys.stdout.flush()
    if write_error is not None and not arm_failed:
        # Every arm was measured but the final summary could not be written: say so (no arm did).
        sys.stderr.write("wakelab: %s; the last whole summary.json stands (complete: false)\n" % write_error)
    elif not args.quiet and not brief:  # the short form ends with where the evidence is
        sys.stderr.write("wakelab: evidence in %s (complete: %s)\n" % (folder, str(complete).lower()))
    # A write that failed after the last arm fails no arm, but the run still failed.
    return EXIT_ARM_FAILED if arm_failed or write_error is not None else EXIT_OK
