"""What an arm is: its identity, its parameters, and the raw record it returns.

This module is on the measuring side: standard library only, Python 3.9+.

An *arm* is one wake experiment. It declares, before anything is measured,
exactly which instant ``t0`` and which instant ``t1`` are, in what state the
waiter sits when it is woken, and whether notifier and waiter share a thread,
a process, or neither.  Arms with different waiter states are different
experiments, and reports keep them apart.

A latency arm returns :class:`RawLatency` (one ``t1 - t0`` per wake, in
nanoseconds); a rate arm returns :class:`RawRate` (the elapsed time of whole
rounds of a tight loop, plus the same loop with an empty body).

Samples are compact.  A worker may hold a million wakes: as Python ints in a
list they take about 36 bytes each (the object and its pointer), as machine
integers 8.  So every series is an :class:`IntSeries` (an ``array.array``,
int64 for times), from the collector's preallocated slots to the raw record
the worker streams out, and the collector turns its slots into the record's
samples in place, never through a second copy.
"""

from __future__ import annotations

import array
import dataclasses
import importlib
import time
from typing import Any, Callable, Dict, Iterable, List, MutableSequence, NamedTuple, Optional, Sequence, Tuple, Union

# Kinds of arm.
LATENCY = "latency"
RATE = "rate"

# Waiter states (see DESIGN: part of an arm's identity).
BLOCKED = "blocked"
SPINNING = "spinning"
NO_WAITER = "none"

# Scopes.
SELF = "self"
CROSS_THREAD = "cross-thread"
CROSS_PROCESS = "cross-process"

now_ns = time.perf_counter_ns

# Sentinels of :attr:`LatencyCollector.slots` in its compact form: the two largest unsigned
# 64-bit values, which no latency reaches (2 ** 63 ns is 292 years).  (In the list form, a slot
# not reached holds an object of its own, and a lost wake None or LOST_NS.)
UNSET_NS = 2**64 - 1  # no wake was recorded in this slot
LOST_NS = UNSET_NS - 1  # a lost wake: its wait timed out (drivers store it where they used to store None)
# Arms of up to this many wakes keep their slots in a list (2.5 MB at most), beyond it in an
# unsigned int64 array (8 bytes a wake instead of about 40).  A list store is the cheapest
# bookkeeping CPython has (STORE_SUBSCR_LIST_INT); an array's converts the int and frees it,
# some 10 % of a timer pair more (bench/harness_overhead.py measures both).
LIST_SLOTS_MAX = 1 << 16


class IntSeries(array.array):
    """A compact series of machine integers: ``IntSeries("q", values)`` (int64), 8 bytes a value.

    An ``array.array`` that also compares equal to a tuple or list holding the
    same integers, as the tuples it replaces did (``raw.samples_ns == ()``).
    Unhashable, as arrays are.
    """

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (tuple, list)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return bool(array.array.__eq__(self, other))

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    __hash__ = None


def int64s(values: Iterable[int] = ()) -> IntSeries:
    """An int64 :class:`IntSeries` of ``values`` (OverflowError beyond int64)."""
    return IntSeries("q", values)


#: The settle's random part unless told (``wakelab run --settle-jitter-us``), µs: it reveals polls
#: of up to about 2 ms and costs 1 ms a blocked wake on average (see MeasureParams.settle_jitter_us).
DEFAULT_SETTLE_JITTER_US = 2000
# --rigorous (compare-grade, as pyperf's --rigorous): this many times the lab's counted wakes and rounds, and this many
# fresh workers per repetition (wakelab.harness.runner sizes a plan by them).  bench/aa_power.py measures what it buys.
RIGOROUS_FACTOR = 5
RIGOROUS_WORKERS_PER_REPETITION = 2


@dataclasses.dataclass(frozen=True)
class MeasureParams:
    """Everything an arm needs to take its samples.

    ``n`` counted wakes after ``warmup`` discarded ones; each blocked wake is
    preceded by a settle -- quiet after the waiter announced it is about to
    wait -- of ``settle_us`` plus a random part drawn afresh for every wake,
    uniform over 0..``settle_jitter_us`` whole microseconds, from a stream
    fixed by ``seed`` and ``settle_stream`` (see
    :func:`wakelab.core.drivers.settle_schedule_s`); every wait gives up after
    ``timeout_s`` and counts a lost wake.
    ``planted_delay_us`` inserts a wait between ``t0`` and the notify call: it
    exists to prove that the harness sees a slow notify path, and any run that
    uses it says so in its evidence.  ``planted_after_us`` inserts one right
    after the notify, where it must *not* show (a negative control).
    """

    n: int = 200
    warmup: int = 10
    settle_us: int = 1000
    timeout_s: float = 1.0
    planted_delay_us: int = 0
    # Self-test negative control: a wait planted right *after* every notify (see core.drivers).
    planted_after_us: int = 0
    install_n: int = 20000
    rounds: int = 7
    warmup_rounds: int = 1
    # Placement (see wakelab.core.placement): "any", "same" or "split", and the CPUs used.
    placement: str = "any"
    notifier_cpu: Optional[int] = None
    waiter_cpu: Optional[int] = None
    # Timing mode: "closed" (notify once the waiter has settled) or "open" (notify on a fixed
    # schedule every interval_us; latency is taken from the scheduled instant).
    mode: str = "closed"
    interval_us: int = 1000
    # The settle's random part, up to this many µs (0: every settle is settle_us).  A wait that
    # polls instead of blocking (it sleeps P between checks) answers a notify at its next check: a
    # fixed settle always lands at the same phase of the poll and reports a constant that is not
    # the wait's latency, while a random part that spans P spreads the wakes over the period and
    # shows it (wakelab.analysis.quality names the period).  The default spans polls of up to about
    # 2 ms at an average cost of 1 ms a wake; an arm may ask for more (Arm.min_settle_jitter_us).
    settle_jitter_us: int = DEFAULT_SETTLE_JITTER_US
    # Seed of the random settles; None: the runner draws one as a run starts and records it, so a
    # run is reproduced with --seed.  settle_stream: which of the seed's streams this measurement
    # draws from -- the runner gives each worker of an arm its own (the arm's k-th worker: k).
    seed: Optional[int] = None
    settle_stream: int = 0

    @property
    def settle_s(self) -> float:
        """The settle's fixed part, seconds."""
        return self.settle_us / 1e6

    @property
    def settle_max_s(self) -> float:
        """The longest settle any wake can get (fixed and random parts), seconds: for bounds on waits."""
        return (self.settle_us + max(0, self.settle_jitter_us)) / 1e6

    @property
    def planted_delay_ns(self) -> int:
        return self.planted_delay_us * 1000

    @property
    def planted_after_ns(self) -> int:
        return self.planted_after_us * 1000

    @property
    def total_wakes(self) -> int:
        return self.warmup + self.n

    def to_dict(self) -> Dict[str, object]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Dict[str, object]) -> "MeasureParams":
        """Inverse of :meth:`to_dict`; unknown keys are an error (a version mismatch)."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ValueError("unknown measurement parameters: %s" % ", ".join(unknown))
        return cls(**data)  # type: ignore[arg-type]


@dataclasses.dataclass(frozen=True)
class RawLatency:
    """Raw record of a latency arm.

    ``samples_ns`` holds the counted wakes in the order taken (warm-up wakes
    already dropped); ``lost`` counts counted wakes whose wait timed out.
    ``components_ns`` optionally splits a wake into named parts (for example
    signal *delivery* and *handler run*), each a series of its own.
    ``info`` carries arm-specific facts worth keeping (CPUs used, fds ...).
    """

    samples_ns: Sequence[int]
    lost: int
    warmup_discarded: int
    components_ns: Dict[str, Sequence[int]] = dataclasses.field(default_factory=dict)
    info: Dict[str, object] = dataclasses.field(default_factory=dict)
    kind: str = LATENCY
    # Per wake, aligned with ``samples_ns``: the CPU the waiter ran on right after ``t1`` and the
    # one the notifier ran on right before ``t0`` (both read outside the timed window), -1 where
    # unknown.  Empty when the driver does not record them.
    waiter_cpus: Sequence[int] = ()
    notifier_cpus: Sequence[int] = ()


@dataclasses.dataclass(frozen=True)
class RawRate:
    """Raw record of a rate arm: ``n_per_round`` operations per round.

    ``round_ns`` are the counted rounds' elapsed times; ``baseline_round_ns``
    the same loop with an empty body, taken interleaved with the real rounds.
    """

    n_per_round: int
    round_ns: Sequence[int]
    baseline_round_ns: Sequence[int]
    warmup_rounds: int
    info: Dict[str, object] = dataclasses.field(default_factory=dict)
    kind: str = RATE


Raw = Union[RawLatency, RawRate]


def with_info(raw: RawLatency, **info: object) -> RawLatency:
    """``raw`` with an arm's own facts added to the driver's ``info`` (the record is frozen: a new one)."""
    return dataclasses.replace(raw, info={**raw.info, **info})


def raw_to_dict(raw: Raw, compact: bool = False) -> Dict[str, object]:
    """A raw record as plain JSON-able data (the samples files and the worker protocol).

    ``compact``: a latency record's series stay the record's own compact
    arrays instead of becoming lists (for a writer that streams them, such as
    the worker's reply: no list of a million ints is built).
    """
    if isinstance(raw, RawLatency):
        series: Callable[[Sequence[int]], object] = (lambda v: v) if compact else list
        doc: Dict[str, object] = {
            "kind": LATENCY,
            "samples_ns": series(raw.samples_ns),
            "lost": raw.lost,
            "warmup_discarded": raw.warmup_discarded,
            "components_ns": {k: series(v) for k, v in raw.components_ns.items()},
            "info": dict(raw.info),
        }
        if raw.waiter_cpus or raw.notifier_cpus:  # the per-wake CPUs, when the driver recorded them
            doc.update(waiter_cpu=series(raw.waiter_cpus), notifier_cpu=series(raw.notifier_cpus))
        return doc
    return {
        "kind": RATE,
        "n_per_round": raw.n_per_round,
        "round_ns": list(raw.round_ns),
        "baseline_round_ns": list(raw.baseline_round_ns),
        "warmup_rounds": raw.warmup_rounds,
        "info": dict(raw.info),
    }


def raw_from_dict(data: object) -> Raw:
    """Inverse of :func:`raw_to_dict`; raises ValueError on anything malformed."""

    def ints(value: object, what: str) -> IntSeries:
        if not isinstance(value, list) or not all(type(v) is int for v in value):
            raise ValueError("%s must be a list of integers" % what)
        try:
            return int64s(value)
        except OverflowError:
            raise ValueError("%s holds an integer beyond 64 bits" % what) from None

    def count(value: object, what: str) -> int:
        if type(value) is not int or value < 0:
            raise ValueError("%s must be a non-negative integer" % what)
        return value

    if not isinstance(data, dict):
        raise ValueError("a raw record must be an object")
    info = data.get("info") or {}
    if not isinstance(info, dict):
        raise ValueError("info must be an object")
    if data.get("kind") == LATENCY:
        components = data.get("components_ns") or {}
        if not isinstance(components, dict):
            raise ValueError("components_ns must be an object")
        samples = ints(data.get("samples_ns"), "samples_ns")
        cpus = {key: ints(data.get(key, []), key) for key in ("waiter_cpu", "notifier_cpu")}
        for key, series in cpus.items():
            if series and len(series) != len(samples):
                raise ValueError("%s must hold one CPU per sample (%d), not %d" % (key, len(samples), len(series)))
        return RawLatency(
            samples_ns=samples,
            lost=count(data.get("lost"), "lost"),
            warmup_discarded=count(data.get("warmup_discarded"), "warmup_discarded"),
            components_ns={str(k): ints(v, "components_ns." + str(k)) for k, v in components.items()},
            info=info,
            waiter_cpus=cpus["waiter_cpu"],
            notifier_cpus=cpus["notifier_cpu"],
        )
    if data.get("kind") == RATE:
        return RawRate(
            n_per_round=count(data.get("n_per_round"), "n_per_round"),
            round_ns=ints(data.get("round_ns"), "round_ns"),
            baseline_round_ns=ints(data.get("baseline_round_ns"), "baseline_round_ns"),
            warmup_rounds=count(data.get("warmup_rounds"), "warmup_rounds"),
            info=info,
        )
    raise ValueError("unknown raw record kind %r" % (data.get("kind"),))


# -- what an arm declares besides its identity ------------------------------------------------
#
# An arm carries its own facts: its C floor and how the two relate, where its t1 is taken, and
# the parts it plays in the guidance.  The registry derives the tables the rest of wakelab reads
# ("vs C", t1 shapes, the guidance's roles) from these declarations; nothing else lists arms.

# How an arm's C floor (``Arm.native``) relates to it (``Arm.native_match``).
MATCHED = "matched"  # same scope, waiter state and t1 shape: the ratio is the interpreter's share
NEAREST = "nearest"  # the closest C experiment there is, shown labelled so, never the interpreter's share

# Where t1 is taken, relative to the waiter's wait (:attr:`T1Shape.point`).
AFTER_WAIT = "after-wait"  # first statement after the wait returns, before anything is read
AFTER_READ = "after-read"  # after the call that waits *and* consumes returns (recv with a timeout)
HANDLER = "handler"  # first statement of the signal handler
CALLBACK = "callback"  # first statement of a callback the event loop dispatched after its wait
TASK = "task"  # first statement of a task an executor's worker runs after taking it off its queue
T1_POINTS = (AFTER_WAIT, AFTER_READ, HANDLER, CALLBACK, TASK)


class T1Shape(NamedTuple):
    """Which wait a latency arm's ``t1`` follows, and where it is taken (one of :data:`T1_POINTS`).

    Declared by every latency arm on either side of a "vs C" pairing: a matched pair must agree
    here, as well as in scope and waiter state (``tests/test_native_pairs.py``).
    """

    wait: str  # the waiter's kernel wait: futex, poll, epoll, select, sigtimedwait, pause, spin, sleep-poll
    point: str


# Parts an arm plays in the guidance (:mod:`wakelab.analysis.guidance`), :attr:`Role.name`.
ROLE_HANDLER = "handler"  # its wake runs a Python-level signal handler
ROLE_SIGWAIT = "sigwait"  # it takes a signal without a handler: the blocked answer to a busy-wait figure
ROLE_HANDLER_COST = "handler-cost"  # against: the same signal path without a handler (same waiter state, scope)
ROLE_POOL = "pool"  # an executor's hand-off, submit() to the task's first statement
ROLE_POLLS = "polls"  # its wait polls; against: the blocking wait of the same reach, named instead
ROLE_UNWRAPPED_INSTALL = "unwrapped-install"  # against: the install arm it is without the Python wrapper of
ROLE_REALTIME = "realtime"  # against: the same arm with its waiter under normal scheduling
ROLES = (ROLE_HANDLER, ROLE_SIGWAIT, ROLE_HANDLER_COST, ROLE_POOL, ROLE_POLLS, ROLE_UNWRAPPED_INSTALL, ROLE_REALTIME)


class Role(NamedTuple):
    """One part an arm plays in the guidance: ``name`` (one of :data:`ROLES`), and for a role
    that sets two arms side by side, the other arm (``against``) and, for a handler's cost, what
    the pair isolates and the headline's words for the difference."""

    name: str
    against: Optional[str] = None
    isolates: str = ""
    adds: str = ""


# Groups the guidance compares arms within (the ids of :data:`wakelab.analysis.guidance.GROUPS`),
# as a family (``Family.group``) or an arm (``Arm.group``) declares them.  Arms of no declared
# group are grouped by their waiter state and scope (blocked in-process wake paths by default).
GROUP_SIGNALS = "signals"
GROUP_PROCESSES = "processes"
GROUP_HANDOFF = "handoff"
GROUP_STORMS = "storms"
GROUP_NATIVE = "native"


@dataclasses.dataclass(frozen=True)
class Family:
    """A family of arms, as its module declares it (``FAMILY = Family(...)`` in a module of
    :mod:`wakelab.core.families`; the registry finds the modules and derives its tables).

    ``id`` is the word arms and evidence name it by; ``title`` heads its rows in reports;
    ``color`` is its colour in the HTML report's charts (Okabe-Ito's palette where it reaches:
    its sky blue, ``#56B4E9``, is kept for a family a report does not know); ``order`` places it
    among the families in reports (lower first); ``group`` is the guidance group its arms are
    compared within (``GROUP_*``; None: by waiter state and scope); ``user_arms`` says whether a
    user-defined arm (:mod:`wakelab.api.v1`) may be listed under it.
    """

    id: str
    title: str
    color: str
    order: int
    group: Optional[str] = None
    user_arms: bool = False


def _always_available() -> Optional[str]:
    return None


@dataclasses.dataclass(frozen=True)
class Arm:
    """One wake experiment.

    ``requires`` returns ``None`` when the arm can run here, or the reason it
    cannot (platform, Python version, not the main thread, no compiler).
    ``native`` names the native-floor arm that does the same experiment in C,
    or the nearest one there is (``native_match``: :data:`MATCHED` or
    :data:`NEAREST`); ``t1_shape`` says which wait ``t1`` follows and where
    it is taken, for every latency arm on either side of such a pairing.
    ``roles`` and ``group`` are the arm's parts in the guidance (see
    :class:`Role`).  ``driver`` names the module of :mod:`wakelab.core.drivers`
    that runs the arm's wake loop; whether ``params.mode == "open"`` is
    honoured (:attr:`open_loop`) is a property of that driver, not of the arm.
    """

    name: str
    family: str
    kind: str
    mechanism: str
    waiter: str
    scope: str
    t0: str
    t1: str
    measure: Callable[[MeasureParams], Raw]
    requires: Callable[[], Optional[str]] = _always_available
    native: Optional[str] = None
    needs_main_thread: bool = False
    driver: str = ""
    # How ``native`` relates to this arm: MATCHED (same scope, waiter state and t1: the
    # ratio is the interpreter's share) or NEAREST (the closest C experiment, labelled so).
    native_match: Optional[str] = None
    # Which wait t1 follows and where it is taken (declared on both sides of a "vs C" pairing).
    t1_shape: Optional[T1Shape] = None
    # The arm's parts in the guidance, and its guidance group where it is not its family's.
    roles: Tuple[Role, ...] = ()
    group: Optional[str] = None
    # The least random part of the settle this arm is measured with, µs: an arm whose wait is
    # known to poll every P declares a part that spans P (more than the run's default), so that
    # its wakes spread over the period instead of locking onto one phase (see
    # MeasureParams.settle_jitter_us).  The runner applies it where it builds the arm's
    # parameters (:meth:`params_for`) and records it in the arm's entry.
    min_settle_jitter_us: int = 0
    # False for an arm whose waiter takes no settle before t0 (a storm's receiver never waits for
    # one probe at a time): nothing puts its notify at a random phase of a poll, so no polling is
    # looked for in its wakes (see wakelab.analysis.quality.find_polling).
    settles: bool = True

    @property
    def open_loop(self) -> bool:
        """True when the arm's driver supports open-loop timing (``OPEN_LOOP`` in its module)."""
        if not self.driver:
            return False
        module = importlib.import_module("wakelab.core.drivers." + self.driver)
        return bool(getattr(module, "OPEN_LOOP", False))

    def unavailable_reason(self) -> Optional[str]:
        return self.requires()

    def params_for(self, params: MeasureParams) -> MeasureParams:
        """``params`` as this arm is measured with them: the settle's random part raised to
        :attr:`min_settle_jitter_us` where the run's is smaller (a minimum, whatever the run asked)."""
        if self.min_settle_jitter_us > params.settle_jitter_us:
            return dataclasses.replace(params, settle_jitter_us=self.min_settle_jitter_us)
        return params

    def describe(self) -> Dict[str, object]:
        """The arm's identity as plain data (for evidence and listings)."""
        described: Dict[str, object] = {key: getattr(self, key) for key in _DESCRIBED}
        described["open_loop"] = self.open_loop
        return described


# The fields of an arm's identity (:meth:`Arm.describe`), in the order the evidence lists them.
_DESCRIBED = ("name", "family", "kind", "mechanism", "waiter", "scope", "t0", "t1", "native", "native_match", "driver")


class LatencyCollector:
    """Accumulates one arm's wakes, dropping the warm-up ones.

    Call :meth:`add` with the latency of each wake in order (``None`` for a
    lost wake); the first ``warmup`` wakes are discarded.  Tight loops write
    into :attr:`slots` instead, ``slots[i] = latency`` for the i-th wake and
    ``slots[i] = LOST_NS`` for a lost one: a preallocated sequence and an
    index store (no call per wake), so that the harness adds as little as
    possible to the cost of a timer pair.  Up to :data:`LIST_SLOTS_MAX`
    wakes the slots are a list (where None also marks a lost wake); beyond,
    an unsigned int64 array, 8 bytes a wake where a list of ints takes about
    40, its slots not reached holding :data:`UNSET_NS`.  The split into
    warm-up, lost and counted wakes happens once, in :meth:`result`, in
    place: the slots become the record's samples (the collector is spent).
    """

    def __init__(self, params: MeasureParams) -> None:
        self._warmup = params.warmup
        total = params.total_wakes
        self.slots: MutableSequence[Any] = [_UNSET] * total if total <= LIST_SLOTS_MAX else _filled("Q", UNSET_NS, total)
        self._next = 0
        self._components: Dict[str, IntSeries] = {}
        # Per-wake CPUs (``waiter_cpus[i]`` / ``notifier_cpus[i]`` for the i-th wake, -1 unknown),
        # stored by drivers that read them outside the timed window; None: not recorded.
        self.waiter_cpus: Optional[IntSeries] = None
        self.notifier_cpus: Optional[IntSeries] = None

    def record_cpus(self) -> Tuple[IntSeries, IntSeries]:
        """Start recording per-wake CPUs: the two preallocated arrays drivers index into."""
        total = len(self.slots)
        self.waiter_cpus = _filled("i", -1, total)
        self.notifier_cpus = _filled("i", -1, total)
        return self.waiter_cpus, self.notifier_cpus

    @property
    def counting(self) -> bool:
        """True once the warm-up wakes are behind us (for :meth:`add` users)."""
        return self._next >= self._warmup

    def add(self, latency_ns: Optional[int], **components: int) -> None:
        index = self._next
        self._next += 1
        compact = isinstance(self.slots, array.array)
        value: Optional[int] = latency_ns
        if latency_ns is None:
            value = LOST_NS if compact else None
        elif latency_ns < 0 and compact:
            raise ValueError("a negative latency (%d ns): t1 was taken before t0" % latency_ns)
        if index < len(self.slots):
            self.slots[index] = value
        else:
            self.slots.append(value)
        if index >= self._warmup and latency_ns is not None:
            for name, part in components.items():
                self._components.setdefault(name, int64s()).append(part)

    def result(self, **info: object) -> RawLatency:
        slots = self.slots
        cpus: List[MutableSequence[int]] = [c for c in (self.waiter_cpus, self.notifier_cpus) if c is not None]
        for one in cpus:
            if len(one) < len(slots):  # a driver that appended past the preallocated wakes
                one.extend([-1] * (len(slots) - len(one)))
        series = [slots] + cpus
        if isinstance(slots, array.array):
            unset = slots.count(UNSET_NS)
            first_unset = slots.index(UNSET_NS) if unset else len(slots)
            if unset == len(slots) - first_unset:  # the usual case: the wakes not reached are a tail
                for one in series:
                    del one[first_unset:]
            else:
                _keep_in_place(series, lambda i: slots[i] != UNSET_NS)
            any_lost = LOST_NS in slots
        else:
            # A list (up to LIST_SLOTS_MAX wakes): drivers store None for a lost wake, or LOST_NS.
            _keep_in_place(series, lambda i: slots[i] is not _UNSET and slots[i] != UNSET_NS)
            any_lost = True
        taken = len(slots)
        warmup = min(taken, self._warmup)
        for one in series:
            del one[:warmup]
        counted = len(slots)
        if any_lost:
            _keep_in_place(series, lambda i: slots[i] is not None and slots[i] != LOST_NS)
        samples = slots if isinstance(slots, IntSeries) else int64s(slots)
        self.slots = []  # spent: the samples are the old slots
        waiter_cpus: Sequence[int] = ()
        notifier_cpus: Sequence[int] = ()
        if self.waiter_cpus is not None and self.notifier_cpus is not None:
            waiter_cpus, notifier_cpus = self.waiter_cpus, self.notifier_cpus
        return RawLatency(
            samples_ns=samples,
            lost=counted - len(samples),
            warmup_discarded=warmup,
            components_ns=dict(self._components),
            info=dict(info),
            waiter_cpus=waiter_cpus,
            notifier_cpus=notifier_cpus,
        )


_UNSET: object = object()  # a list slot no wake has been recorded in yet


def _filled(typecode: str, value: int, length: int) -> IntSeries:
    """An :class:`IntSeries` of ``length`` copies of ``value`` (in-place repetition keeps the type)."""
    series = IntSeries(typecode, (value,))
    series *= length
    return series


def _keep_in_place(series: Sequence[MutableSequence[int]], keep: Callable[[int], bool]) -> None:
    """Drop, from every array of ``series`` (aligned, of the same length), the positions where
    ``keep(i)`` is false, in place: no second copy of a million samples."""
    first = series[0]
    kept = 0
    for i in range(len(first)):
        if keep(i):
            if kept != i:
                for one in series:
                    one[kept] = one[i]
            kept += 1
    for one in series:
        del one[kept:]
