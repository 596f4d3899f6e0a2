"""Caveats, comparisons and "vs C" ratios of a run, computed once from its typed records.

Like for like.  Two arms are the same experiment only when they agree on the waiter state they declare, the scope, and
what the waiter is actually doing at ``t0`` (:func:`waiter_at_t0`).  The third is not always the second: a spinning
waiter in another thread of a GIL build cannot poll while the notifier runs Python to take ``t0`` and notify; it waits
for the GIL, and its wake is the GIL's hand-over, not a poll that sees a flag.

"vs C".  Only a *matched* C floor (``native_match``: the same scope, waiter state and ``t1``) makes
the ratio the interpreter's share; a *nearest* floor is the closest C experiment there is, labelled so.
Doubts about measurement quality are warnings, in :mod:`wakelab.analysis.quality`."""

from __future__ import annotations

import dataclasses
from typing import Dict, List, Mapping, Optional, Tuple, Union

from wakelab.evidence.model import ArmRecord, Bundle
from wakelab.formatting import positive_ratio

# How a Python arm's C floor relates to it (the values of ``native_match``, as each arm declares
# it: wakelab.core.model.MATCHED / NEAREST).  A floor whose relation is not recorded (bundles
# before 0.2) is treated as nearest: nothing in the evidence says it is the same experiment.
MATCHED = "matched"
NEAREST = "nearest"

# What the waiter is doing at t0 (see waiter_at_t0).
PARKED_IN_KERNEL = "parked in the kernel"
WAITING_FOR_GIL = "waiting for the GIL"
POLLING = "polling"
IS_NOTIFIER = "the notifier itself"
NO_WAITER = "no waiter"


#: A run as these functions take it: a loaded bundle, or a summary document held in memory (the runner's).
Run = Union[Bundle, Mapping[str, object]]
#: An arm as these functions take it: its record, or its entry (a summary's, or ``Arm.describe()``).
Arm = Union[ArmRecord, Mapping[str, object]]


def bundle_of(run: Run) -> Bundle:
    """``run`` as a :class:`Bundle` (a summary document held in memory is wrapped, not loaded)."""
    return run if isinstance(run, Bundle) else Bundle(source="", folder="", summary=run)


def arm_record(arm: Arm) -> ArmRecord:
    return arm if isinstance(arm, ArmRecord) else ArmRecord.from_dict(arm)


def gil_enabled(run: Run) -> bool:
    """Whether the run's Python threads take turns on a GIL: False only when the interpreter reported its GIL
    off (an interpreter that does not report it, before 3.13 or PyPy, has one)."""
    return bundle_of(run).interpreter.gil_enabled is not False


def waiter_at_t0(arm: Arm, gil: bool) -> str:
    """What the arm's waiter is doing at ``t0``, given whether the run has a GIL: a spinning waiter in another
    thread polls only if it can run while the notifier runs (in C, in another process, or without a GIL)."""
    record = arm_record(arm)
    if record.waiter == "blocked":
        return PARKED_IN_KERNEL
    if record.waiter != "spinning":
        return NO_WAITER
    if record.scope == "self":
        return IS_NOTIFIER
    if record.scope == "cross-thread" and gil and record.family != "native":
        return WAITING_FOR_GIL
    return POLLING


@dataclasses.dataclass(frozen=True)
class Difference:
    """One way two arms differ: ``aspect`` is ``waiter``, ``scope`` or ``waiter at t0``."""

    aspect: str
    a: str
    b: str


@dataclasses.dataclass(frozen=True)
class Pairing:
    """Arm ``a`` against arm ``b``: how they differ (none: like for like; ``waiter``, ``scope`` and ``at_t0``
    are then what both share, else ``a``'s), and ``a / b`` at p50 and p99 (None: a side has no such figure)."""

    a: str
    b: str
    waiter: str
    scope: str
    at_t0: str
    differences: Tuple[Difference, ...]
    p50_ratio: Optional[float] = None
    p99_ratio: Optional[float] = None

    @property
    def like_for_like(self) -> bool:
        return not self.differences


def pair_arms(a: Arm, b: Arm, gil: bool = True) -> Pairing:
    """The pairing of two arms (records, summary entries or ``Arm.describe()``)."""
    x, y = arm_record(a), arm_record(b)
    aspects = (
        ("waiter", x.waiter, y.waiter),
        ("scope", x.scope, y.scope),
        ("waiter at t0", waiter_at_t0(x, gil), waiter_at_t0(y, gil)),
    )
    figures = [(lat.p50_ns, lat.p99_ns) if lat is not None else (None, None) for lat in (x.latency, y.latency)]
    return Pairing(x.name, y.name, aspects[0][1], aspects[1][1], aspects[2][1],
                   differences=tuple(Difference(aspect, p, q) for aspect, p, q in aspects if p != q),
                   p50_ratio=positive_ratio(figures[0][0], figures[1][0]), p99_ratio=positive_ratio(figures[0][1], figures[1][1]))


def lab_pairings(run: Run) -> List[Pairing]:
    """The lab's comparisons whose two arms are both in the run, in the lab's order."""
    bundle = bundle_of(run)
    by_name, gil = bundle.arms_by_name(), gil_enabled(bundle)
    return [pair_arms(by_name[a], by_name[b], gil) for a, b in bundle.lab_comparisons if a in by_name and b in by_name]


@dataclasses.dataclass(frozen=True)
class NativeRatio:
    """A Python arm against its C floor in the same run: ``latency`` (the arm's p50 over the floor's) or
    ``rate`` (the floor's ops/s over the arm's: how many times faster C is); ``match`` ``matched`` or ``nearest``."""

    arm: str
    native: str
    match: str
    kind: str
    python_value: float
    native_value: float
    ratio: float

    @property
    def interpreter_share(self) -> bool:
        """True when the floor is the same experiment, so the ratio is the interpreter's share."""
        return self.match == MATCHED


def native_ratio(arm: ArmRecord, native: Optional[ArmRecord]) -> Optional[NativeRatio]:
    """``arm`` against its C floor ``native`` (both measured), or None."""
    if native is None or not arm.native or native.name != arm.native or not arm.ok or not native.ok:
        return None
    match = MATCHED if arm.native_match == MATCHED else NEAREST
    if arm.latency is not None and native.latency is not None:
        ours, theirs = arm.latency.p50_ns, native.latency.p50_ns
        if ours is None or not theirs:
            return None
        return NativeRatio(arm.name, arm.native, match, "latency", ours, theirs, ours / theirs)
    ours_rate = arm.rate.ops_per_s if arm.rate is not None else None
    theirs_rate = native.rate.ops_per_s if native.rate is not None else None
    if ours_rate and theirs_rate:
        return NativeRatio(arm.name, arm.native, match, "rate", ours_rate, theirs_rate, theirs_rate / ours_rate)
    return None


def native_ratios(run: Run) -> Dict[str, NativeRatio]:
    """Every arm of the run measured beside its C floor, by arm name, in run order."""
    bundle = bundle_of(run)
    by_name = bundle.arms_by_name()
    ratios = (native_ratio(arm, by_name.get(arm.native)) for arm in bundle.arms() if arm.native)
    return {ratio.arm: ratio for ratio in ratios if ratio is not None}


@dataclasses.dataclass(frozen=True)
class LostWakes:
    """Why an arm's counted wakes were lost: ``coalesced`` (open-loop notifies merged into a later wake), ``stale``
    (waits an older wake answered, before their notify); the rest had no wake within the timeout."""

    total: int
    coalesced: int = 0
    stale: int = 0

    @property
    def timed_out(self) -> int:
        return max(self.total - self.coalesced - self.stale, 0)


def worker_infos(arm: ArmRecord) -> Tuple[Mapping[str, object], ...]:
    return arm.infos


def _info_count(arm: ArmRecord, key: str) -> int:
    """``info[key]`` summed over the pooled workers' infos (or the one info)."""
    values = [one.get(key) for one in arm.infos]
    return sum(v for v in values if isinstance(v, int) and not isinstance(v, bool) and v > 0)


def lost_wakes(arm: Arm) -> LostWakes:
    """The arm's lost wakes, split by cause as far as its raw record's ``info`` (the driver's own, free-form) tells."""
    record = arm_record(arm)
    lost = record.latency.lost if record.latency is not None else 0
    coalesced = min(_info_count(record, "coalesced"), lost)
    stale = min(_info_count(record, "stale_wakes"), lost - coalesced)
    return LostWakes(total=lost, coalesced=coalesced, stale=stale)


def _lost_parts(lost: LostWakes, timeout_s: object) -> List[str]:
    parts = []
    if lost.timed_out:
        parts.append("%d with no wake within the %s s timeout" % (lost.timed_out, timeout_s))
    if lost.coalesced:
        parts.append("%d coalesced (the notify came while the waiter was still busy with an earlier wake, "
                     "which answered both)" % lost.coalesced)
    if lost.stale:
        parts.append("%d answered by an earlier notify's wake (t1 before t0)" % lost.stale)
    return parts


_STATUS_CAVEATS = {"failed": "%s failed: %s", "skipped": "%s was skipped: %s"}


def derive_caveats(run: Run) -> List[str]:
    """The caveats of the run, most important first."""
    bundle = bundle_of(run)
    caveats: List[str] = []
    planted = bundle.parameters.planted_delay_us
    if planted:
        caveats.append("A planted delay of %s µs was inserted between t0 and every notify call: this run "
                       "is a self-test of the harness, not a measurement of this machine." % planted)
    if bundle.interrupted:
        caveats.append("The run was interrupted: only arms marked ok have figures.")
    for pairing in lab_pairings(bundle):
        if not pairing.like_for_like:
            caveats.append(
                "%s and %s are not the same experiment (%s). Their ratio mixes the mechanism with these differences."
                % (pairing.a, pairing.b, "; ".join("%s: %s against %s" % (d.aspect, d.a, d.b) for d in pairing.differences))
            )
    for arm in bundle.arms():
        lost = lost_wakes(arm)
        if lost.total:
            n = arm.latency.n if arm.latency is not None else 0
            caveats.append("%s lost %d of %d counted wakes: %s." % (
                arm.name, lost.total, lost.total + n, "; ".join(_lost_parts(lost, bundle.parameters.timeout_s))))
        if arm.status in _STATUS_CAVEATS:
            caveats.append(_STATUS_CAVEATS[arm.status] % (arm.name, arm.reason))
    return caveats
