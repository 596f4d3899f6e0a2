"""The child side of the child-process driver: the waiter loop, run in the waiter child.

Measuring side: standard library only, Python 3.9+.  The parent side, which
starts this child and notifies it, is :mod:`wakelab.core.drivers.child`; this
module is what the child runs, and it stays small because every import here is
start-up time of the child (never part of a sample, but part of every arm).

A child is started in one of two ways:

* *exec*: ``python -c <bootstrap> <sys.path entry> <module:factory> <conn fd>
  <timeout_s> <idle_s> <waiter cpu or -> [<int arg> ...]``, and the bootstrap
  calls :func:`main`;
* *spawn*: a ``multiprocessing`` spawn-context process whose target is
  :func:`spawned_main`.

Either way the child pins itself to the waiter's CPU first (before it could
start a thread, which would inherit the mask), calls the family's *factory*
(a module-level function of the family, run here in the child) to get its
:class:`WaitSide`, says hello, and then serves wakes until told to quit.

Protocol (pickled tuples over a ``multiprocessing.connection.Connection``,
never inside a timed window)::

    child  -> parent   ("hello", {"pid", "clock", "python", "cpus"})
  closed loop, per wake:
    parent -> child    i >= 0            arm wake number i
    child  -> parent   ("ready", i)      reset() done, about to block in wait(i, timeout_s)
                       ... the parent settles, takes t0, notifies, and blocks
                       in a bounded poll of this connection ...
    child  -> parent   ("woke", t1, cpu) t1 = perf_counter_ns() right after the wait,
                                         then the CPU it woke on (-1 unknown)
                    or ("lost", i)       the wait timed out
  open loop, once:
    parent -> child    (OPEN, span_ns)   the schedule lasts about span_ns
    child  -> parent   ("ready", OPEN)   then waits, stamps every wake, reset() after each
                       ... the parent notifies on its schedule; no messages ...
    parent -> child    ("stop", last_ns, deadline_ns)   read between timed-out polls
    child  -> parent   ("wakes", [t1, ...])             every wake's t1, in order
  end:
    parent -> child    QUIT
    child  -> parent   ("bye", {"waiter_cpu_seen": cpu})   then exit status 0
    child  -> parent   ("error", traceback)                then exit status 1, on any failure

Every wait of the child is bounded: the primitive's wait by ``timeout_s`` (a
lost wake), the wait for the parent's next command by ``idle_s`` (a parent
that stopped talking: the child exits, and the parent, if alive, sees EOF).
A parent that dies closes its end of the connection: the child sees EOF and
exits.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import sys
import time
import traceback
from typing import Any, Callable, Dict, List, Optional, Sequence

from wakelab.core.placement import cpu_reader, current_cpu, pin_current_thread

now_ns = time.perf_counter_ns

QUIT = -1
OPEN = -2

#: In open loop, the child's wait gives up after this long to look for the parent's "stop".
OPEN_POLL_S = 0.05


@dataclasses.dataclass(frozen=True)
class WaitSide:
    """The waiter's half of a cross-process wake path, built in the child by the family's factory.

    * ``reset()`` returns the primitive to its un-notified state, throwing away
      whatever a late or lost wake left behind (a pending signal, a byte, a
      counter, a queue item, a set flag): closed loop, before each "ready";
      open loop, after each wake, so that the next notify is a new wake;
    * ``wait(index, timeout_s)`` blocks in the primitive's wait for at most
      ``timeout_s`` and returns ``t1 = perf_counter_ns()``, taken as the first
      statement after the primitive's wait returns, or None on timeout.
      ``index`` is the wake number the parent armed (closed loop) or the
      number of wakes taken so far (open loop); a primitive whose tokens carry
      their wake number uses it to skip a leftover from an earlier wake.
    """

    reset: Callable[[], object]
    wait: Callable[[int, float], Optional[int]]


def child_facts() -> Dict[str, object]:
    """What the parent checks (the clock) and records (interpreter, CPUs) about the child."""
    getaffinity = getattr(os, "sched_getaffinity", None)
    return {
        "pid": os.getpid(),
        "clock": time.get_clock_info("perf_counter").implementation,
        "python": sys.version.split()[0],
        "cpus": sorted(getaffinity(0)) if getaffinity is not None else None,
    }


def serve(conn: Any, side: WaitSide, timeout_s: float, idle_s: float) -> int:
    """Say hello, then serve wakes until the parent says quit; return the exit status."""
    reset = side.reset
    wait = side.wait
    send = conn.send
    getcpu = cpu_reader()
    try:
        send(("hello", child_facts()))
        while True:
            if not conn.poll(idle_s):
                raise RuntimeError("the parent sent nothing for %.0f s" % idle_s)
            command = conn.recv()
            if command == QUIT:
                send(("bye", {"waiter_cpu_seen": current_cpu()}))
                return 0
            if isinstance(command, tuple) and command[0] == OPEN:
                send(("wakes", _serve_open(conn, side, timeout_s, idle_s + command[1] / 1e9)))
                continue
            reset()
            send(("ready", command))
            t1 = wait(command, timeout_s)
            if t1 is None:
                send(("lost", command))
            else:
                # The CPU the child woke on, read after t1 (outside the window); -1 unknown.
                send(("woke", t1, getcpu() if getcpu is not None else -1))
    except EOFError:  # the parent went away: nothing left to do
        return 0
    except BaseException:
        _report_error(conn)
        return 1
    finally:
        conn.close()


def _serve_open(conn: Any, side: WaitSide, timeout_s: float, idle_s: float) -> List[int]:
    """The open loop's waiter: stamp every wake until the parent's stop, return the stamps."""
    reset = side.reset
    wait = side.wait
    poll_s = min(timeout_s, OPEN_POLL_S)
    wakes: List[int] = []
    append = wakes.append
    last_ns: Optional[int] = None  # when the parent's last notify call began
    deadline_ns = now_ns() + int(idle_s * 1e9)  # until the stop: the parent's silence bound
    reset()
    conn.send(("ready", OPEN))
    while True:
        t1 = wait(len(wakes), poll_s)
        if t1 is not None:
            reset()
            append(t1)
            if last_ns is not None and t1 >= last_ns:
                return wakes
            continue
        # A poll with nothing in it: the schedule may be over.
        if last_ns is None and conn.poll(0):
            _, last_ns, deadline_ns = conn.recv()
            if wakes and wakes[-1] >= last_ns:
                return wakes
        if now_ns() >= deadline_ns:
            if last_ns is None:
                raise RuntimeError("the parent never ended the open loop")
            return wakes  # the last notify's wake timed out


def _report_error(conn: Any) -> None:
    try:
        conn.send(("error", traceback.format_exc()))
    except Exception:
        pass


def _resolve(target: str) -> Callable[..., WaitSide]:
    module, _, name = target.partition(":")
    factory: Callable[..., WaitSide] = getattr(importlib.import_module(module), name)
    return factory


def _build(factory: Callable[..., WaitSide], args: Sequence[Any]) -> WaitSide:
    side = factory(*args)
    if not isinstance(side, WaitSide):
        raise TypeError("%s returned %r, not a WaitSide" % (getattr(factory, "__qualname__", factory), side))
    return side


def main(argv: List[str]) -> int:
    """Entry point of an exec child: ``<module:factory> <conn fd> <timeout_s> <idle_s> <cpu or -> [<int> ...]``."""
    from multiprocessing.connection import Connection

    conn = Connection(int(argv[1]))
    try:
        pin_current_thread(None if argv[4] == "-" else int(argv[4]))
        side = _build(_resolve(argv[0]), [int(arg) for arg in argv[5:]])
    except BaseException:
        _report_error(conn)
        conn.close()
        return 1
    return serve(conn, side, float(argv[2]), float(argv[3]))


def spawned_main(
    conn: Any,
    factory: Callable[..., WaitSide],
    args: Sequence[Any],
    timeout_s: float,
    idle_s: float,
    waiter_cpu: Optional[int],
) -> None:
    """Process target of a spawn child: pin, build the factory's WaitSide, serve."""
    try:
        pin_current_thread(waiter_cpu)
        side = _build(factory, args)
    except BaseException:
        _report_error(conn)
        conn.close()
        sys.exit(1)
    sys.exit(serve(conn, side, timeout_s, idle_s))
