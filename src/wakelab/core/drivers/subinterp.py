"""The subinterpreter driver: the worker's main thread notifies, a waiter in another interpreter waits.

Measuring side: standard library only.  Imports on every supported Python; the
arms it drives need ``concurrent.interpreters`` (CPython 3.14 and newer) and
say so in their availability check.

The waiter is a thread running code *inside* a subinterpreter made with
``concurrent.interpreters.create()`` -- an isolated interpreter with its own
GIL in the same process.  The family module supplies a factory, a
module-level function run in the subinterpreter that returns the waiter's
moves (``reset()`` and ``wait(timeout_s) -> t1 or None``), given the objects
this side prepared for it (a cross-interpreter queue, an fd).  ``t1`` is read
inside the subinterpreter with ``time.perf_counter_ns()``: CLOCK_MONOTONIC,
one clock for the whole process, so it may be subtracted from the main
interpreter's ``t0``.

Per wake, closed loop only::

    main interpreter                    subinterpreter (waiter thread)
    write(go) ---------------------->   read(go); reset()
    poll(ready) <--------------------   write(ready); t1 = wait(timeout)
    sleep(settle)
    t0 = notify_step()
    poll(done)  <--------------------   write(done, t1 or -1)

The handshake runs over three pipes (fds are process-wide, so both
interpreters use them as plain ints) and is outside the timed window; every
wait on it is bounded (:func:`~wakelab.core.drivers.handshake_timeout_s`).
What the notifier does after the notify is the same short path as in the
other drivers: it returns from the step and blocks in ``poll``, which drops
its GIL -- though a subinterpreter's waiter has a GIL of its own and never
waits for the main interpreter's.

A wait that *polls* (``concurrent.interpreters.Queue.get`` retries with a
``time.sleep``) is measured honestly only with a random settle that spans its
period: the arms that need it declare that on their :class:`Arm`
(``min_settle_jitter_us``), and the analysis names the polling it sees.
"""

from __future__ import annotations

import importlib
import os
import select
import struct
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from wakelab.core.drivers import SRC_DIR, HarnessError, WakePath, handshake_timeout_s, native_tid
from wakelab.core.model import LOST_NS, LatencyCollector, MeasureParams, RawLatency

#: This driver does not honour ``params.mode == "open"``.
OPEN_LOOP = False

_GO = b"g"
_QUIT = b"q"
_READY = b"r"
_T1 = struct.Struct("=q")

# Run in the subinterpreter by exec(): every name it uses is prepared by prepare_main().  It
# imports the family's factory by module and name (the subinterpreter has its own modules and
# its own sys.path, which is made to hold this wakelab's folder first).
_WAITER_CODE = """\
import sys
if SRC not in sys.path:
    sys.path.insert(0, SRC)
import importlib
from wakelab.core.drivers.subinterp import serve
_module = importlib.import_module(FACTORY_MODULE)
serve(getattr(_module, FACTORY_NAME), ARGS, GO_R, READY_W, DONE_W, TIMEOUT_S, IDLE_S, WAITER_CPU)
"""



def requires_interpreters() -> Optional[str]:
    """None where ``concurrent.interpreters`` can make a subinterpreter here, else why not."""
    try:
        importlib.import_module("concurrent.interpreters")
    except ImportError:
        import platform

        return "concurrent.interpreters (PEP 734) needs CPython 3.14 or newer; this is %s %s" % (
            platform.python_implementation(), platform.python_version())
    return None


def _read_exact(fd: int, size: int, timeout_s: float, what: str) -> bytes:
    """``size`` bytes from ``fd`` within ``timeout_s`` (HarnessError otherwise)."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    deadline = time.monotonic() + timeout_s
    data = b""
    while len(data) < size:
        left_ms = int((deadline - time.monotonic()) * 1000)
        if left_ms <= 0 or not poller.poll(left_ms):
            raise HarnessError("the subinterpreter's waiter did not %s within %.1f s" % (what, timeout_s))
        chunk = os.read(fd, size - len(data))
        if not chunk:
            raise HarnessError("the subinterpreter's waiter closed its end before it could %s" % what)
        data += chunk
    return data


def serve(factory: Callable[..., Tuple[Callable[[], object], Callable[[float], Optional[int]]]], args: Tuple[Any, ...],
          go_r: int, ready_w: int, done_w: int, timeout_s: float, idle_s: float, waiter_cpu: int) -> None:
    """The waiter loop, run inside the subinterpreter (in its own thread).

    ``factory(*args)`` returns ``(reset, wait)``: ``wait(timeout_s)`` returns
    ``t1`` (``perf_counter_ns()`` as the first statement after the primitive's
    wait returns) or None on timeout.  Ends on the quit byte, or when the
    main side stops talking for ``idle_s`` (it is gone or stuck).
    """
    if waiter_cpu >= 0:
        os.sched_setaffinity(0, {waiter_cpu})
    reset, wait = factory(*args)
    poller = select.poll()
    poller.register(go_r, select.POLLIN)
    idle_ms = int(idle_s * 1000)
    while True:
        if not poller.poll(idle_ms):
            return  # the main side went quiet: do not outlive it
        if os.read(go_r, 1) != _GO:
            return
        reset()
        os.write(ready_w, _READY)
        t1 = wait(timeout_s)
        os.write(done_w, _T1.pack(-1 if t1 is None else t1))


def measure(params: MeasureParams, path: WakePath, factory: Callable[..., Any], args: Tuple[Any, ...] = (),
            name: str = "wakelab-subinterp-waiter") -> RawLatency:
    """Time ``path``'s notify in this interpreter waking ``factory``'s wait in a subinterpreter.

    ``factory`` is a module-level function (imported by name inside the
    subinterpreter) called there with ``args`` (shareable objects: ints,
    strings, bytes, cross-interpreter queues).  ``path.reset`` runs here
    before each wake, ``path``'s notify is timed by the same notify step as
    every driver; ``path.wait`` is not used (the wait is the factory's).
    Samples are ``t1 - t0`` in nanoseconds; a wait that timed out is lost.
    """
    interpreters = importlib.import_module("concurrent.interpreters")

    from wakelab.core.drivers import settle_schedule_s
    from wakelab.core.placement import NOTIFIER, WAITER, cpu_for, enter_role

    collector = LatencyCollector(params)
    slots = collector.slots
    step = path.step(params)
    settles = settle_schedule_s(params)
    handshake_s = handshake_timeout_s(params)
    waiter_cpu = cpu_for(params.placement, params.notifier_cpu, params.waiter_cpu, WAITER)
    enter_role(params, NOTIFIER)
    fds: List[int] = []
    go_r, go_w = os.pipe()
    ready_r, ready_w = os.pipe()
    done_r, done_w = os.pipe()
    fds.extend((go_r, go_w, ready_r, ready_w, done_r, done_w))
    interp = interpreters.create()
    box: Dict[str, object] = {"error": None, "tid": None}
    thread: Optional[threading.Thread] = None
    stale = 0
    try:
        interp.prepare_main(
            SRC=SRC_DIR, FACTORY_MODULE=factory.__module__, FACTORY_NAME=factory.__name__, ARGS=tuple(args),
            GO_R=go_r, READY_W=ready_w, DONE_W=done_w, TIMEOUT_S=float(params.timeout_s),
            IDLE_S=float(handshake_s), WAITER_CPU=-1 if waiter_cpu is None else int(waiter_cpu),
        )

        def run_waiter() -> None:
            box["tid"] = native_tid()
            try:
                interp.exec(_WAITER_CODE)
            except BaseException as exc:  # surfaced by the notifier below
                box["error"] = exc
                try:
                    os.write(ready_w, b"x")  # wake the notifier's bounded wait at once
                except OSError:
                    pass

        thread = threading.Thread(target=run_waiter, name=name, daemon=True)
        thread.start()
        reset = path.reset
        for index in range(params.total_wakes):
            reset()
            os.write(go_w, _GO)
            if _read_exact(ready_r, 1, handshake_s, "announce its wait") != _READY or box["error"] is not None:
                raise HarnessError("the subinterpreter's waiter failed: %s" % (box["error"],))
            time.sleep(settles[index])
            t0 = step()
            t1 = _T1.unpack(_read_exact(done_r, _T1.size, handshake_s, "return from its wait"))[0]
            if t1 >= 0 and t1 < t0:
                stale += 1  # the wait returned before this notify: an older wake
                t1 = -1
            slots[index] = LOST_NS if t1 < 0 else t1 - t0
    finally:
        try:
            os.write(go_w, _QUIT)
        except OSError:
            pass
        if thread is not None:
            thread.join(handshake_s)
        if thread is None or not thread.is_alive():
            try:
                interp.close()
            except Exception:  # noqa: BLE001 - a close that fails must not hide the run's own error
                pass
        for fd in fds:
            try:
                os.close(fd)
            except OSError:
                pass
    return collector.result(
        settle_us=params.settle_us,
        mode="closed",
        stale_wakes=stale,
        notifier_tid=native_tid(),
        waiter_tid=box["tid"],
        waiter_interpreter="subinterpreter (concurrent.interpreters.create(): isolated, its own GIL)",
    )
