"""Signal arms: delivery of a signal to a Python handler, and handler install cost.

CPython runs a Python-level signal handler only in the main thread, and only
when the main thread's eval loop next checks for pending signals; the C-level
handler merely records that the signal arrived.  So "self-signal latency" is
``os.kill`` -> kernel delivery -> C handler -> next eval-breaker check ->
Python handler.  The original lab's arm busy-waits in the main thread, so the
check comes almost at once and no scheduler sleep is included.
"""

from __future__ import annotations

import os
import signal
import threading
from typing import List, Optional

from wakelab.arms.base import (
    LATENCY,
    NO_WAITER,
    RATE,
    SELF,
    SPINNING,
    Arm,
    LatencyCollector,
    MeasureParams,
    RawLatency,
    RawRate,
    now_ns,
    plant_delay,
)
from wakelab.harness.sigstate import preserved_signal_state


def requires_main_thread_sigusr1() -> Optional[str]:
    if not hasattr(signal, "SIGUSR1"):
        return "SIGUSR1 does not exist on this platform"
    if threading.current_thread() is not threading.main_thread():
        return "Python signal handlers can only be installed from the main thread"
    return None


def measure_sigusr1_self(params: MeasureParams) -> RawLatency:
    """Self-signal round trip (ns): ``os.kill(getpid(), SIGUSR1)`` to the handler's first statement.

    The main thread busy-waits on a flag the handler sets, so the measured
    time is delivery plus CPython's deferred handler dispatch, without any
    scheduler sleep.
    """
    collector = LatencyCollector(params)
    seen = [0]

    def handler(signum: int, frame: object) -> None:
        seen[0] = now_ns()

    pid = os.getpid()
    kill = os.kill
    signum = signal.SIGUSR1
    timeout_ns = int(params.timeout_s * 1e9)
    with preserved_signal_state([signum]):
        signal.signal(signum, handler)
        # A blocked SIGUSR1 would stay pending forever: make sure it is not.
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signum])
        for _ in range(params.total_wakes):
            seen[0] = 0
            t0 = now_ns()
            plant_delay(params, t0)
            kill(pid, signum)
            while not seen[0]:
                if now_ns() - t0 > timeout_ns:
                    break
            t1 = seen[0]
            collector.add(t1 - t0 if t1 else None)
    return collector.result()


def measure_signal_install(params: MeasureParams) -> RawRate:
    """Rate of ``signal.signal(SIGUSR1, handler)`` rebinding, in rounds of ``install_n`` calls.

    Each round is followed by the same loop with an empty body, so the loop's
    own overhead is reported beside the figure (as lmbench does).
    """

    def handler(signum: int, frame: object) -> None:
        pass

    install = signal.signal
    signum = signal.SIGUSR1
    loop = range(params.install_n)
    rounds: List[int] = []
    baseline: List[int] = []
    with preserved_signal_state([signum]):
        for i in range(params.warmup_rounds + params.rounds):
            t0 = now_ns()
            for _ in loop:
                install(signum, handler)
            elapsed = now_ns() - t0
            b0 = now_ns()
            for _ in loop:
                pass
            baseline_elapsed = now_ns() - b0
            if i >= params.warmup_rounds:
                rounds.append(elapsed)
                baseline.append(baseline_elapsed)
    return RawRate(
        n_per_round=params.install_n,
        round_ns=tuple(rounds),
        baseline_round_ns=tuple(baseline),
        warmup_rounds=params.warmup_rounds,
    )


ARMS: List[Arm] = [
    Arm(
        name="sigusr1-self",
        family="signals",
        kind=LATENCY,
        mechanism="os.kill(os.getpid(), SIGUSR1); the Python handler runs in the main thread, which busy-waits on its flag",
        waiter=SPINNING,
        scope=SELF,
        t0="main thread: perf_counter_ns() immediately before os.kill(os.getpid(), SIGUSR1)",
        t1="main thread: perf_counter_ns() as the first statement of the Python SIGUSR1 handler",
        measure=measure_sigusr1_self,
        requires=requires_main_thread_sigusr1,
        native="native-self-signal",
        needs_main_thread=True,
    ),
    Arm(
        name="signal-install",
        family="signals",
        kind=RATE,
        mechanism="signal.signal(SIGUSR1, handler) rebinding in a tight loop; empty loop as baseline",
        waiter=NO_WAITER,
        scope=SELF,
        t0="perf_counter_ns() before a round of install_n calls",
        t1="perf_counter_ns() after the round; ops/s = install_n / (t1 - t0)",
        measure=measure_signal_install,
        requires=requires_main_thread_sigusr1,
        native="native-sigaction-install",
        needs_main_thread=True,
    ),
]
