"""Labs: named presets of arms, parameters, comparisons and the prose around them.

Lab 135 reproduces the original "signal vs threading.Event wakeup" lab with
its original parameters.  Later labs widen the question; each names the
pairs of arms whose ratio answers it, and whether those pairs are like for
like is derived from the arms' declared waiter states, never asserted.
"""

from __future__ import annotations

import dataclasses
from typing import Dict, List, Optional, Tuple

from wakelab.arms import all_arms
from wakelab.arms.base import MeasureParams
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

_LABS: List[Lab] = [LAB_135]


def register_lab(lab: Lab) -> None:
    """Add a preset (used by the modules that define the larger labs)."""
    if any(existing.id == lab.id for existing in _LABS):
        raise RuntimeError("duplicate lab id: " + lab.id)
    _LABS.append(lab)


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


def lab_index() -> Dict[str, Lab]:
    return {lab.id: lab for lab in _LABS}
