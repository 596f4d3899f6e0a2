"""wakeq's wake path as a wakelab arm: ``wakelab ab BASE HEAD --arm-file benchmarks/wakelab_arms.py``.

Each side of the A/B puts its own checkout first on its workers' PYTHONPATH, so ``import wakeq``
inside ``wakeq_path()`` measures that side's code.  The import is inside the function, not at the
top: wakelab also loads this file in its own process, to read the declaration, where ``wakeq``
need not be importable.
"""

from __future__ import annotations

from wakelab.api.v1 import BLOCKED, CROSS_THREAD, Arm, WakePath


def wakeq_path() -> WakePath:
    import wakeq

    signal = wakeq.Signal()
    # The bound methods themselves: no Python frame of ours between t0 and the notify.
    return WakePath(reset=signal.clear, wait=signal.wait, notify=signal.notify)


ARMS = [
    Arm(
        name="wakeq-notify",
        family="threads",
        waiter=BLOCKED,
        scope=CROSS_THREAD,
        mechanism="wakeq.Signal: notify() wakes a thread blocked in wait()",
        t0="main thread: perf_counter_ns() immediately before Signal.notify()",
        t1="waiter thread: perf_counter_ns() as the first statement after Signal.wait() returns",
        path=wakeq_path,
    ),
]
