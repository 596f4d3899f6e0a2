"""Labs: named presets of arms, parameters, comparisons and the prose around them.

Lab 135 reproduces the original "signal vs threading.Event wakeup" lab with
its original parameters.  Later labs widen the question; each names the
pairs of arms whose ratio answers it, and whether those pairs are like for
like is derived from the arms' declared waiter states, never asserted.
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

# Pairs that answer Lab 135's question like for like: same waiter state on both sides.
MATCHED_PAIRS = (
    Comparison("pause-handler", "event"),
    Comparison("sigwait-thread-to-main", "event"),
    Comparison("wakeup-fd-select", "pipe"),
    Comparison("sigusr1-self", "event-spin"),
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
    ),
    comparisons=MATCHED_PAIRS,
    methodology=(
        "Each comparison pairs two arms whose waiters are in the same state: both parked in the "
        "kernel (blocked) or both polling (spinning). A blocked signal waiter has to be woken by "
        "another thread, so the blocked pairs are all cross-thread.",
        "The spinning pair differs in scope: sigusr1-self signals its own thread, event-spin wakes "
        "another thread that polls with time.sleep(0), which must get the GIL back before it can "
        "see the flag.",
        "The 'vs C' column divides each Python arm's p50 by the p50 of the same experiment written "
        "in C and run in this run: what is left is the interpreter's share.",
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
        "matched pairs that answer Lab 135's question fairly, and 'vs C' is each arm's p50 over its "
        "native counterpart's.",
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
        "event", "pipe", "native-sigwait", "native-pipe", "native-eventfd",
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
