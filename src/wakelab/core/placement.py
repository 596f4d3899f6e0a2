"""CPU placement: where the notifier and the waiter run (measuring side, stdlib only).

On a small VM the placement of the two sides matters more than the
mechanism: waking a thread on the same CPU is a context switch, waking one on
an idle sibling CPU means bringing that CPU out of its idle state first.
``--placement`` chooses between

* ``any``   -- no pinning; the scheduler decides (what a service sees);
* ``same``  -- notifier and waiter pinned to one CPU;
* ``split`` -- notifier on one CPU, waiter on another.

Linux's ``sched_setaffinity(0, ...)`` acts on the *calling thread*, and a
new thread or child process starts with its creator's mask.  So the worker
pins its main thread before the arm starts (for ``same`` that pins
everything the arm creates), and each arm calls :func:`enter_role` at the top
of its waiter thread or child, which re-pins that side for ``split``.  Each
side notes the CPU it last ran on (:func:`current_cpu`) so the evidence says
where the wakes really happened.
"""

from __future__ import annotations

import contextlib
import os
from typing import Callable, Iterator, List, Optional, Sequence, Tuple

ANY = "any"
SAME = "same"
SPLIT = "split"
PLACEMENTS = (ANY, SAME, SPLIT)

NOTIFIER = "notifier"
WAITER = "waiter"


class PlacementError(ValueError):
    """A placement that cannot be honoured on this machine."""


def can_pin() -> bool:
    return hasattr(os, "sched_setaffinity") and hasattr(os, "sched_getaffinity")


def allowed_cpus() -> List[int]:
    """CPUs this process may run on, lowest first."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


def resolve_cpus(placement: str, cpus: Optional[Sequence[int]] = None) -> Tuple[Optional[int], Optional[int]]:
    """``(notifier_cpu, waiter_cpu)`` for ``placement``; ``cpus`` picks them explicitly.

    ``same`` uses ``cpus[0]`` (default: the first allowed CPU); ``split`` uses
    ``cpus[0]`` and ``cpus[1]`` (default: the first two allowed CPUs).
    """
    if placement not in PLACEMENTS:
        raise PlacementError("unknown placement %r (valid: %s)" % (placement, ", ".join(PLACEMENTS)))
    if placement == ANY:
        if cpus:
            raise PlacementError("--cpus needs --placement same or split")
        return None, None
    if not can_pin():
        raise PlacementError("this platform cannot pin threads to CPUs (no sched_setaffinity)")
    allowed = allowed_cpus()
    chosen = list(cpus) if cpus else allowed[: 2 if placement == SPLIT else 1]
    for cpu in chosen:
        if cpu not in allowed:
            raise PlacementError(
                "CPU %d is not available to this process (allowed: %s)" % (cpu, ",".join(map(str, allowed)))
            )
    if placement == SAME:
        if len(chosen) != 1:
            raise PlacementError("--placement same takes one CPU, got %d" % len(chosen))
        return chosen[0], chosen[0]
    if len(chosen) != 2 or chosen[0] == chosen[1]:
        if len(allowed) < 2:
            raise PlacementError("--placement split needs two CPUs; this process may use only CPU %s" % allowed[0])
        raise PlacementError("--placement split takes two different CPUs, e.g. --cpus 0,1")
    return chosen[0], chosen[1]


# How many CPUs --cpus gives each placement.
PLACEMENT_CPUS = {SAME: 1, SPLIT: 2}


def resolve_placements(names: Sequence[str], cpus: Optional[Sequence[int]]) -> List[Tuple[str, Optional[int], Optional[int]]]:
    """``(placement, notifier_cpu, waiter_cpu)`` of each of ``names``; ``cpus`` (--cpus) serves them all: a grid of
    same and split takes two CPUs, same using the first."""
    needed = max(PLACEMENT_CPUS.get(name, 0) for name in names)
    if cpus and not needed:
        raise PlacementError("--cpus needs --placement same or split")
    if cpus and len(cpus) != needed:
        raise PlacementError("--cpus lists %d CPU%s, but --placement %s takes %d (same takes 1 CPU, split takes 2; same and "
                             "split together take 2, same using the first)" % (len(cpus), "" if len(cpus) == 1 else "s",
                                                                                ",".join(names), needed))
    return [(name, *resolve_cpus(name, list(cpus or ())[:PLACEMENT_CPUS.get(name, 0)] or None)) for name in names]


def cpu_for(placement: str, notifier_cpu: Optional[int], waiter_cpu: Optional[int], role: str) -> Optional[int]:
    if placement == ANY:
        return None
    return notifier_cpu if role == NOTIFIER else waiter_cpu


def pin_current_thread(cpu: Optional[int]) -> None:
    """Pin the calling thread to ``cpu`` (no-op for None)."""
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})


def enter_role(params: object, role: str) -> Optional[int]:
    """Pin the calling thread as ``role`` ("notifier" or "waiter") of ``params``' placement.

    Returns the CPU pinned to, or None when placement is ``any``.  Call it at
    the top of a waiter thread (or child) and of a notifier thread that is
    not the worker's main thread.
    """
    cpu = cpu_for(
        getattr(params, "placement", ANY), getattr(params, "notifier_cpu", None), getattr(params, "waiter_cpu", None), role
    )
    pin_current_thread(cpu)
    return cpu


def current_cpu() -> Optional[int]:
    """The CPU the calling thread last ran on (Linux: /proc/thread-self/stat), or None."""
    try:
        with open("/proc/thread-self/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return None
    # Field 39 ("processor"), counting after the ")" that ends the command name.
    fields = stat.rsplit(b")", 1)[-1].split()
    try:
        return int(fields[36])
    except (IndexError, ValueError):
        return None


def cpu_reader() -> Optional[Callable[[], int]]:
    """A cheap ``() -> CPU the calling thread runs on`` for per-wake placement, or None.

    glibc's ``sched_getcpu`` through ``ctypes`` (about 0.25 us a call on CPython 3.11 here,
    0.15 us on PyPy; reading /proc costs about 25 us, too much to do per wake).  Drivers call it
    only outside the timed window: the waiter right after ``t1``, the notifier right before
    ``t0``.  Through ``ctypes.PyDLL`` where there is one (CPython), so the call keeps the GIL: a
    ``CDLL`` call would let it go and take it back right before ``t0``, a hand-over a spinning
    waiter could stretch.  PyPy has no PyDLL (and no such GIL hand-over): ``CDLL`` there.
    """
    try:
        import ctypes

        loader = getattr(ctypes, "PyDLL", None) or ctypes.CDLL
        getcpu = loader(None).sched_getcpu
    except (ImportError, OSError, AttributeError):
        return None
    getcpu.restype = ctypes.c_int
    getcpu.argtypes = []
    try:
        if getcpu() < 0:
            return None
    except OSError:
        return None
    return getcpu


@contextlib.contextmanager
def preserved_affinity() -> Iterator[None]:
    """Restore the calling thread's CPU mask on exit."""
    if not can_pin():
        yield
        return
    saved = os.sched_getaffinity(0)
    try:
        yield
    finally:
        os.sched_setaffinity(0, saved)
