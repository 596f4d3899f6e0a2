"""``wakelab run``: run a lab and write its evidence bundle."""

from __future__ import annotations

import argparse
import sys
from typing import Any, Callable, Dict, List, Optional

from wakelab.commands import EXIT_ARM_FAILED, EXIT_INTERRUPTED, EXIT_OK
from wakelab.errors import OutputError, UsageError

DEFAULT_RUNS_DIR = "wakelab-runs"

# Bounds of the numeric options: beyond them a value is a typo, not a plan.
LIMITS = {
    "n": (1, 1_000_000),
    "warmup": (0, 100_000),
    "settle_us": (0, 10_000_000),
    "install_n": (1, 100_000_000),
    "rounds": (1, 1_000),
    "planted_delay_us": (0, 1_000_000),
}
TIMEOUT_LIMITS = (0.001, 3600.0)


def _whole_number(option: str) -> Callable[[str], int]:
    low, high = LIMITS[option]

    def parse(text: str) -> int:
        try:
            value = int(text, 10)
        except ValueError:
            raise argparse.ArgumentTypeError("expected a whole number, got %r" % text) from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError("must be between %s and %s, got %s" % (f"{low:,}", f"{high:,}", value))
        return value

    return parse


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("expected a number of seconds, got %r" % text) from None
    low, high = TIMEOUT_LIMITS
    if not low <= value <= high:  # also rejects nan and inf
        raise argparse.ArgumentTypeError("must be between %s and %s seconds, got %s" % (low, high, text))
    return value


def register(sub: Any) -> None:
    run = sub.add_parser(
        "run",
        help="run a lab and write its evidence bundle",
        description=(
            "Run a lab (default: Lab 135, the original signal vs threading.Event lab) and write "
            "summary.json, summary.txt and the raw samples into a new folder. Options not given "
            "take the lab's defaults."
        ),
    )
    run.add_argument("--lab", default="135-signal-vs-event-wakeup", help="lab preset (default: %(default)s; see 'wakelab list')")
    run.add_argument("--arms", metavar="A,B,...", help="comma-separated arms to run instead of the lab's own")
    run.add_argument("-n", "--n", type=_whole_number("n"), metavar="N", help="counted wakes per latency arm (lab 135: 200)")
    run.add_argument("--warmup", type=_whole_number("warmup"), metavar="N", help="warm-up wakes discarded per latency arm (default 10)")
    run.add_argument("--settle-us", type=_whole_number("settle_us"), metavar="US",
                     help="quiet time after a blocked waiter announces its wait, before t0 (default 1000)")
    run.add_argument("--timeout-s", type=_seconds, metavar="S", help="bound on every wait; a wake not seen by then is lost (default 1.0)")
    run.add_argument("--install-n", type=_whole_number("install_n"), metavar="N", help="calls per round of a rate arm (lab 135: 20000)")
    run.add_argument("--rounds", type=_whole_number("rounds"), metavar="R", help="counted rounds of a rate arm (lab 135: 7)")
    run.add_argument("--planted-delay-us", type=_whole_number("planted_delay_us"), metavar="US",
                     help="self-test: busy-wait this long between t0 and every notify; the figures must grow by it")
    run.add_argument("-o", "--output", metavar="DIR",
                     help="evidence folder; an existing bundle there is replaced (default: a new folder under ./%s/)" % DEFAULT_RUNS_DIR)
    run.add_argument("--json", action="store_true", help="print summary.json to stdout instead of summary.txt")
    run.add_argument("--note", help="free text recorded in the evidence (for example where the run was made)")
    run.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    run.set_defaults(handler=cmd_run)


def _resolve_arms(args: argparse.Namespace, lab_arms: List[str]) -> List[str]:
    from wakelab.arms import arm_names

    if args.arms is None:
        return lab_arms
    names = [name.strip() for name in args.arms.split(",") if name.strip()]
    if not names:
        raise UsageError("--arms needs at least one arm name")
    valid = arm_names()
    unknown = [name for name in names if name not in valid]
    if unknown:
        raise UsageError("unknown arm %r (valid: %s)" % (unknown[0], ", ".join(valid)))
    if len(set(names)) != len(names):
        raise UsageError("--arms names an arm twice")
    return names


def _params(args: argparse.Namespace, defaults: object) -> object:
    import dataclasses

    overrides = {
        field: getattr(args, field)
        for field in ("n", "warmup", "settle_us", "timeout_s", "install_n", "rounds", "planted_delay_us")
        if getattr(args, field) is not None
    }
    params = dataclasses.replace(defaults, **overrides)  # type: ignore[type-var]
    if params.planted_delay_us / 1e6 >= params.timeout_s:  # type: ignore[attr-defined]
        raise UsageError("--planted-delay-us must be shorter than --timeout-s, or every wake would be lost")
    return params


def _output_folder(args: argparse.Namespace, lab_id: str) -> str:
    from wakelab.evidence import bundle
    from wakelab.harness.runner import utc_now

    try:
        if args.output:
            return bundle.prepare_output_folder(args.output)
        stamp = utc_now().replace("-", "").replace(":", "")
        folder = bundle.create_unique_folder(DEFAULT_RUNS_DIR, "%s-%s" % (lab_id, stamp))
        return bundle.prepare_output_folder(folder)
    except OSError as exc:
        target = args.output or DEFAULT_RUNS_DIR
        raise OutputError("cannot write evidence to %s: %s (choose another folder with --output)" % (target, exc.strerror or exc)) from None


def _progress_printer(quiet: bool) -> Optional[Callable[[str, Dict[str, object]], None]]:
    if quiet:
        return None
    from wakelab.report.formatting import format_ns, format_rate

    def progress(event: str, info: Dict[str, object]) -> None:
        if event == "arm-start":
            sys.stderr.write("wakelab: [%d/%d] %s ...\n" % (int(info["index"]) + 1, int(info["total"]), info["arm"]))  # type: ignore[call-overload]
        elif event == "arm-skipped":
            sys.stderr.write("wakelab:   skipped: %s\n" % info["reason"])
        elif event == "arm-failed":
            sys.stderr.write("wakelab:   FAILED: %s\n" % info["reason"])
        elif event == "arm-done":
            entry: Dict[str, object] = info["entry"]  # type: ignore[assignment]
            if entry.get("latency"):
                lat: Dict[str, object] = entry["latency"]  # type: ignore[assignment]
                text = "p50 %s, max %s, lost %s" % (format_ns(lat["p50_ns"]), format_ns(lat["max_ns"]), lat["lost"])  # type: ignore[arg-type]
            else:
                text = "%s ops/s" % format_rate(entry["rate"]["ops_per_s"])  # type: ignore[index]
            sys.stderr.write("wakelab:   %s in %.2f s\n" % (text, entry["wall_s"]))
        sys.stderr.flush()

    return progress


def cmd_run(args: argparse.Namespace) -> int:
    from wakelab.evidence.bundle import dumps
    from wakelab.harness.runner import FAILED, RunInterrupted, RunPlan, run_plan
    from wakelab.labs import get_lab, lab_arm_names
    from wakelab.report.text import format_summary

    lab = get_lab(args.lab)
    arm_names = _resolve_arms(args, lab_arm_names(lab))
    params = _params(args, lab.params)
    folder = _output_folder(args, lab.id)
    plan = RunPlan(
        lab=lab,
        arm_names=arm_names,
        params=params,  # type: ignore[arg-type]
        folder=folder,
        command=["wakelab"] + list(args.argv),
        note=args.note,
    )
    try:
        summary = run_plan(plan, _progress_printer(args.quiet))
    except RunInterrupted as exc:
        sys.stderr.write("wakelab: interrupted; the evidence so far (complete: false) is in %s\n" % exc.folder)
        return EXIT_INTERRUPTED
    sys.stdout.write(dumps(summary) if args.json else format_summary(summary))
    sys.stdout.flush()
    if not args.quiet:
        sys.stderr.write("wakelab: evidence in %s (complete: %s)\n" % (folder, str(summary["complete"]).lower()))
    failed = any(a["status"] == FAILED for a in summary["arms"])  # type: ignore[union-attr]
    return EXIT_ARM_FAILED if failed else EXIT_OK
