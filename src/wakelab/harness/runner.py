"""The runner: lab preset -> arms -> raw samples -> statistics -> evidence, as it goes.

The runner never prints.  It reports progress through an optional callback
and writes the evidence bundle after every arm, so a crash or Ctrl-C leaves a
valid ``summary.json`` with ``complete: false``.  Exceptions from one arm are
caught and recorded as a failed arm; the run goes on with the next.
"""

from __future__ import annotations

import dataclasses
import datetime
import time
from typing import Callable, Dict, List, Optional, Sequence

from wakelab import __version__
from wakelab.arms import get_arm
from wakelab.arms.base import LATENCY, Arm, MeasureParams, Raw, RawLatency, RawRate
from wakelab.evidence import bundle
from wakelab.harness.clock import measure_timer_floor
from wakelab.harness.metadata import interpreter_info, machine_info
from wakelab.labs import Lab
from wakelab.report.caveats import derive_caveats
from wakelab.stats import summarize_latency, summarize_rate

# Arm statuses in summary.json.
OK = "ok"
SKIPPED = "skipped"
FAILED = "failed"
INTERRUPTED = "interrupted"
PENDING = "pending"

ProgressCallback = Callable[[str, Dict[str, object]], None]


class RunInterrupted(Exception):
    """Ctrl-C during a run; ``summary`` is what was written (``complete: false``)."""

    def __init__(self, summary: Dict[str, object], folder: str) -> None:
        super().__init__("run interrupted")
        self.summary = summary
        self.folder = folder


@dataclasses.dataclass(frozen=True)
class RunPlan:
    """What to run and where to write it."""

    lab: Lab
    arm_names: Sequence[str]
    params: MeasureParams
    folder: str
    command: Sequence[str] = ()
    note: Optional[str] = None


def utc_now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _raw_fields(raw: Raw) -> Dict[str, object]:
    if isinstance(raw, RawLatency):
        return {
            "kind": LATENCY,
            "samples_ns": list(raw.samples_ns),
            "lost": raw.lost,
            "warmup_discarded": raw.warmup_discarded,
            "components_ns": {k: list(v) for k, v in raw.components_ns.items()},
        }
    return {
        "kind": "rate",
        "n_per_round": raw.n_per_round,
        "round_ns": list(raw.round_ns),
        "baseline_round_ns": list(raw.baseline_round_ns),
        "warmup_rounds": raw.warmup_rounds,
    }


def _arm_entry(arm: Arm, params: MeasureParams) -> Dict[str, object]:
    entry: Dict[str, object] = dict(arm.describe())
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
        }
    )
    return entry


def summarize_raw(entry: Dict[str, object], raw: Raw) -> None:
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


def is_complete(summary: Dict[str, object]) -> bool:
    """True when no arm failed or was cut short, and no counted wake was lost."""
    for entry in summary["arms"]:  # type: ignore[union-attr]
        status = entry["status"]
        if status not in (OK, SKIPPED):
            return False
        latency = entry.get("latency")
        if latency and latency.get("lost"):
            return False
    return True


def new_summary(plan: RunPlan) -> Dict[str, object]:
    """The summary document before any arm ran (``complete: false``)."""
    arms = [_arm_entry(get_arm(name), plan.params) for name in plan.arm_names]
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
        "started_utc": utc_now(),
        "finished_utc": None,
        "wall_s": None,
        "complete": False,
        "interrupted": False,
        "command": list(plan.command),
        "note": plan.note,
        "parameters": plan.params.to_dict(),
        "interpreter": interpreter_info(),
        "machine": machine_info(),
        "timer": None,
        "arms": arms,
        "caveats": [],
    }


def run_plan(plan: RunPlan, progress: Optional[ProgressCallback] = None) -> Dict[str, object]:
    """Run every arm of ``plan``, writing the bundle into ``plan.folder`` after each.

    Returns the final summary document.  Raises :class:`RunInterrupted` on
    Ctrl-C, after writing what was measured so far.
    """
    from wakelab.report.text import format_summary  # stdlib-only renderer

    def emit(event: str, **info: object) -> None:
        if progress is not None:
            progress(event, info)

    def write(summary: Dict[str, object]) -> None:
        summary["caveats"] = derive_caveats(summary)
        bundle.write_bundle(plan.folder, summary, format_summary(summary))

    started = time.perf_counter()
    summary = new_summary(plan)
    arms: List[Dict[str, object]] = summary["arms"]  # type: ignore[assignment]
    current: Optional[Dict[str, object]] = None
    try:
        summary["timer"] = measure_timer_floor()
        write(summary)
        for index, entry in enumerate(arms):
            current = entry
            arm = get_arm(str(entry["name"]))
            emit("arm-start", arm=arm.name, index=index, total=len(arms))
            reason = arm.unavailable_reason()
            if reason is not None:
                entry["status"] = SKIPPED
                entry["reason"] = reason
                emit("arm-skipped", arm=arm.name, reason=reason)
                write(summary)
                continue
            arm_started = time.perf_counter()
            try:
                raw = arm.measure(plan.params)
            except Exception as exc:  # one arm's failure never ends the run
                entry["status"] = FAILED
                entry["reason"] = "%s: %s" % (type(exc).__name__, exc)
                entry["wall_s"] = round(time.perf_counter() - arm_started, 6)
                emit("arm-failed", arm=arm.name, reason=entry["reason"])
                write(summary)
                continue
            entry["wall_s"] = round(time.perf_counter() - arm_started, 6)
            entry["samples_file"] = bundle.write_samples(
                plan.folder, arm.name, bundle.samples_doc(arm.name, _raw_fields(raw))
            )
            summarize_raw(entry, raw)
            entry["status"] = OK
            emit("arm-done", arm=arm.name, entry=entry)
            write(summary)
        current = None
    except KeyboardInterrupt:
        if current is not None and current["status"] == PENDING:
            current["status"] = INTERRUPTED
            current["reason"] = "interrupted by the user (Ctrl-C)"
        summary["interrupted"] = True
        _finish(summary, started)
        write(summary)
        raise RunInterrupted(summary, plan.folder) from None
    _finish(summary, started)
    write(summary)
    return summary


def _finish(summary: Dict[str, object], started: float) -> None:
    summary["finished_utc"] = utc_now()
    summary["wall_s"] = round(time.perf_counter() - started, 3)
    summary["complete"] = (not summary["interrupted"]) and is_complete(summary)

