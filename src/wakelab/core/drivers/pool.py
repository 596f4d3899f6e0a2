"""The pool driver: ``executor.submit(task)`` in the worker's main thread, ``t1`` in the task's first statement.

Measuring side: standard library only, Python 3.9+.

The waiter is an executor's idle worker -- a thread of a
``ThreadPoolExecutor``, a thread running a subinterpreter of an
``InterpreterPoolExecutor``, a process of a ``ProcessPoolExecutor`` -- parked
on the executor's own work queue.  The family module supplies the executor
(one worker, made and warmed up before the first counted wake, so start-up is
in no sample) and the task: a module-level function whose first statement is
``return time.perf_counter_ns()``.  That is ``t1``, taken wherever the
executor runs the task (another thread, another interpreter, another process:
CLOCK_MONOTONIC is one clock for the machine); the future carries it back.

Per wake, closed loop only::

    main thread                         executor's worker
                                        idle, parked on its work queue
    sleep(settle)
    t0 = perf_counter_ns()
    future = submit(task)   ----------> wakes, unpickles (interpreter, process pool),
    future.result(timeout)  <---------- t1 = perf_counter_ns(): the task's first statement

So a sample is the whole hand-off a program pays between deciding to submit
and its code running on the other side: ``submit``'s own bookkeeping, the
queue's wake of the worker, for the interpreter and process pools the
pickling and the transfer, and the GIL or interpreter switch.  The notify
is ``submit`` itself, called from C (a deque's ``extend`` over a one-use ``map``,
made before ``t0``) so that the future it returns is kept with no Python frame
of wakelab's in the window; after it the notifier blocks in ``future.result``,
which drops the GIL.
"""

from __future__ import annotations

import collections
import concurrent.futures
import functools
import time
from typing import Any, Callable, Deque, Dict

from wakelab.core import drivers
from wakelab.core.drivers import HarnessError, handshake_timeout_s, native_tid
from wakelab.core.model import LOST_NS, LatencyCollector, MeasureParams, RawLatency

#: This driver does not honour ``params.mode == "open"``.
OPEN_LOOP = False


def measure(params: MeasureParams, executor: concurrent.futures.Executor, task: Callable[[], int],
            info: Dict[str, object]) -> RawLatency:
    """Time ``executor.submit(task)`` to the task's first statement (``t1``, returned by ``task``), in ns.

    ``executor`` is used as it is and not shut down here; its worker should
    already be running (the family warms it up).  A task whose result does
    not come within the wait's timeout is a lost wake; the run goes on.
    """
    from wakelab.core.drivers import settle_schedule_s

    collector = LatencyCollector(params)
    slots = collector.slots
    settles = settle_schedule_s(params)
    handshake_s = handshake_timeout_s(params)
    submit = executor.submit
    # The notify is submit(task) itself, and the future it returns must be kept without a Python
    # frame of wakelab's in the window: bind() (before t0) makes a one-use map over submit, and the
    # notify is the deque's C extend, which calls submit(task) and stores its future.
    box: Deque[Any] = collections.deque(maxlen=1)
    one_task = (task,)

    def bind() -> Callable[[], object]:
        return functools.partial(box.extend, map(submit, one_task))

    step = drivers.notify_step(params, None, bind=bind)
    stale = 0
    late = 0
    for index in range(params.total_wakes):
        time.sleep(settles[index])
        t0 = step()
        future = box[0]
        try:
            t1 = future.result(params.timeout_s)
        except concurrent.futures.TimeoutError:
            # Lost; the task may still run later: wait for it (bounded) so it cannot land in the next wake.
            late += 1
            try:
                future.result(handshake_s)
            except concurrent.futures.TimeoutError:
                raise HarnessError("the executor's worker did not run a task within %.1f s" % (params.timeout_s + handshake_s)) from None
            slots[index] = LOST_NS
            continue
        if type(t1) is not int:
            raise HarnessError("the task returned %r, not its t1" % (t1,))
        if t1 < t0:
            stale += 1
            slots[index] = LOST_NS
            continue
        slots[index] = t1 - t0
    return collector.result(
        settle_us=params.settle_us,
        mode="closed",
        stale_wakes=stale,
        late_tasks=late,
        notifier_tid=native_tid(),
        **info,
    )
