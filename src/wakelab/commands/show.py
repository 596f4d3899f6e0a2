"""``wakelab show``: validate a bundle's summary.json and print its text summary, or its histograms."""

from __future__ import annotations

import argparse
import sys
from typing import Any, List, Tuple

from wakelab.commands import EXIT_OK
from wakelab.commands._options import suggest_long_options

ALL_ARMS = ""


def register(sub: Any) -> None:
    show = sub.add_parser("show", help="re-render summary.txt (or a grid's matrix.txt) from the evidence",
                          description="Validate a bundle's summary.json and print its text summary; for the folder "
                          "of a grid run (several interpreters or conditions), print its side-by-side matrix. "
                          "With --hist, print a log-binned histogram of the wakes instead (of a soak past its raw-sample cap: "
                          "of every wake, from its log-linear histogram).")
    # Optional only so that "show --hist RUN" (RUN taken for ARM) is understood too; cmd_show requires it.
    show.add_argument("path", metavar="PATH", nargs="?", help="an evidence folder or its summary.json, or a grid's folder")
    show.add_argument("--hist", nargs="?", const=ALL_ARMS, default=None, metavar="ARM",
                      help="print a histogram of each latency arm's wakes (or of ARM; several: event,pipe), "
                      "on log bins, with p50 and p99 marked; rate arms time rounds, not wakes, and have none")
    show.add_argument("--full", action="store_true",
                      help="list every measurement-quality warning arm by arm, as summary.json records them (summary.txt "
                      "gathers the arms that share one on a line)")
    suggest_long_options(show)
    show.set_defaults(handler=cmd_show)


def cmd_show(args: argparse.Namespace) -> int:
    import os

    from wakelab.errors import UsageError
    from wakelab.evidence.load import is_grid, load_matrix, load_summary

    if args.path is None:
        if args.hist and os.path.exists(args.hist):  # "show --hist RUN": the run, every arm
            args.path, args.hist = args.hist, ALL_ARMS
        else:
            raise UsageError("show needs PATH: an evidence folder or its summary.json, or a grid's folder "
                             "(wakelab show PATH [--hist [ARM]])")
    if args.hist is not None:
        return show_histograms(args.path, args.hist)
    if is_grid(args.path):
        from wakelab.report.matrix_text import format_matrix

        sys.stdout.write(format_matrix(load_matrix(args.path)))
        return EXIT_OK
    from wakelab.report.text import format_summary

    sys.stdout.write(format_summary(load_summary(args.path), arm_by_arm=args.full))
    return EXIT_OK


def _why_not(arm: Any) -> str:
    """Why a latency arm has no histogram: not measured, or no wakes."""
    if arm.status != "ok":
        reason = " ".join(str(arm.reason).split()) if arm.reason else ""
        return "%s%s" % (arm.status, ": " + reason if reason else "")
    return "no wakes were counted (every wake lost)"


def select_arms(bundle: Any, wanted: str) -> Tuple[List[Any], List[str]]:
    """The latency arms to draw, and notes for the arms left out.

    ``wanted`` is ``""`` (every latency arm with wakes) or a comma-separated list of arm names; a name that is not a
    latency arm of this run with wakes is a :class:`UsageError` that says what it is.
    """
    from wakelab.core.registry import arm_names, unknown_name_message
    from wakelab.errors import UsageError
    from wakelab.evidence.model import LATENCY

    arms = bundle.arms()
    drawable = [a for a in arms if a.kind == LATENCY and a.measured and a.latency is not None and a.latency.n > 0]
    if wanted == ALL_ARMS:
        notes = []
        rates = [a.name for a in arms if a.kind != LATENCY]
        if rates:
            notes.append("Not shown: %s (%s rounds of calls, not wakes)." % (
                ", ".join(rates), "rate arm: it times" if len(rates) == 1 else "rate arms: they time"))
        notes += ["Not shown: %s (%s)." % (arm.name, _why_not(arm)) for arm in arms if arm.kind == LATENCY and arm not in drawable]
        if not drawable:
            raise UsageError("%s has no latency arm with wakes to draw%s" % (
                bundle.source, " (%s)" % "; ".join(n.rstrip(".") for n in notes) if notes else ""))
        return drawable, notes
    by_name = {a.name: a for a in arms}
    chosen = []
    for name in [n.strip() for n in wanted.split(",")]:
        arm = by_name.get(name)
        if arm is None:
            valid = [a.name for a in drawable] or [a.name for a in arms]
            label = "its latency arms" if drawable else "its arms"
            if name in arm_names():
                raise UsageError("%s: arm %r was not measured in this run (%s: %s)" % (bundle.source, name, label, ", ".join(valid)))
            raise UsageError("%s: %s" % (bundle.source, unknown_name_message("arm", name, valid, valid_label=label)))
        if arm.kind != LATENCY:
            raise UsageError("arm %s is a rate arm: it times rounds of calls, not wakes, so it has no samples to draw "
                             "(its rounds are in summary.txt)" % name)
        if arm not in drawable:
            raise UsageError("arm %s has no wakes to draw: %s" % (name, _why_not(arm)))
        if arm not in chosen:
            chosen.append(arm)
    return chosen, []


def show_histograms(path: str, wanted: str) -> int:
    import shutil

    from wakelab.analysis.histogram import arm_histogram
    from wakelab.evidence.model import Bundle
    from wakelab.report.hist import format_histograms

    bundle = Bundle.load(path, grid_hint="give --hist one of its cells")
    arms, notes = select_arms(bundle, wanted)
    sections = []
    for arm in arms:
        # Every wake: the raw samples, or a soak past its raw-sample cap's histogram of them all.
        samples = bundle.kept_latency_samples(arm)
        title = "%s (%s waiter, %s)" % (arm.name, arm.waiter, arm.scope) if arm.waiter and arm.scope else arm.name
        sections.append((title, arm_histogram(samples, "%s: arm %s" % (bundle.source, arm.name))))
    sys.stdout.write(format_histograms(sections, notes, width=max(60, min(120, shutil.get_terminal_size((80, 24)).columns))))
    return EXIT_OK
