"""``summary.txt``: the run for people, rendered from the summary document alone.

Order: verdict up front, the lead table, the lab-honesty block, methodology,
what each arm times, caveats, limits, and the command that reproduces it.
Everything is computed from the document, so ``wakelab show`` can re-render
any bundle.  Stdlib only (the runner renders it while measuring).
"""

from __future__ import annotations

import textwrap
from typing import Any, List, Mapping, Optional, Sequence

from wakelab.analysis.caveats import arms_by_name, like_for_like, p50_ns
from wakelab.core.registry import FAMILY_TITLES
from wakelab.formatting import DASH, format_ns, format_ns_plain, format_rate, format_ratio, format_us

WIDTH = 100


def wrap(text: str, indent: str = "  ") -> List[str]:
    return textwrap.wrap(text, WIDTH, initial_indent=indent, subsequent_indent=indent, break_on_hyphens=False) or [indent]


def bullets(items: Sequence[str]) -> List[str]:
    lines: List[str] = []
    for item in items:
        lines.extend(textwrap.wrap(item, WIDTH, initial_indent="  - ", subsequent_indent="    ", break_on_hyphens=False))
    return lines


def format_table(header: Sequence[str], rows: Sequence[Sequence[str]], align_left: int = 1) -> List[str]:
    """Plain text table; the first ``align_left`` columns are left-aligned."""
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    out = []
    for row in [header, *rows]:
        cells = [
            str(c).ljust(w) if i < align_left else str(c).rjust(w)
            for i, (c, w) in enumerate(zip(row, widths))
        ]
        out.append("  " + "  ".join(cells).rstrip())
    return out


def _latency(entry: Mapping[str, Any]) -> Mapping[str, Any]:
    return entry.get("latency") or {}


def _native_ratio(entry: Mapping[str, Any], by_name: Mapping[str, Mapping[str, Any]]) -> Optional[float]:
    native = entry.get("native")
    if not native or native not in by_name:
        return None
    ours, theirs = p50_ns(entry), p50_ns(by_name[native])
    if ours is None or not theirs:
        return None
    return ours / theirs


def _status_word(entry: Mapping[str, Any]) -> str:
    status = str(entry.get("status"))
    return {"ok": "", "skipped": "skipped", "failed": "FAILED", "interrupted": "interrupted", "pending": "not run"}.get(
        status, status
    )


def format_verdict(summary: Mapping[str, Any]) -> List[str]:
    """One line per measured arm, then each of the lab's comparisons."""
    lines: List[str] = []
    by_name = arms_by_name(summary)
    for entry in summary.get("arms", []):
        if entry.get("status") != "ok":
            continue
        if entry.get("latency"):
            lat = _latency(entry)
            text = "%s: p50 %s, p99 %s over %s wakes (%s waiter, %s)." % (
                entry["name"],
                format_ns(lat.get("p50_ns")),
                format_ns(lat.get("p99_ns")) if lat.get("p99_ns") is not None else "not reported",
                lat.get("n"),
                entry.get("waiter"),
                entry.get("scope"),
            )
            if lat.get("lost"):
                text += " %s wakes lost." % lat["lost"]
        elif entry.get("rate"):
            rate = entry.get("rate") or {}
            text = "%s: %s ops/s (median of %s rounds of %s calls; empty loop %s iterations/s)." % (
                entry["name"],
                format_rate(rate.get("ops_per_s")),
                rate.get("rounds"),
                format_rate(rate.get("n_per_round")),
                format_rate(rate.get("baseline_ops_per_s")),
            )
        else:
            continue  # an arm marked ok without figures has nothing to say
        lines.extend(wrap(text))
    lab = summary.get("lab") or {}
    for comparison in lab.get("comparisons", []):
        a, b = by_name.get(comparison["a"]), by_name.get(comparison["b"])
        a50, b50 = p50_ns(a), p50_ns(b)
        if not a or not b or a50 is None or not b50:
            continue
        ratio50 = a50 / b50
        pa, pb = _latency(a).get("p99_ns"), _latency(b).get("p99_ns")
        ratio99 = pa / pb if pa is not None and pb else None
        if like_for_like(a, b):
            judgement = "like for like: both waiters %s" % a["waiter"]
            if a.get("scope") != b.get("scope"):
                judgement += " (scopes differ: %s against %s)" % (a.get("scope"), b.get("scope"))
            judgement += "."
        else:
            judgement = "NOT like for like: %s waiter against %s waiter." % (a["waiter"], b["waiter"])
        text = "%s / %s = %s at p50%s; %s" % (
            a["name"],
            b["name"],
            format_ratio(ratio50),
            (", %s at p99" % format_ratio(ratio99)) if ratio99 is not None else "",
            judgement,
        )
        lines.extend(wrap(text))
    if not lines:
        lines.append("  No arm produced figures in this run.")
    return lines


def format_lead_table(summary: Mapping[str, Any]) -> List[str]:
    """Latency arms grouped by family (times in µs), then rate arms."""
    arms: List[Mapping[str, Any]] = list(summary.get("arms", []))
    by_name = arms_by_name(summary)
    latency_arms = [a for a in arms if a.get("kind") == "latency"]
    rate_arms = [a for a in arms if a.get("kind") == "rate"]
    families = []
    for a in latency_arms:
        if a.get("family") not in families:
            families.append(a.get("family"))
    show_native = any(a.get("native") in by_name for a in latency_arms)
    lines: List[str] = []
    if latency_arms:
        header = ["latency (µs)", "waiter", "scope", "n", "lost", "min", "p50", "p90", "p99", "p99.9", "max", "mean"]
        if show_native:
            header.append("vs C p50")
        rows: List[List[str]] = []
        for family in families:
            if len(families) > 1:
                rows.append(["[%s]" % FAMILY_TITLES.get(str(family), family)] + [""] * (len(header) - 1))
            for a in latency_arms:
                if a.get("family") != family:
                    continue
                lat = _latency(a)
                if not lat:
                    row = [str(a["name"]), str(a.get("waiter")), str(a.get("scope")), _status_word(a)] + [""] * (
                        len(header) - 4
                    )
                else:
                    row = [
                        str(a["name"]),
                        str(a.get("waiter")),
                        str(a.get("scope")),
                        str(lat.get("n")),
                        str(lat.get("lost")),
                        format_us(lat.get("min_ns")),
                        format_us(lat.get("p50_ns")),
                        format_us(lat.get("p90_ns")),
                        format_us(lat.get("p99_ns")),
                        format_us(lat.get("p99_9_ns")),
                        format_us(lat.get("max_ns")),
                        format_us(lat.get("mean_ns")),
                    ]
                    if show_native:
                        row.append(format_ratio(_native_ratio(a, by_name)))
                rows.append(row)
                for comp_name, comp in sorted((a.get("components") or {}).items()):
                    comp_row = ["  ." + comp_name, "", "", str(comp.get("n")), ""] + [
                        format_us(comp.get(k)) for k in ("min_ns", "p50_ns", "p90_ns", "p99_ns", "p99_9_ns", "max_ns", "mean_ns")
                    ]
                    if show_native:
                        comp_row.append("")
                    rows.append(comp_row)
        lines.extend(format_table(header, rows, align_left=3))
    if rate_arms:
        if lines:
            lines.append("")
        header = ["rate", "calls/round", "rounds", "median ops/s", "slowest", "fastest", "empty loop/s", "net ns/call"]
        if show_native:
            header.append("vs C")
        rows = []
        for a in rate_arms:
            rate = a.get("rate") or {}
            if not rate:
                rows.append([str(a["name"]), _status_word(a)] + [""] * (len(header) - 2))
                continue
            row = [
                str(a["name"]),
                format_rate(rate.get("n_per_round")),
                str(rate.get("rounds")),
                format_rate(rate.get("ops_per_s")),
                format_rate(rate.get("min_ops_per_s")),
                format_rate(rate.get("max_ops_per_s")),
                format_rate(rate.get("baseline_ops_per_s")),
                format_ns_plain(rate.get("net_ns_per_op")),
            ]
            if show_native:
                native = by_name.get(str(a.get("native")))
                theirs = (native or {}).get("rate") or {}
                ours = rate.get("ops_per_s")
                # For rates the native side is faster: report how many times slower Python is.
                row.append(format_ratio(theirs.get("ops_per_s") / ours) if theirs and ours else DASH)
            rows.append(row)
        lines.extend(format_table(header, rows))
    return lines


def _interpreter_line(interp: Mapping[str, Any]) -> str:
    gil = interp.get("gil_enabled")
    gil_text = {True: "GIL on", False: "GIL off", None: "GIL state not reported"}.get(gil, str(gil))
    build = "free-threaded build, " if interp.get("free_threaded_build") else ""
    return "%s %s (%s; %s), %s%s, switch interval %s s" % (
        interp.get("implementation"),
        interp.get("version"),
        interp.get("build"),
        interp.get("compiler"),
        build,
        gil_text,
        interp.get("switch_interval_s"),
    )


def format_honesty(summary: Mapping[str, Any]) -> List[str]:
    interp: Mapping[str, Any] = summary.get("interpreter") or {}
    machine: Mapping[str, Any] = summary.get("machine") or {}
    params: Mapping[str, Any] = summary.get("parameters") or {}
    timer: Mapping[str, Any] = summary.get("timer") or {}
    items = [
        "Date: %s (UTC), wall time %s s." % (summary.get("started_utc"), summary.get("wall_s")),
        "Interpreter: %s." % _interpreter_line(interp),
        "Machine: %s %s %s, %s, %s CPUs (allowed: %s)."
        % (
            machine.get("os"),
            machine.get("kernel"),
            machine.get("architecture"),
            machine.get("cpu_model"),
            machine.get("cpu_count"),
            machine.get("cpus_allowed"),
        ),
    ]
    if timer:
        items.append(
            "Timer: %s (%s); back-to-back floor %s ns median, %s ns min." % (
                timer.get("clock"), timer.get("implementation"), timer.get("floor_p50_ns"), timer.get("floor_min_ns")
            )
        )
    if timer.get("harness"):
        harness: Mapping[str, Any] = timer["harness"]
        items[-1] += " Harness bookkeeping: %s ns per sample against %s ns for a bare pair (%s×)." % (
            harness.get("per_sample_ns"), harness.get("bare_pair_ns"), harness.get("overhead_ratio"))
    execution: Mapping[str, Any] = summary.get("execution") or {}
    if execution:
        items.append(
            "Execution: %s."
            % ("in the runner's own process" if execution.get("mode") == "in-process"
               else "%s fresh worker process(es) per arm, wakes split between them and pooled" % execution.get("workers"))
        )
    if params.get("mode") == "open":
        timing = "open loop: a notify every %s µs on a fixed schedule, latency from the scheduled instant" % params.get("interval_us")
    else:
        timing = "closed loop: blocked waiters settle %s µs before each notify, latency from t0" % params.get("settle_us")
    items.append(
        "Timing: %s; %s warm-up wakes discarded per latency arm (in each worker) and %s short warm-up round(s) per rate arm; every wait "
        "times out after %s s (a lost wake)." % (timing, params.get("warmup"), params.get("warmup_rounds"), params.get("timeout_s"))
    )
    placement = params.get("placement") or "any"
    if placement == "any":
        where = "unpinned (the scheduler chose the CPUs)"
    elif placement == "same":
        where = "notifier and waiter pinned to CPU %s" % params.get("notifier_cpu")
    else:
        where = "notifier pinned to CPU %s, waiter to CPU %s" % (params.get("notifier_cpu"), params.get("waiter_cpu"))
    conditions: Mapping[str, Any] = summary.get("conditions") or {}
    load = []
    if conditions.get("cpu_threads"):
        load.append("%s busy Python thread(s) beside the waiter" % conditions["cpu_threads"])
    if conditions.get("cpu_procs"):
        load.append("%s busy process(es)" % conditions["cpu_procs"])
    if conditions.get("switch_interval_s") is not None:
        load.append("switch interval set to %s s" % conditions["switch_interval_s"])
    if conditions.get("idle_hold"):
        load.append("/dev/cpu_dma_latency held at 0" if conditions.get("applied_idle_hold", True) else "idle hold requested")
    items.append("Placement: %s. Load: %s." % (where, "; ".join(load) if load else "none added"))
    system: Mapping[str, Any] = summary.get("system") or {}
    if system:
        items.append(
            "System: clocksource %s, cpuidle driver %s, load average %s%s."
            % (system.get("clocksource"), system.get("cpuidle_driver"), system.get("load_average"),
               ", under a hypervisor" if system.get("hypervisor") else "")
        )
    arms: List[Mapping[str, Any]] = [a for a in summary.get("arms", []) if a.get("kind") == "latency"]
    states = sorted({str(a.get("waiter")) for a in arms})
    if len(states) > 1:
        described = "; ".join("%s: %s waiter" % (a["name"], a.get("waiter")) for a in arms)
        items.append("These arms are not identical models (%s). Compare arms only within one waiter state." % described)
    if summary.get("note"):
        items.append("Note: %s" % summary["note"])
    return bullets(items)


def format_arm_definitions(summary: Mapping[str, Any]) -> List[str]:
    lines: List[str] = []
    for a in summary.get("arms", []):
        lines.extend(wrap("%s -- %s" % (a["name"], a.get("mechanism"))))
        lines.extend(wrap("t0: %s" % a.get("t0"), "      "))
        lines.extend(wrap("t1: %s" % a.get("t1"), "      "))
    return lines


def reproduce_commands(summary: Mapping[str, Any]) -> List[str]:
    lab: Mapping[str, Any] = summary.get("lab") or {}
    params: Mapping[str, Any] = summary.get("parameters") or {}
    commands = []
    if lab.get("reproduce_script"):
        commands.append("python3 %s" % lab["reproduce_script"])
    arms = ",".join(str(a["name"]) for a in summary.get("arms", []))
    cli = "wakelab run --lab %s --arms %s --n %s --warmup %s --settle-us %s --timeout-s %s --install-n %s --rounds %s" % (
        lab.get("id"), arms, params.get("n"), params.get("warmup"), params.get("settle_us"),
        params.get("timeout_s"), params.get("install_n"), params.get("rounds"),
    )
    if params.get("planted_delay_us"):
        cli += " --planted-delay-us %s" % params["planted_delay_us"]
    if params.get("placement") not in (None, "any"):
        cpus = [params.get("notifier_cpu")] if params["placement"] == "same" else [params.get("notifier_cpu"), params.get("waiter_cpu")]
        cli += " --placement %s --cpus %s" % (params["placement"], ",".join(str(c) for c in cpus))
    if params.get("mode") == "open":
        cli += " --mode open --interval-us %s" % params.get("interval_us")
    conditions: Mapping[str, Any] = summary.get("conditions") or {}
    for key, flag in (("cpu_threads", "--cpu-threads"), ("cpu_procs", "--cpu-procs"), ("switch_interval_s", "--switch-interval")):
        if conditions.get(key):
            cli += " %s %s" % (flag, conditions[key])
    if conditions.get("idle_hold"):
        cli += " --idle-hold"
    execution: Mapping[str, Any] = summary.get("execution") or {}
    if execution.get("mode") == "in-process":
        cli += " --in-process"
    elif execution.get("workers") not in (None, 3):
        cli += " --workers %s" % execution["workers"]
    commands.append(cli)
    return commands


def format_summary(summary: Mapping[str, Any]) -> str:
    """The whole summary.txt for ``summary``."""
    lab: Mapping[str, Any] = summary.get("lab") or {}
    interp: Mapping[str, Any] = summary.get("interpreter") or {}
    tool: Mapping[str, Any] = summary.get("tool") or {}
    if summary.get("complete"):
        state = "complete"
    elif summary.get("interrupted"):
        state = "INCOMPLETE (interrupted)"
    elif summary.get("finished_utc"):
        state = "INCOMPLETE (see caveats)"
    else:
        state = "IN PROGRESS (or stopped before the end)"
    out: List[str] = [
        str(lab.get("title") or lab.get("id")),
        "wakelab %s · %s · %s %s · %s"
        % (tool.get("version"), summary.get("started_utc"), interp.get("implementation"), interp.get("version"), state),
        "",
    ]
    if lab.get("question"):
        out.extend(wrap(str(lab["question"]), ""))
        out.append("")
    sections: List[tuple] = [
        ("VERDICT (from this run's figures)", format_verdict(summary)),
        ("LEAD TABLE", format_lead_table(summary)),
        ("LAB HONESTY", format_honesty(summary)),
    ]
    if lab.get("methodology"):
        method: List[str] = []
        for paragraph in lab["methodology"]:
            if method:
                method.append("")
            method.extend(wrap(paragraph))
        sections.append(("METHODOLOGY", method))
    sections.append(("WHAT EACH ARM TIMES", format_arm_definitions(summary)))
    caveats: Sequence[str] = summary.get("caveats") or []
    if caveats:
        sections.append(("CAVEATS", bullets(caveats)))
    warnings: Sequence[str] = summary.get("warnings") or []
    if warnings:
        sections.append(("MEASUREMENT QUALITY (warnings, not errors)", bullets(warnings)))
    if lab.get("limits"):
        sections.append(("LIMITS", bullets(lab["limits"])))
    sections.append(("REPRODUCE", ["  " + c for c in reproduce_commands(summary)]))
    for title, body in sections:
        out.append(title)
        out.extend(body)
        out.append("")
    return "\n".join(out)
