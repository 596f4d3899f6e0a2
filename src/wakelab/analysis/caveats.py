"""Caveats derived from a summary document: what a reader must know before quoting it.

Every caveat is computed from the run's own data (waiter states, lost wakes,
failed or skipped arms, the parameters), never written in advance.  Doubts
about measurement quality are warnings, in :mod:`wakelab.analysis.quality`.
Stdlib only: the runner stores these in summary.json as it goes.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional

def arms_by_name(summary: Mapping[str, Any]) -> Dict[str, Mapping[str, Any]]:
    return {str(a["name"]): a for a in summary.get("arms", [])}


def p50_ns(entry: Optional[Mapping[str, Any]]) -> Optional[float]:
    if not entry or not entry.get("latency"):
        return None
    return entry["latency"].get("p50_ns")


def like_for_like(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Two arms are a matched pair when their waiters are in the same state."""
    return a.get("waiter") == b.get("waiter")


def derive_caveats(summary: Mapping[str, Any]) -> List[str]:
    """The caveats of ``summary``, most important first."""
    caveats: List[str] = []
    params = summary.get("parameters") or {}
    arms = list(summary.get("arms") or [])
    by_name = arms_by_name(summary)

    planted = params.get("planted_delay_us")
    if planted:
        caveats.append(
            "A planted delay of %s µs was inserted between t0 and every notify call: this run "
            "is a self-test of the harness, not a measurement of this machine." % planted
        )
    if summary.get("interrupted"):
        caveats.append("The run was interrupted: only arms marked ok have figures.")

    lab = summary.get("lab") or {}
    for comparison in lab.get("comparisons", []):
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
                % (entry["name"], lost, lost + latency.get("n", 0), params.get("timeout_s"))
            )
        if entry.get("status") == "failed":
            caveats.append("%s failed: %s" % (entry["name"], entry.get("reason")))
        elif entry.get("status") == "skipped":
            caveats.append("%s was skipped: %s" % (entry["name"], entry.get("reason")))

    return caveats
