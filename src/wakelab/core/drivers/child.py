"""The child-process driver: the parent (the worker's calling thread) notifies, a child process waits.

Measuring side: standard library only, Python 3.9+.

Used by the cross-process arms (:mod:`wakelab.core.families.processes`).  A
family declares a :class:`ChildPath`: how the waiter child is started and what
it waits on (:class:`ChildWaiter`, whose factory runs *in the child* and
returns a :class:`~wakelab.core.drivers.child_side.WaitSide`), and what the
parent does to notify it (:class:`Notifier`, the parent's half of a
:class:`~wakelab.core.drivers.WakePath`).  This module is the parent's side of
the loop; :mod:`wakelab.core.drivers.child_side` is what the child runs, and
its docstring has the protocol.

One clock for both sides
------------------------
``t0`` is taken in the parent and ``t1`` in the child, both with
``time.perf_counter_ns()``.  On Linux that is ``clock_gettime(CLOCK_MONOTONIC)``,
a single system-wide clock shared by every thread and process of the machine,
so ``t1 - t0`` is meaningful although the two stamps come from different
processes.  :func:`requires_shared_clock` checks the parent's clock; the child
reports its own in its hello, and the driver refuses a child whose clock differs.

Closed loop (the default), per wake::

    parent (notifier)                     child (waiter)
    send i                  ------------> reset(); send ("ready", i)    (outside the window)
    recv ("ready", i)       <------------ wait(i, timeout_s)            parks in the kernel
    sleep(settle)
    t0 = notify_step()                    (see wakelab.core.drivers: t0, notify)
    poll(conn, bounded)                   t1 = first statement after the wait returns
    recv ("woke", t1, cpu)  <------------ send ("woke", t1, cpu) or ("lost", i)

Right after the notify step the parent blocks in one ``poll()`` of the
connection's fd (a C call that releases the GIL and sleeps at once, bounded by
:func:`~wakelab.core.drivers.handshake_timeout_s`), then ``Connection.recv``
takes the reply.  A ``t1`` before ``t0`` answered an older notify: it is
counted lost and in ``info["stale_wakes"]``, never as a negative sample.

Open loop (``params.mode == "open"``, ``OPEN_LOOP`` below): as in the thread
driver, the parent notifies on a fixed schedule and each latency is taken
from the *scheduled* instant; the child waits in a loop, stamps every wake and
resets the primitive after each, and sends all the stamps once the parent says
stop (after the last notify, outside every window).  Notifies merged into one
wake by the primitive are counted lost and as ``info["coalesced"]``
(:func:`~wakelab.core.drivers.thread.match_open_loop`).

Starting the child, and why not ``os.fork()``
----------------------------------------------
The child is started once per arm, before the first wake; its start-up (and
the hello that ends it) is never part of a sample, and ``info["child_start_ms"]``
says how long it took.  ``os.fork()`` in a process that has threads warns on
3.12+ (and is genuinely unsafe), and the measuring process may well have
threads, so a child is started in one of two ways:

* :data:`EXEC`: ``subprocess.Popen([sys.executable, "-c", <bootstrap>, ...])``,
  fork+exec of the same interpreter, with the waiter's ``path_entry`` on the
  child's ``sys.path`` and the fds it needs handed over with ``pass_fds``;
* :data:`SPAWN`: ``multiprocessing.get_context("spawn")``, for primitives that
  only multiprocessing can hand over (its Event, its Queue).  Spawning starts
  multiprocessing's *resource tracker* process (when the family creates its
  first semaphore) and keeps an fd to it for the life of the parent: so that
  an arm leaves no stray process or fd behind, :func:`measure` stops a tracker
  that was not running when it began, once the arm's semaphores are gone (a
  tracker that was already running is left alone).  Like every spawned
  multiprocessing child, this one re-imports the parent's ``__main__``
  *script*: a script that runs these arms needs the ``if __name__ ==
  "__main__":`` guard.

Placement
---------
The parent's calling thread is the notifier; the worker has already pinned it
to the notifier's CPU (and a thread the family starts in the parent, such as a
``multiprocessing.Queue``'s feeder thread, inherits that mask).  The child is
the waiter: it is passed the waiter's CPU (None for placement ``any``) and pins
itself there before it says hello.  ``info["child_cpus"]`` says which CPUs the
child was then allowed, ``notifier_cpu_seen`` the CPU the parent last ran on
at the end of the wake loop, and ``waiter_cpu_seen`` the one the child last ran
on at the end of its loop.

Faults
------
Every wait is bounded: the child's wait by ``params.timeout_s`` (a lost wake,
the run goes on), each of the parent's waits for a reply by
:func:`~wakelab.core.drivers.handshake_timeout_s`, the child's start by
:data:`START_TIMEOUT_S`.  A child that dies (its end of the connection reaches
EOF), fails, or stops answering raises :class:`WaiterChildError` naming the
arm, the child's pid, the wake, and how the child ended; the child is reaped
(terminated, killed after :data:`EXIT_GRACE_S`, waited for) in ``finally``,
whatever happened, and the path's ``close()`` releases its fds and threads.

One wait is not the driver's to bound: ``multiprocessing.Event.set()`` waits,
with no timeout, for the woken child to acknowledge (its condition's
``_woken_count``), so a child that died *inside* ``Event.wait()`` would leave
``set()`` blocked.  A child that dies between wakes, or in any other arm's
wait, is reported as above.
"""

from __future__ import annotations

import dataclasses
import gc
import math
import multiprocessing
import multiprocessing.connection
import select
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from wakelab.core.drivers import HarnessError, handshake_timeout_s, native_tid, notify_step, settle_schedule_s, t0_info, wake_t0_log
from wakelab.core.drivers import child_side
from wakelab.core.drivers.child_side import OPEN, QUIT, WaitSide
from wakelab.core.drivers.thread import match_open_loop
from wakelab.core.model import LOST_NS, LatencyCollector, MeasureParams, RawLatency, now_ns
from wakelab.core.placement import WAITER, cpu_for, cpu_reader, current_cpu
from wakelab.core.sigstate import preserved_signal_state

#: This driver honours ``params.mode == "open"``.
OPEN_LOOP = True

#: How a waiter child is started (see the module docstring).
EXEC = "exec"
SPAWN = "spawn"

#: How long a child may take to start and say hello (spawn imports a lot).
START_TIMEOUT_S = 30.0
#: How long a child gets to exit (when asked, or after SIGTERM) before SIGKILL.
EXIT_GRACE_S = 2.0
#: How long a child waits for the parent's next command before it gives up.
CHILD_IDLE_S = 60.0

_BOOTSTRAP = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "from wakelab.core.drivers.child_side import main; sys.exit(main(sys.argv[2:]))"
)


class WaiterChildError(HarnessError):
    """The waiter child process died, hung, or reported an error; it has been reaped."""


# --- what a family declares ------------------------------------------------------


def _nothing() -> None:
    return None


@dataclasses.dataclass(frozen=True)
class ChildWaiter:
    """The waiter child: how it is started, and the factory that builds its wait there.

    ``factory(*args)`` is a module-level function of the family that runs in
    the child and returns its :class:`~wakelab.core.drivers.child_side.WaitSide`.

    * ``start=EXEC``: the child is ``sys.executable`` run afresh; it imports the
      factory's module from ``path_entry`` (a ``sys.path`` entry), ``args``
      must be ints (they travel on the command line), and the fds among them
      are listed in ``pass_fds`` so that the child inherits them;
    * ``start=SPAWN``: a multiprocessing spawn child; ``args`` are handed over
      by multiprocessing (its synchronisation objects and queues).
    """

    factory: Callable[..., WaitSide]
    args: Tuple[Any, ...] = ()
    start: str = EXEC
    pass_fds: Tuple[int, ...] = ()
    path_entry: str = ""

    def __post_init__(self) -> None:
        if self.start not in (EXEC, SPAWN):
            raise ValueError("ChildWaiter.start is %r, not %r or %r" % (self.start, EXEC, SPAWN))
        if self.start == EXEC and not self.path_entry:
            raise ValueError("an exec child needs the path_entry its factory is imported from")


@dataclasses.dataclass(frozen=True)
class Notifier:
    """The parent's side of a wake path: what runs around ``t0`` (see :class:`~wakelab.core.drivers.WakePath`).

    Exactly one of ``notify`` (the notify call, right after ``t0``) and
    ``bind`` (runs before ``t0`` and returns that wake's notify call); optional
    ``before`` / ``after`` just before ``t0`` and just after the notify.
    """

    notify: Optional[Callable[[], object]] = None
    bind: Optional[Callable[[], Callable[[], object]]] = None
    before: Optional[Callable[[], object]] = None
    after: Optional[Callable[[], object]] = None

    def __post_init__(self) -> None:
        if (self.notify is None) == (self.bind is None):
            raise ValueError("a Notifier takes exactly one of notify and bind")

    def step(self, params: MeasureParams) -> Callable[[], int]:
        """This notifier's timed step (see :func:`~wakelab.core.drivers.notify_step`)."""
        return notify_step(params, self.notify, before=self.before, after=self.after, bind=self.bind)


@dataclasses.dataclass(frozen=True)
class ChildPath:
    """One cross-process wake path, as a family declares it for this driver.

    ``waiter`` starts the child and builds its wait; ``notifier(child_pid)``
    returns the parent's side, once the child is up (a signal needs its pid);
    ``close()`` releases what the path holds (fds, a queue's thread) and is
    called once, by the driver, in ``finally``.
    """

    waiter: ChildWaiter
    notifier: Callable[[int], Notifier]
    close: Callable[[], object] = _nothing


# --- availability -------------------------------------------------------------------


def _clock_implementation() -> str:
    return time.get_clock_info("perf_counter").implementation


def _is_system_wide_clock(implementation: str) -> bool:
    # CLOCK_MONOTONIC (and CLOCK_MONOTONIC_RAW) are one clock for the whole
    # machine; anything else may be per-process and cannot be subtracted.
    return implementation.startswith("clock_gettime(CLOCK_MONOTONIC")


def requires_shared_clock() -> Optional[str]:
    """None if parent and child stamps can be subtracted, else the reason."""
    implementation = _clock_implementation()
    if not _is_system_wide_clock(implementation):
        return (
            "perf_counter is %s, not CLOCK_MONOTONIC: timestamps from two processes "
            "cannot be compared" % implementation
        )
    return None


# --- the parent's handle on a child --------------------------------------------------


class _Child:
    """The parent's handle on one waiter child process."""

    pid: int
    how_started: str

    def poll_exit(self, timeout_s: Optional[float]) -> Optional[int]:
        """Wait up to ``timeout_s`` (None: until it exits) for exit; the return code or None."""
        raise NotImplementedError

    def terminate(self) -> None:
        raise NotImplementedError

    def kill(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Release what the handle holds; the process must have been reaped."""

    def stderr_tail(self) -> str:
        return ""

    def reap(self, grace_s: float) -> int:
        """Make sure the child is gone: terminate, kill after ``grace_s``, wait."""
        code = self.poll_exit(0)
        if code is None:
            self.terminate()
            code = self.poll_exit(grace_s)
        if code is None:
            self.kill()  # a stopped or hung child ignores SIGTERM, not SIGKILL
            code = self.poll_exit(None)
        assert code is not None
        return code


class _ExecChild(_Child):
    how_started = "subprocess.Popen (fork+exec of sys.executable)"

    def __init__(self, proc: "subprocess.Popen[bytes]", stderr_file: Any) -> None:
        self._proc = proc
        self._stderr_file = stderr_file
        self.pid = proc.pid

    def poll_exit(self, timeout_s: Optional[float]) -> Optional[int]:
        try:
            return self._proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            return None

    def terminate(self) -> None:
        self._proc.terminate()

    def kill(self) -> None:
        self._proc.kill()

    def close(self) -> None:
        self._stderr_file.close()

    def stderr_tail(self) -> str:
        try:
            self._stderr_file.seek(0)
            text = self._stderr_file.read().decode("utf-8", "replace").strip()
        except (OSError, ValueError):
            return ""
        return str(text[-2000:])


class _SpawnedChild(_Child):
    how_started = "multiprocessing spawn"

    def __init__(self, process: Any) -> None:
        self._process = process
        self.pid = process.pid

    def poll_exit(self, timeout_s: Optional[float]) -> Optional[int]:
        self._process.join(timeout_s)
        code = self._process.exitcode
        return None if code is None else int(code)

    def terminate(self) -> None:
        self._process.terminate()

    def kill(self) -> None:
        self._process.kill()

    def close(self) -> None:
        self._process.close()


def _describe_exit(code: int) -> str:
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = "signal %d" % -code
        return "was killed by %s" % name
    return "exited with status %d" % code


class _Session:
    """The parent's end of the control connection to one live waiter child."""

    def __init__(self, arm_name: str, child: _Child, conn: Any) -> None:
        self.arm_name = arm_name
        self.child = child
        self.conn = conn
        self.reaped_code: Optional[int] = None
        self.extra: Tuple[Any, ...] = ()  # what the last message held after its two fields

    def reap(self) -> int:
        if self.reaped_code is None:
            self.reaped_code = self.child.reap(EXIT_GRACE_S)
        return self.reaped_code

    def close(self) -> None:
        """Close the connection, make sure the child is gone, release the handle."""
        try:
            self.conn.close()
        finally:
            try:
                self.reap()
            finally:
                self.child.close()

    def fault(self, what: str, phase: str, *, died: bool = False) -> WaiterChildError:
        """Reap the child, then build the error that reports ``what`` happened."""
        if died:
            # Its end of the connection is closed: give it a moment to finish
            # exiting so that the report says how it ended.
            code = self.child.poll_exit(EXIT_GRACE_S)
            if code is not None:
                self.reaped_code = code
        code = self.reap()
        if died:
            ending = "the child %s" % _describe_exit(code)
        else:
            ending = "the harness stopped the child, which then %s" % _describe_exit(code)
        message = "waiter child of arm %s (pid %d, started by %s) %s %s; %s" % (
            self.arm_name,
            self.child.pid,
            self.child.how_started,
            what,
            phase,
            ending,
        )
        tail = self.child.stderr_tail()
        if tail:
            message += "\nchild stderr:\n" + tail
        return WaiterChildError(message)

    def send(self, value: object, phase: str) -> None:
        try:
            self.conn.send(value)
        except OSError:
            raise self.fault("went away", phase, died=True) from None

    def receive(self, tags: Sequence[str], phase: str) -> Tuple[str, Any]:
        """The child's next message (which has arrived or is on its way), one of ``tags``."""
        try:
            message = self.conn.recv()
        except (EOFError, OSError):
            raise self.fault("died", phase, died=True) from None
        tag = message[0]
        self.extra = tuple(message[2:])
        if tag == "error":
            error = self.fault("failed", phase, died=True)
            raise WaiterChildError("%s\nchild traceback:\n%s" % (error, message[1]))
        if tag not in tags:
            raise self.fault("sent %r where %s was expected" % (message, "/".join(tags)), phase)
        return tag, message[1]

    def expect(self, tags: Sequence[str], timeout_s: float, phase: str) -> Tuple[str, Any]:
        """Wait up to ``timeout_s`` for the child's next message, which must be one of ``tags``."""
        try:
            ready = self.conn.poll(timeout_s)
        except OSError:
            raise self.fault("went away", phase, died=True) from None
        if not ready:
            raise self.no_answer(timeout_s, phase)
        return self.receive(tags, phase)

    def no_answer(self, timeout_s: float, phase: str) -> WaiterChildError:
        return self.fault("did not answer within %.1f s" % timeout_s, phase)

    def quit(self, reply_s: float) -> Dict[str, Any]:
        """Ask the child to exit and check that it did, cleanly; return its farewell facts."""
        phase = "at the end of the arm"
        self.send(QUIT, phase)
        _, farewell = self.expect(("bye",), reply_s, phase)
        code = self.child.poll_exit(EXIT_GRACE_S)
        if code is None:
            raise self.fault("did not exit within %.1f s when asked" % EXIT_GRACE_S, phase)
        self.reaped_code = code
        if code != 0:
            raise self.fault("did not exit cleanly", phase, died=True)
        return dict(farewell)


# --- starting a child -------------------------------------------------------------------


def _waiter_cpu(params: MeasureParams) -> Optional[int]:
    """The CPU the waiter child must pin itself to, or None (placement ``any``)."""
    return cpu_for(params.placement, params.notifier_cpu, params.waiter_cpu, WAITER)


def _child_idle_s(params: MeasureParams) -> float:
    return max(CHILD_IDLE_S, 2 * handshake_timeout_s(params))


def _factory_name(factory: Callable[..., WaitSide]) -> str:
    name = "%s:%s" % (factory.__module__, factory.__qualname__)
    if "<" in name:
        raise ValueError("a child's factory must be a module-level function, not %s" % name)
    return name


def _child_command(params: MeasureParams, waiter: ChildWaiter, conn_fd: int) -> List[str]:
    """The exec child's command line (see :func:`wakelab.core.drivers.child_side.main`)."""
    cpu = _waiter_cpu(params)
    return [
        sys.executable, "-c", _BOOTSTRAP, waiter.path_entry, _factory_name(waiter.factory), str(conn_fd),
        repr(float(params.timeout_s)), repr(float(_child_idle_s(params))), "-" if cpu is None else str(cpu),
    ] + [str(int(arg)) for arg in waiter.args]


def _start_exec(params: MeasureParams, waiter: ChildWaiter, name: str) -> _Session:
    parent_conn, child_conn = multiprocessing.connection.Pipe(duplex=True)
    stderr_file = None
    try:
        stderr_file = tempfile.TemporaryFile(prefix="wakelab-child-stderr-")
        proc = subprocess.Popen(
            _child_command(params, waiter, child_conn.fileno()),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr_file,
            pass_fds=(child_conn.fileno(),) + tuple(waiter.pass_fds),
            close_fds=True,
        )
    except BaseException:
        parent_conn.close()
        if stderr_file is not None:
            stderr_file.close()
        raise
    finally:
        child_conn.close()
    return _Session(name, _ExecChild(proc, stderr_file), parent_conn)


def _start_spawned(params: MeasureParams, waiter: ChildWaiter, name: str) -> _Session:
    ctx = multiprocessing.get_context("spawn")
    parent_conn, child_conn = ctx.Pipe(duplex=True)
    process = ctx.Process(
        target=child_side.spawned_main,
        args=(child_conn, waiter.factory, waiter.args, params.timeout_s, _child_idle_s(params), _waiter_cpu(params)),
        name="wakelab-%s-waiter" % name,
        daemon=True,
    )
    try:
        process.start()
    except BaseException:
        parent_conn.close()
        raise
    finally:
        child_conn.close()
    return _Session(name, _SpawnedChild(process), parent_conn)


# --- multiprocessing's resource tracker ------------------------------------------------


def _resource_tracker() -> Any:
    from multiprocessing import resource_tracker

    return getattr(resource_tracker, "_resource_tracker", None)


def _resource_tracker_running() -> bool:
    tracker = _resource_tracker()
    return tracker is not None and getattr(tracker, "_fd", None) is not None


def _stop_resource_tracker() -> None:
    tracker = _resource_tracker()
    stop = getattr(tracker, "_stop", None)  # present on 3.8-3.13
    if stop is not None and _resource_tracker_running():
        stop()


def _release_frames(exc: BaseException) -> None:
    """Drop the locals held by ``exc``'s finished frames (and those of its chained exceptions)."""
    seen = set()
    current: Optional[BaseException] = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        traceback.clear_frames(current.__traceback__)
        current = current.__cause__ or current.__context__


# --- the wake loop ------------------------------------------------------------------------


def measure(params: MeasureParams, make_path: Callable[[], ChildPath], name: str) -> RawLatency:
    """Time the parent's notify waking ``make_path()``'s wait in a waiter child process.

    Samples are ``t1 - t0`` (closed loop) or ``t1 - scheduled`` (open loop),
    in nanoseconds; a wait that times out is a lost wake.  ``make_path`` is
    called here (not by the family) so that a resource tracker its
    primitives start is found and stopped again; ``name`` is the arm's.
    """
    # Starting the tracker unblocks SIGINT/SIGTERM in the calling thread: put the mask back.
    with preserved_signal_state(()):
        tracker_was_running = _resource_tracker_running()
        try:
            return _measure_path(params, make_path, name)
        except BaseException as exc:
            # A traceback keeps the arm's frames, and with them its Event or Queue, alive:
            # their semaphores must be gone before the tracker.
            _release_frames(exc)
            raise
        finally:
            # Semaphores must be finalised (which unregisters them with the tracker) before
            # the tracker goes, or it reports them leaked and a late finaliser starts a new one.
            gc.collect()
            if not tracker_was_running:
                _stop_resource_tracker()


def _measure_path(params: MeasureParams, make_path: Callable[[], ChildPath], name: str) -> RawLatency:
    path = make_path()
    try:
        return _measure_child(params, path, name)
    finally:
        path.close()


def _measure_child(params: MeasureParams, path: ChildPath, name: str) -> RawLatency:
    start = _start_spawned if path.waiter.start == SPAWN else _start_exec
    started_ns = now_ns()
    session = start(params, path.waiter, name)
    try:
        _, hello = session.expect(("hello",), START_TIMEOUT_S, "while starting")
        child_start_ms = (now_ns() - started_ns) / 1e6
        clock = _clock_implementation()
        if hello["clock"] != clock or not _is_system_wide_clock(clock):
            raise session.fault(
                "uses clock %s while the parent uses %s: stamps cannot be subtracted" % (hello["clock"], clock),
                "while starting",
            )
        step = path.notifier(session.child.pid).step(params)
        if params.mode == "open":
            collector, loop_info = _drive_open(params, session, step)
        else:
            collector, loop_info = _drive_closed(params, session, step)
        notifier_cpu_seen = current_cpu()
        farewell = session.quit(handshake_timeout_s(params))
    finally:
        session.close()
    return collector.result(
        settle_us=params.settle_us,
        clock=clock,
        child_started_by=session.child.how_started,
        child_start_ms=round(child_start_ms, 3),
        child_python=hello.get("python"),
        child_cpus=hello.get("cpus"),
        notifier_cpu_seen=notifier_cpu_seen,
        waiter_cpu_seen=farewell.get("waiter_cpu_seen"),
        notifier_tid=native_tid(),
        # The child waits in its main thread, whose kernel thread id is its pid.
        waiter_tid=session.child.pid,
        waiter_pid=session.child.pid,
        **loop_info,
    )


def _poll_ms(timeout_s: float) -> int:
    return max(0, int(math.ceil(timeout_s * 1000.0)))


def _phase(index: int, total: int) -> str:
    return "during wake %d of %d (warm-up included)" % (index + 1, total)


def _drive_closed(
    params: MeasureParams, session: _Session, step: Callable[[], int]
) -> Tuple[LatencyCollector, Dict[str, object]]:
    collector = LatencyCollector(params)
    slots = collector.slots
    handshake_s = handshake_timeout_s(params)
    # The completion handshake: one poll() of the connection's fd, a C call that drops the
    # GIL and sleeps at once (Connection.poll would run Python selector code first).
    poller = select.poll()
    poller.register(session.conn.fileno(), select.POLLIN)
    wait_reply = poller.poll
    reply_ms = _poll_ms(handshake_s)
    settles = settle_schedule_s(params)
    sleep = time.sleep
    total = params.total_wakes
    stale = 0
    t0s = wake_t0_log(params)
    getcpu = cpu_reader()
    waiter_cpus, notifier_cpus = collector.record_cpus() if getcpu is not None else (None, None)
    for index in range(total):
        phase = _phase(index, total)
        session.send(index, phase)
        _, armed = session.expect(("ready",), handshake_s, phase)
        if armed != index:
            raise session.fault("armed wake %r instead of %d" % (armed, index), phase)
        sleep(settles[index])
        notified_on = getcpu() if getcpu is not None else -1  # before t0: outside the window
        t0 = step()
        if not wait_reply(reply_ms):
            raise session.no_answer(handshake_s, phase)
        tag, t1 = session.receive(("woke", "lost"), phase)
        if tag == "lost":
            slots[index] = LOST_NS
        elif t1 < t0:
            stale += 1  # the wait returned before this notify: an older wake, not this one
            slots[index] = LOST_NS
        else:
            slots[index] = t1 - t0
        if waiter_cpus is not None and notifier_cpus is not None:
            extra = session.extra
            waiter_cpus[index] = extra[0] if extra and type(extra[0]) is int else -1
            notifier_cpus[index] = notified_on
        if t0s is not None:
            t0s[index] = t0  # the wake is over: outside the timed window
    return collector, {"mode": "closed", "stale_wakes": stale, **t0_info(collector, t0s, params.warmup)}


def _drive_open(
    params: MeasureParams, session: _Session, step: Callable[[], int]
) -> Tuple[LatencyCollector, Dict[str, object]]:
    """Open loop: notify on schedule; match the child's wakes to the notifies that caused them."""
    interval_ns = params.interval_us * 1000
    settle_ns = params.settle_us * 1000
    total = params.total_wakes
    handshake_s = handshake_timeout_s(params)
    phase = "in the open loop"
    session.send((OPEN, settle_ns + total * interval_ns), phase)
    session.expect(("ready",), handshake_s, phase)
    sleep = time.sleep
    scheduled: List[int] = []
    issued: List[int] = []
    # The first notify is one settle period away, so the child is parked when it comes.
    base = now_ns() + max(settle_ns, interval_ns)
    for i in range(total):
        due = base + i * interval_ns
        # Sleep, never spin, up to the due instant (as the thread driver does).
        remaining = due - now_ns()
        if remaining > 0:
            sleep(remaining / 1e9)
        issued.append(step())
        scheduled.append(due)
    # Idle until the next instant the schedule would have used, as between notifies, then
    # tell the child where the schedule ended: its last wake is due by then.
    sleep(interval_ns / 1e9)
    last_ns = (issued[-1] if issued else now_ns()) + params.planted_delay_ns
    session.send(("stop", last_ns, last_ns + int(params.timeout_s * 1e9)), phase)
    _, wakes = session.expect(("wakes",), handshake_s + params.timeout_s, phase)
    first_t1, coalesced = match_open_loop(issued, list(wakes), params.planted_delay_ns)
    collector = LatencyCollector(params)
    for i in range(total):
        woke = first_t1.get(i)
        collector.add(None if woke is None else woke - scheduled[i], notify_late=issued[i] - scheduled[i])
    return collector, {
        "mode": "open",
        "interval_us": params.interval_us,
        "coalesced": sum(1 for i in coalesced if i >= params.warmup),
    }
