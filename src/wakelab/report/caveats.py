"""Caveats derived from a summary document: what a reader must know before quoting it.

Every caveat is computed from the run's own data (waiter states, lost wakes,
the timer floor, the parameters), never written in advance.  Stdlib only:
the runner stores these in summary.json as it goes.
"""

from __future__ import annotations

from typing import Dict, List, Mapping, Optional

# A figure within this many timer floors is flagged.
FLOOR_MULTIPLE = 10


def arms_by_name(summary: Mapping[str, object]) -> Dict[str, Mapping[str, object]]:
    return {str(a["name"]): a for a in summary.get("arms", [])}  # type: ignore[union-attr]


def p50_ns(entry: Optional[Mapping[str, object]]) -> Optional[float]:
    if not entry or not entry.get("latency"):
        return None
    return entry["latency"].get("p50_ns")  # type: ignore[union-attr]


def like_for_like(a: Mapping[str, object], b: Mapping[str, object]) -> bool:
    """Two arms are a matched pair when their waiters are in the same state."""
    return a.get("waiter") == b.get("waiter")


def derive_caveats(summary: Mapping[str, object]) -> List[str]:
    """The caveats of ``summary``, most important first."""
    caveats: List[str] = []
    params = summary.get("parameters") or {}
    arms = list(summary.get("arms") or [])  # type: ignore[arg-type]
    by_name = arms_by_name(summary)

    planted = params.get("planted_delay_us")  # type: ignore[union-attr]
    if planted:
        caveats.append(
            "A planted delay of %s µs was inserted between t0 and every notify call: this run "
            "is a self-test of the harness, not a measurement of this machine." % planted
        )
    if summary.get("interrupted"):
        caveats.append("The run was interrupted: only arms marked ok have figures.")

    lab = summary.get("lab") or {}
    for comparison in lab.get("comparisons", []):  # type: ignore[union-attr]
        a, b = by_name.get(comparison["a"]), by_name.get(comparison["b"])
        if a and b and not like_for_like(a, b):
            caveats.append(
                "%s and %s are not identical models: %s's waiter is %s, %s's is %s. "
                "Their ratio mixes the mechanism with the waiter state."
                % (a["name"], b["name"], a["name"], a["waiter"], b["name"], b["waiter"])
            )

    for entry in arms:
        latency = entry.get("latency") or {}
        lost = latency.get("lost")
        if lost:
            caveats.append(
                "%s lost %d of %d counted wakes (no wake within the %s s timeout)."
                % (entry["name"], lost, lost + latency.get("n", 0), params.get("timeout_s"))  # type: ignore[union-attr]
            )
        if entry.get("status") == "failed":
            caveats.append("%s failed: %s" % (entry["name"], entry.get("reason")))
        elif entry.get("status") == "skipped":
            caveats.append("%s was skipped: %s" % (entry["name"], entry.get("reason")))

    timer = summary.get("timer") or {}
    floor = timer.get("floor_p50_ns")  # type: ignore[union-attr]
    if floor:
        near = [
            str(e["name"])
            for e in arms
            if p50_ns(e) is not None and p50_ns(e) < FLOOR_MULTIPLE * floor  # type: ignore[operator]
        ]
        if near:
            caveats.append(
                "p50 within %d× the timer floor (%d ns) for: %s; differences there are "
                "mostly the clock's own cost." % (FLOOR_MULTIPLE, floor, ", ".join(near))
            )

    short = sorted(
        {
            key.replace("_", ".")
            for e in arms
            for key in ((e.get("latency") or {}).get("omitted") or {})
            if (e.get("latency") or {}).get("n")
        }
    )
    if short:
        caveats.append(
            "Not reported where the sample is too small to hold a wake above it: %s "
            "(pQ needs n >= 1/(1-Q/100); raise --n)." % ", ".join(short)
        )
    return caveats
