"""Hand-off arms: waking another interpreter, and the executors' submit-to-first-statement.

Measuring side: standard library only.  The module imports on every supported
Python; an arm that needs CPython 3.14's ``concurrent.interpreters`` says so
in its availability check and is skipped elsewhere with that reason.

The question these arms answer together: to hand work to someone else in
Python -- a thread, a subinterpreter, a process -- what does the hand-off
itself cost, from the moment the code decides to the moment the other side
runs?

* ``interp-queue`` and ``interp-pipe`` run on the subinterpreter driver
  (:mod:`wakelab.core.drivers.subinterp`): a waiter thread inside a
  subinterpreter blocked on a ``concurrent.interpreters`` queue, or on a pipe
  the main interpreter writes.  The queue's ``get()`` does not block in the
  kernel: it retries with ``time.sleep(0.01)`` (``_delay``, CPython 3.14 and
  3.15), so a wake lands anywhere in a 10 ms poll.  A fixed settle would lock
  onto the poll's phase and hide that; the arm asks for a random settle that
  spans two periods (``min_settle_jitter_us``), and the analysis names the
  polling it sees.  The pipe is the way to wake a subinterpreter without the
  poll.
* ``thread-pool-submit``, ``interp-pool-submit`` and
  ``process-pool-submit`` run on the pool driver
  (:mod:`wakelab.core.drivers.pool`): ``submit(task)`` to the task's first
  statement on an idle one-worker executor.  ``InterpreterPoolExecutor``'s
  workers are threads that each run tasks in their own interpreter (pickled
  in, pickled out); ``ProcessPoolExecutor``'s worker is a process fed through
  a pipe by a feeder thread.  The start method of the process pool is the
  interpreter's default (``forkserver`` on Linux from 3.14), except that a
  default of ``fork`` (before 3.14) is replaced by ``forkserver``, since the
  worker process that measures has threads (not on PyPy 3.9, whose executor
  takes no other context); the evidence records which.

C floors: there is no C subinterpreter or executor.  ``interp-pipe`` is
beside ``native-pipe`` (a thread polling a pipe) and the thread pool and the
queue beside ``native-condvar``, as *nearest* floors; the process pool
beside ``native-pipe-process``.
"""

from __future__ import annotations

import concurrent.futures
import functools
import importlib
import math
import multiprocessing
import os
import select
import time
from typing import Callable, List, Optional, Tuple

from wakelab.core.drivers import SRC_DIR, WakePath
from wakelab.core.drivers import pool as pool_driver
from wakelab.core.drivers import subinterp as interp_driver
from wakelab.core.drivers.subinterp import requires_interpreters
from wakelab.core.model import (
    AFTER_WAIT,
    BLOCKED,
    CROSS_PROCESS,
    CROSS_THREAD,
    GROUP_HANDOFF,
    LATENCY,
    MATCHED,
    NEAREST,
    ROLE_POLLS,
    ROLE_POOL,
    TASK,
    Arm,
    Family,
    MeasureParams,
    RawLatency,
    Role,
    T1Shape,
    with_info,
)

FAMILY = Family(id="handoff", title="Hand-offs: subinterpreters and executors", color="#F0E442", order=70,
                group=GROUP_HANDOFF)

#: The subinterpreter queue's poll in CPython 3.14 and 3.15 (``Queue.get(_delay=10/1000)``).
INTERP_QUEUE_POLL_US = 10_000

#: Wakes run on an executor before the counted ones, on top of ``params.warmup``: the first
#: submit starts the worker (a thread, an interpreter, a process), which is no hand-off.
POOL_WARM_TASKS = 3


def first_statement() -> int:
    """The task every executor arm submits: its first statement is ``t1``."""
    return time.perf_counter_ns()


# -- availability ------------------------------------------------------------


def requires_interpreter_pool() -> Optional[str]:
    reason = requires_interpreters()
    if reason is not None:
        return reason
    if not hasattr(concurrent.futures, "InterpreterPoolExecutor"):
        return "concurrent.futures.InterpreterPoolExecutor does not exist here"
    return None


def requires_process_pool() -> Optional[str]:
    from wakelab.core.drivers.child import requires_shared_clock

    try:
        multiprocessing.get_context(_start_method())
        __import__("multiprocessing.synchronize")
    except (ImportError, ValueError) as exc:
        return "multiprocessing cannot start a process pool here: %s" % exc
    return requires_shared_clock()


def _start_method() -> str:
    """The interpreter's default start method, with ``fork`` replaced by ``forkserver`` (see above) where the
    executor can take another context: PyPy 3.9's ProcessPoolExecutor runs only on ``fork`` (any other
    context fails in submit(): it lacks ``_adjust_process_count``), so it keeps its default there."""
    method = multiprocessing.get_start_method(allow_none=True) or multiprocessing.get_context().get_start_method()
    if (method == "fork" and "forkserver" in multiprocessing.get_all_start_methods()
            and hasattr(concurrent.futures.ProcessPoolExecutor, "_adjust_process_count")):
        return "forkserver"
    return method


# -- the subinterpreter's waits (run inside the subinterpreter) -----------------


def queue_waiter(queue_id: int) -> Tuple[Callable[[], object], Callable[[float], Optional[int]]]:
    """In the subinterpreter: ``Queue.get(timeout)`` on the cross-interpreter queue ``queue_id``."""
    interpreters = importlib.import_module("concurrent.interpreters")
    queue = interpreters.Queue(queue_id)
    get = queue.get
    get_nowait = queue.get_nowait
    empty_error = interpreters.QueueEmpty
    clock = time.perf_counter_ns

    def reset() -> None:
        while True:
            try:
                get_nowait()
            except empty_error:
                return

    def wait(timeout_s: float) -> Optional[int]:
        try:
            # get() truncates its timeout to whole seconds (int(timeout): 0.5 would not wait at all).
            get(timeout=math.ceil(timeout_s))
        except empty_error:
            return None
        return clock()

    return reset, wait


def pipe_waiter(read_fd: int) -> Tuple[Callable[[], object], Callable[[float], Optional[int]]]:
    """In the subinterpreter: ``poll()`` on a pipe's read end, ``t1``, then the read (as the C floor does)."""
    os.set_blocking(read_fd, False)
    poller = select.poll()
    poller.register(read_fd, select.POLLIN)
    poll = poller.poll
    clock = time.perf_counter_ns

    def reset() -> None:
        try:
            while os.read(read_fd, 64):
                pass
        except BlockingIOError:
            pass

    def wait(timeout_s: float) -> Optional[int]:
        if not poll(int(timeout_s * 1000)):
            return None
        t1 = clock()
        os.read(read_fd, 1)
        return t1

    return reset, wait


# -- measures -----------------------------------------------------------------


def measure_interp_queue(params: MeasureParams) -> RawLatency:
    """Wake latency (ns) of ``Queue.put()`` in the main interpreter waking ``Queue.get()`` in a subinterpreter."""
    interpreters = importlib.import_module("concurrent.interpreters")
    queue = interpreters.create_queue()
    put = functools.partial(queue.put, 1)
    # Stale items are drained in the subinterpreter, before it says it is ready.
    path = WakePath(reset=_nothing, wait=_never, notify=put)
    raw = interp_driver.measure(params, path, queue_waiter, (int(queue.id),), name="wakelab-interp-queue-waiter")
    return with_info(raw, wait="concurrent.interpreters.Queue.get(timeout) (polls every %d us)" % INTERP_QUEUE_POLL_US)


def measure_interp_pipe(params: MeasureParams) -> RawLatency:
    """Wake latency (ns) of ``os.write`` in the main interpreter waking a subinterpreter polling the pipe."""
    read_fd, write_fd = os.pipe()
    try:
        path = WakePath(reset=_nothing, wait=_never, notify=functools.partial(os.write, write_fd, b"x"))
        raw = interp_driver.measure(params, path, pipe_waiter, (read_fd,), name="wakelab-interp-pipe-waiter")
    finally:
        os.close(read_fd)
        os.close(write_fd)
    return with_info(raw, wait="poll, t1, read")


def measure_thread_pool_submit(params: MeasureParams) -> RawLatency:
    """Hand-off latency (ns) of ``ThreadPoolExecutor.submit`` to the task's first statement."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="wakelab-pool") as executor:
        _warm(executor, params)
        return pool_driver.measure(params, executor, first_statement, {"executor": "ThreadPoolExecutor(max_workers=1)"})


def measure_interp_pool_submit(params: MeasureParams) -> RawLatency:
    """Hand-off latency (ns) of ``InterpreterPoolExecutor.submit`` to the task's first statement."""
    executor_type = importlib.import_module("concurrent.futures.interpreter").InterpreterPoolExecutor
    # Each worker interpreter gets this wakelab's folder on its sys.path before its first task
    # (the task is pickled by reference: the worker imports this module to run it).
    with executor_type(max_workers=1, initializer=_add_path, initargs=(SRC_DIR,)) as executor:
        _warm(executor, params)
        return pool_driver.measure(params, executor, first_statement, {"executor": "InterpreterPoolExecutor(max_workers=1)"})


def measure_process_pool_submit(params: MeasureParams) -> RawLatency:
    """Hand-off latency (ns) of ``ProcessPoolExecutor.submit`` to the task's first statement (in the worker process).

    The pool's worker, and the forkserver and resource tracker processes that
    starting it may start, are stopped before this returns (a tracker or
    forkserver that was already running is left alone); starting them
    unblocks signals in the calling thread, so the signal state is restored.
    """
    from multiprocessing import forkserver

    from wakelab.core.drivers.child import _resource_tracker_running, _stop_resource_tracker
    from wakelab.core.sigstate import preserved_signal_state

    method = _start_method()
    default = multiprocessing.get_context().get_start_method()
    context = multiprocessing.get_context(method)
    server = getattr(forkserver, "_forkserver", None)
    with preserved_signal_state(()):
        tracker_was_running = _resource_tracker_running()
        server_was_running = getattr(server, "_forkserver_pid", None) is not None
        try:
            with concurrent.futures.ProcessPoolExecutor(max_workers=1, mp_context=context) as executor:
                _warm(executor, params)
                return pool_driver.measure(params, executor, first_statement, {
                    "executor": "ProcessPoolExecutor(max_workers=1)",
                    "start_method": method,
                    "default_start_method": default,
                })
        finally:
            if method == "forkserver" and not server_was_running and hasattr(server, "_stop"):
                server._stop()  # type: ignore[union-attr]
            if not tracker_was_running:
                _stop_resource_tracker()


def _add_path(folder: str) -> None:
    import sys

    if folder not in sys.path:
        sys.path.insert(0, folder)


def _warm(executor: concurrent.futures.Executor, params: MeasureParams) -> None:
    """Start the executor's worker and run a few tasks through it, outside every sample."""
    for _ in range(POOL_WARM_TASKS):
        executor.submit(first_statement).result(params.timeout_s + 60.0)


def _nothing() -> None:
    return None


def _never(timeout_s: float) -> bool:  # pragma: no cover - the subinterpreter driver never calls it
    raise AssertionError("the subinterpreter driver waits in the subinterpreter")


# Native floor ("vs C"): C has no subinterpreter and no executor.  The executors' workers are parked
# on a futex (the work queue) and t1 is the task's first statement: the C condvar (or, for a process,
# the C pipe to a child) is the nearest experiment, labelled so.
ARMS: List[Arm] = [
    Arm(
        name="interp-queue",
        family="handoff",
        driver="subinterp",
        kind=LATENCY,
        mechanism="concurrent.interpreters.Queue: put() in the main interpreter wakes get(timeout=...) in a thread of a subinterpreter; get() polls, retrying every 10 ms (CPython 3.14, 3.15)",
        waiter=BLOCKED,
        scope=CROSS_THREAD,
        t0="main interpreter: perf_counter_ns() immediately before Queue.put()",
        t1="subinterpreter's waiter thread: perf_counter_ns() as the first statement after Queue.get() returns",
        measure=measure_interp_queue,
        requires=requires_interpreters,
        min_settle_jitter_us=2 * INTERP_QUEUE_POLL_US,
        # The queue's get() sleeps and retries (a timer, not a futex): nearest only.
        native="native-condvar", native_match=NEAREST, t1_shape=T1Shape("sleep-poll", AFTER_WAIT),
        roles=(Role(ROLE_POLLS, against="interp-pipe"),),
    ),
    Arm(
        name="interp-pipe",
        family="handoff",
        driver="subinterp",
        kind=LATENCY,
        mechanism="os.pipe: os.write() of one byte in the main interpreter wakes a thread of a subinterpreter blocked in poll() on the read end",
        waiter=BLOCKED,
        scope=CROSS_THREAD,
        t0="main interpreter: perf_counter_ns() immediately before os.write()",
        t1="subinterpreter's waiter thread: perf_counter_ns() as the first statement after poll() returns, before the read",
        measure=measure_interp_pipe,
        requires=requires_interpreters,
        # A subinterpreter's thread polling a pipe is, to the kernel, a thread polling a pipe: same
        # scope, waiter and t1, so the ratio is the (sub)interpreter's share.
        native="native-pipe", native_match=MATCHED, t1_shape=T1Shape("poll", AFTER_WAIT),
    ),
    Arm(
        name="thread-pool-submit",
        family="handoff",
        driver="pool",
        kind=LATENCY,
        mechanism="concurrent.futures.ThreadPoolExecutor(max_workers=1): submit(task) wakes the idle worker thread parked on the executor's work queue",
        waiter=BLOCKED,
        scope=CROSS_THREAD,
        t0="main thread: perf_counter_ns() immediately before executor.submit(task)",
        t1="the worker thread: perf_counter_ns() as the task's first statement",
        measure=measure_thread_pool_submit,
        native="native-condvar", native_match=NEAREST, t1_shape=T1Shape("futex", TASK),
        roles=(Role(ROLE_POOL),),
    ),
    Arm(
        name="interp-pool-submit",
        family="handoff",
        driver="pool",
        kind=LATENCY,
        mechanism="concurrent.futures.InterpreterPoolExecutor(max_workers=1): submit(task) wakes the idle worker thread, which runs the pickled task in its own subinterpreter",
        waiter=BLOCKED,
        scope=CROSS_THREAD,
        t0="main interpreter: perf_counter_ns() immediately before executor.submit(task)",
        t1="the worker's subinterpreter: perf_counter_ns() as the task's first statement",
        measure=measure_interp_pool_submit,
        requires=requires_interpreter_pool,
        native="native-condvar", native_match=NEAREST, t1_shape=T1Shape("futex", TASK),
        roles=(Role(ROLE_POOL),),
    ),
    Arm(
        name="process-pool-submit",
        family="handoff",
        driver="pool",
        kind=LATENCY,
        mechanism="concurrent.futures.ProcessPoolExecutor(max_workers=1): submit(task) hands the pickled task to the idle worker process through the executor's feeder thread and call queue (start method recorded)",
        waiter=BLOCKED,
        scope=CROSS_PROCESS,
        t0="parent process: perf_counter_ns() immediately before executor.submit(task)",
        t1="the worker process: perf_counter_ns() as the task's first statement",
        measure=measure_process_pool_submit,
        requires=requires_process_pool,
        native="native-pipe-process", native_match=NEAREST, t1_shape=T1Shape("poll", TASK),
        roles=(Role(ROLE_POOL),),
    ),
]
