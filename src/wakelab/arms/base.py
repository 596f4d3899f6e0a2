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
"""

from __future__ import annotations

import dataclasses
import time
from typing import Callable, Dict, List, Optional, Tuple, Union

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

# Families, in report order.
FAMILIES = ("threads", "signals", "fds", "asyncio", "processes", "native")

now_ns = time.perf_counter_ns


@dataclasses.dataclass(frozen=True)
class MeasureParams:
    """Everything an arm needs to take its samples.

    ``n`` counted wakes after ``warmup`` discarded ones; each blocked wake is
    preceded by ``settle_us`` of quiet after the waiter announced it is about
    to wait; every wait gives up after ``timeout_s`` and counts a lost wake.
    ``planted_delay_us`` inserts a busy-wait between ``t0`` and the notify
    call: it exists to prove that the harness sees a slow notify path, and
    any run that uses it says so in its evidence.
    """

    n: int = 200
    warmup: int = 10
    settle_us: int = 1000
    timeout_s: float = 1.0
    planted_delay_us: int = 0
    install_n: int = 20000
    rounds: int = 7
    warmup_rounds: int = 1

    @property
    def settle_s(self) -> float:
        return self.settle_us / 1e6

    @property
    def planted_delay_ns(self) -> int:
        return self.planted_delay_us * 1000

    @property
    def total_wakes(self) -> int:
        return self.warmup + self.n

    def to_dict(self) -> Dict[str, object]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class RawLatency:
    """Raw record of a latency arm.

    ``samples_ns`` holds the counted wakes in the order taken (warm-up wakes
    already dropped); ``lost`` counts counted wakes whose wait timed out.
    ``components_ns`` optionally splits a wake into named parts (for example
    signal *delivery* and *handler run*), each a series of its own.
    ``info`` carries arm-specific facts worth keeping (CPUs used, fds ...).
    """

    samples_ns: Tuple[int, ...]
    lost: int
    warmup_discarded: int
    components_ns: Dict[str, Tuple[int, ...]] = dataclasses.field(default_factory=dict)
    info: Dict[str, object] = dataclasses.field(default_factory=dict)
    kind: str = LATENCY


@dataclasses.dataclass(frozen=True)
class RawRate:
    """Raw record of a rate arm: ``n_per_round`` operations per round.

    ``round_ns`` are the counted rounds' elapsed times; ``baseline_round_ns``
    the same loop with an empty body, taken interleaved with the real rounds.
    """

    n_per_round: int
    round_ns: Tuple[int, ...]
    baseline_round_ns: Tuple[int, ...]
    warmup_rounds: int
    info: Dict[str, object] = dataclasses.field(default_factory=dict)
    kind: str = RATE


Raw = Union[RawLatency, RawRate]


def _always_available() -> Optional[str]:
    return None


@dataclasses.dataclass(frozen=True)
class Arm:
    """One wake experiment.

    ``requires`` returns ``None`` when the arm can run here, or the reason it
    cannot (platform, Python version, not the main thread, no compiler).
    ``native`` names the native-floor arm that does the same experiment in C.
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

    def unavailable_reason(self) -> Optional[str]:
        return self.requires()

    def describe(self) -> Dict[str, object]:
        """The arm's identity as plain data (for evidence and listings)."""
        return {
            "name": self.name,
            "family": self.family,
            "kind": self.kind,
            "mechanism": self.mechanism,
            "waiter": self.waiter,
            "scope": self.scope,
            "t0": self.t0,
            "t1": self.t1,
            "native": self.native,
        }


def spin_until(deadline_ns: int) -> None:
    """Busy-wait until ``perf_counter_ns()`` reaches ``deadline_ns``.

    Used for the planted delay: ``time.sleep`` would add its own wake-up
    latency and make the planted figure imprecise.
    """
    while now_ns() < deadline_ns:
        pass


def plant_delay(params: MeasureParams, t0_ns: int) -> None:
    """Called by every notifier between taking ``t0`` and notifying."""
    if params.planted_delay_us:
        spin_until(t0_ns + params.planted_delay_ns)


class LatencyCollector:
    """Accumulates one arm's wakes, dropping the warm-up ones.

    Call :meth:`add` with the latency of each wake in order (``None`` for a
    lost wake); the first ``warmup`` calls are discarded.
    """

    def __init__(self, params: MeasureParams) -> None:
        self._warmup = params.warmup
        self._seen = 0
        self.samples_ns: List[int] = []
        self.lost = 0
        self.components_ns: Dict[str, List[int]] = {}
        self._pending_components: Dict[str, int] = {}

    @property
    def counting(self) -> bool:
        """True once the warm-up wakes are behind us."""
        return self._seen >= self._warmup

    def add(self, latency_ns: Optional[int], **components: int) -> None:
        counted = self._seen >= self._warmup
        self._seen += 1
        if not counted:
            return
        if latency_ns is None:
            self.lost += 1
            return
        self.samples_ns.append(latency_ns)
        for name, value in components.items():
            self.components_ns.setdefault(name, []).append(value)

    def result(self, **info: object) -> RawLatency:
        return RawLatency(
            samples_ns=tuple(self.samples_ns),
            lost=self.lost,
            warmup_discarded=min(self._seen, self._warmup),
            components_ns={k: tuple(v) for k, v in self.components_ns.items()},
            info=dict(info),
        )
