"""Labs: named presets of arms, parameters, comparisons and the prose around them.

Lab 135 reproduces the original "signal vs threading.Event wakeup" lab with
its original parameters.  Later labs widen the question; each names the
pairs of arms whose ratio answers it.  Whether a pair is like for like is
never asserted here: the analysis derives it from the arms' waiter state,
scope and what the waiter does at t0 (:func:`wakelab.analysis.caveats.pair_arms`),
and a test holds every pair of :data:`MATCHED_PAIRS` to it.
"""

from __future__ import annotations

import dataclasses
from typing import List, Optional, Tuple

from wakelab.core.registry import all_arms
from wakelab.core.model import MeasureParams
from wakelab.errors import UsageError


@dataclasses.dataclass(frozen=True)
class Comparison:
    """Arm ``a`` against arm ``b``: the report gives ``a / b`` at p50 and p99."""

    a: str
    b: str


@dataclasses.dataclass(frozen=True)
class Lab:
    """A preset: which arms, with which parameters, answering which question."""

    id: str
    title: str
    question: str
    arms: Tuple[str, ...]
    params: MeasureParams = MeasureParams()
    comparisons: Tuple[Comparison, ...] = ()
    methodology: Tuple[str, ...] = ()
    limits: Tuple[str, ...] = ()
    reproduce_script: Optional[str] = None
    aliases: Tuple[str, ...] = ()


LAB_135 = Lab(
    id="135-signal-vs-event-wakeup",
    title="Lab 135: signal vs threading.Event wakeup",
    question=(
        "How long does threading.Event take to wake a worker thread, compared with a "
        "SIGUSR1 self-signal reaching its Python handler, and what does installing a "
        "signal handler cost?"
    ),
    arms=("event", "sigusr1-self", "signal-install"),
    params=MeasureParams(n=200, install_n=20000, rounds=7),
    comparisons=(Comparison("event", "sigusr1-self"),),
    methodology=(
        "The sigusr1-self arm spins in the main thread until its handler has run: no "
        "thread sleeps, so no scheduler wake-up is in its figure. The event arm's "
        "worker is asleep in the kernel and must be scheduled back in, so its figure "
        "includes a thread wake-up. Read the ratio as 'a self-signal round trip "
        "against an Event wake-up', not as 'signals beat threads'.",
        "Python runs signal handlers only in the main thread, and only when that "
        "thread next checks for pending signals; a busy-waiting main thread checks "
        "almost at once, a blocked or computing one may not.",
    ),
    limits=(
        "One machine, one process, one interpreter per run.",
        "Not a multi-process signal storm, and no real-time guarantee.",
        "Figures taken in a VM include the hypervisor's idle and wake-up behaviour.",
    ),
    reproduce_script="lab-evidence/135-signal-vs-event-wakeup/results/run_lab.py",
    aliases=("135", "lab135"),
)

# Pairs that answer Lab 135's question like for like: the same waiter state, the same scope and
# the same waiter at t0 on both sides.  There is no spinning pair: sigusr1-self signals its own
# thread, and the spinning thread arms (event-spin, queue-spin) wake another thread which, under
# a GIL, waits for the GIL at t0 instead of polling.
MATCHED_PAIRS = (
    Comparison("pause-handler", "event"),
    Comparison("sigwait-thread-to-main", "event"),
    Comparison("wakeup-fd-select", "pipe"),
)

_COMMON_LIMITS = (
    "One machine and one interpreter per run; compare interpreters or machines side by side, never across days.",
    "Figures taken in a VM include the hypervisor's idle and wake-up behaviour; where each side ran is not pinned.",
)

LAB_MATCHED = Lab(
    id="matched",
    title="Matched pairs: signal vs threading.Event, like for like",
    question=(
        "Lab 135 compared a blocked Event waiter with a spinning signal waiter. With the waiter "
        "state held equal, how do signal wake paths compare with threading.Event and a pipe, and "
        "how far is each above the same experiment in C?"
    ),
    arms=(
        "event", "pause-handler", "sigwait-thread-to-main", "pipe", "wakeup-fd-select",
        "event-spin", "sigusr1-self", "signal-install",
        "native-condvar", "native-sigwait", "native-pipe", "native-self-signal", "native-sigaction-install",
        "native-pause-handler", "native-wakeup-fd-select",
    ),
    comparisons=MATCHED_PAIRS,
    methodology=(
        "Each comparison pairs two arms that are the same experiment but for the mechanism: the "
        "same waiter state, the same scope, and the waiter doing the same thing at t0. A blocked "
        "signal waiter has to be woken by another thread, so the pairs are all blocked and "
        "cross-thread: both waiters parked in the kernel.",
        "sigusr1-self, the spinning signal arm, has no like-for-like Event counterpart. It signals "
        "its own thread, and a thread cannot wait on an Event it sets itself; event-spin wakes "
        "another thread, which under a GIL is not polling at t0 but waiting for the GIL the "
        "notifier holds. sigusr1-self is compared with its C floor only.",
        "The 'vs C' column divides each Python arm's p50 by the p50 of its C floor, run in this "
        "run. Where the C experiment is the same (same scope, waiter state and t1) the ratio is the "
        "interpreter's share; where there is only a nearest floor, the column says so and the ratio "
        "is not the interpreter's share.",
    ),
    limits=_COMMON_LIMITS,
)

LAB_CATALOGUE = Lab(
    id="catalogue",
    title="The wake-mechanism catalogue",
    question=(
        "How long does each common way of waking a waiter in Python take on this machine -- threads, "
        "signals, file descriptors, asyncio and processes -- and how far above the native floor is each?"
    ),
    arms=("*",),
    comparisons=MATCHED_PAIRS,
    methodology=(
        "Every arm available here runs in turn, in one process, with the same parameters. Blocked "
        "waiters announce their wait and are left to settle before t0; spinning waiters poll.",
        "Arms are grouped by family. Compare within one waiter state; the verdict's ratios are the "
        "matched pairs that answer Lab 135's question fairly. 'vs C' is each arm's p50 over its C "
        "floor's: the interpreter's share where the floor is the same experiment, and marked "
        "'nearest floor' where it is only the closest one.",
    ),
    limits=_COMMON_LIMITS,
)

LAB_PROCESSES = Lab(
    id="processes",
    title="Waking another process",
    question=(
        "How long does it take to wake a waiter in another process -- by signal, pipe, eventfd or "
        "multiprocessing -- compared with waking a thread?"
    ),
    arms=(
        "kill-sigwait-child", "pipe-process", "eventfd-fork", "mp-event", "mp-queue",
        "event", "pipe", "native-kill-sigwait-child", "native-pipe-process", "native-eventfd-fork",
        "native-condvar", "native-pipe",
    ),
    comparisons=(Comparison("pipe-process", "pipe"), Comparison("mp-event", "event")),
    methodology=(
        "t0 is taken in the parent and t1 in the child. Both are perf_counter_ns(), which on Linux "
        "reads CLOCK_MONOTONIC: one clock for every process of the machine, so the difference is "
        "meaningful across processes. Children are started once per arm; start-up is in no sample.",
    ),
    limits=_COMMON_LIMITS,
)

_LABS: List[Lab] = [LAB_135, LAB_MATCHED, LAB_CATALOGUE, LAB_PROCESSES]


def all_labs() -> List[Lab]:
    return list(_LABS)


def lab_names() -> List[str]:
    return [lab.id for lab in _LABS]


def get_lab(name: str) -> Lab:
    """The lab called ``name`` (id or alias); :class:`UsageError` lists the valid ones."""
    for lab in _LABS:
        if name == lab.id or name in lab.aliases:
            return lab
    raise UsageError("unknown lab %r (valid: %s)" % (name, ", ".join(lab_names())))


def lab_arm_names(lab: Lab) -> List[str]:
    """The lab's arms; ``*`` stands for every registered arm."""
    if lab.arms == ("*",):
        return [arm.name for arm in all_arms()]
    return list(lab.arms)
