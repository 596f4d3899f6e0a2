"""Cross-process arms: the parent process (notifier) wakes a blocked child process (waiter).

Measuring side: standard library only, Python 3.9+.

One clock for both sides
------------------------
``t0`` is taken in the parent and ``t1`` in the child, both with
``time.perf_counter_ns()``.  On Linux that is ``clock_gettime(CLOCK_MONOTONIC)``,
a single system-wide clock shared by every thread and process of the machine,
so ``t1 - t0`` is meaningful even though the two stamps come from different
processes.  Every arm's ``requires`` checks
``time.get_clock_info("perf_counter").implementation`` in the parent, and the
child reports its own in its first message; the arm refuses to run when either
is not a ``CLOCK_MONOTONIC`` clock.

What one wake looks like
------------------------
The child is started once per arm; its start-up is never part of a sample.
Notifier and waiter talk over a control connection (a socketpair) that is
used only *outside* the timed window::

    parent: send "wake i"        child: drain leftovers, send "ready i", block in the wait
    parent: sleep settle_us
    parent: t0 = perf_counter_ns(); plant_delay(); notify
                                 child: t1 = perf_counter_ns() as the wait returns
                                 child: send t1 (or "lost" if the wait timed out)

How the children are started, and why not ``os.fork()``
-------------------------------------------------------
``os.fork()`` in a process that has threads raises a DeprecationWarning on
3.12+ (and is genuinely unsafe), and the measuring process may well have
threads (load generators, other arms' leftovers under test).  So:

* ``kill-sigwait-child``, ``pipe-process`` and ``eventfd-fork`` start their
  child with ``subprocess.Popen([sys.executable, "-c", <bootstrap>, ...])``:
  fork+exec of the same interpreter, with the package's ``src`` directory put
  on the child's ``sys.path`` and the needed fds handed over with
  ``pass_fds``.  The child side lives in :mod:`wakelab.core.drivers.child`.
* ``eventfd-fork`` therefore shares its eventfd with the child across
  fork+*exec* (the fd is inherited through ``pass_fds``), not across a bare
  ``fork()``: the kernel object and the wake path are the same, the child just
  runs a fresh interpreter.  The arm keeps its name; its ``mechanism`` says
  exactly this.
* ``mp-event`` and ``mp-queue`` use ``multiprocessing.get_context("spawn")``.
  Spawning starts multiprocessing's *resource tracker* process (and keeps an
  fd to it) for the life of the parent.  So that an arm leaves no stray
  process or fd behind, an arm that found no tracker running stops the one it
  started (``ResourceTracker._stop()``, present on 3.8-3.13) once its
  semaphores are gone; a tracker that was already running is left alone.
  Like every spawned multiprocessing child, this one re-imports the parent's
  ``__main__`` *script* (not a ``-m`` module, not ``-c``): a script that runs
  these arms needs the ``if __name__ == "__main__":`` guard.

Placement
---------
The parent's calling thread is the notifier; the worker has already pinned
it to the notifier's CPU (and ``mp-queue``'s feeder thread, started by the
first ``put``, inherits that mask: it is part of the notify path).  The
child is the waiter: the parent passes it the waiter's CPU (None for
placement ``any``) and the child pins itself there before it says hello, so
that any thread it starts inherits the mask.  The raw record's
``info["child_cpus"]`` says which CPUs the child was then allowed,
``notifier_cpu_seen`` the CPU the parent last ran on at the end of the wake
loop, and ``waiter_cpu_seen`` the one the child last ran on at the end of
its own loop (it reports it when told to quit).

Faults
------
Every wait is bounded: the child's wait by ``params.timeout_s`` (a timeout is
a lost wake, the run goes on), and each of the parent's waits for a reply by
``timeout_s`` plus a grace period.  A child that dies (its end of the control
connection reaches EOF) or stops answering raises :class:`WaiterChildError`
naming the arm, the child's pid, the wake, and how the child ended; before it
is raised the child is reaped (terminate, kill after a grace period, wait).
Children, connections, pipes, eventfds and queue threads are released in
``finally``, also when the arm raises.

``t1`` for the fd arms is taken when ``poll()`` reports the fd readable (the
wait that is bounded by the timeout); the byte or counter is read right after.
"""

from __future__ import annotations

import gc
import importlib
import multiprocessing
import multiprocessing.connection
import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from wakelab.core.families import fds
from wakelab.core.drivers import child as _proc_child
from wakelab.core.drivers import HarnessError
from wakelab.core.model import (
    BLOCKED,
    CROSS_PROCESS,
    LATENCY,
    Arm,
    LatencyCollector,
    MeasureParams,
    RawLatency,
    now_ns,
    plant_delay,
)
from wakelab.core.placement import WAITER, cpu_for, current_cpu
from wakelab.core.sigstate import preserved_signal_state

# src/ (the directory that holds the wakelab package), for the child's sys.path.
# Derived from this file rather than wakelab.__file__ so that it also works
# while wakelab is a namespace package.
_SRC_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

_BOOTSTRAP = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "from wakelab.core.drivers.child import main; sys.exit(main(sys.argv[2:]))"
)

# How long a child may take to start and say hello (spawn imports a lot).
_START_TIMEOUT_S = 30.0
# Beyond the wait's own timeout_s, how long the parent waits for a reply.
_REPLY_GRACE_S = 2.0
# How long a child gets to exit (when asked, or after SIGTERM) before SIGKILL.
_EXIT_GRACE_S = 2.0

# after_wake(index, child_pid): called after each wake, outside the timed
# window.  A fault-injection hook for tests (kill or stop the child mid-arm).
AfterWake = Callable[[int, int], None]


class WaiterChildError(HarnessError):
    """The waiter child process died, hung, or reported an error; it has been reaped."""


# --- availability -------------------------------------------------------------


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


def requires_sigwait() -> Optional[str]:
    if not hasattr(signal, "SIGUSR1") or not hasattr(signal, "sigtimedwait"):
        return "signal.sigtimedwait and SIGUSR1 are not available on this platform"
    return requires_shared_clock()


def requires_poll() -> Optional[str]:
    import select

    if not hasattr(select, "poll"):
        return "select.poll is not available on this platform"
    return requires_shared_clock()


def requires_eventfd() -> Optional[str]:
    return fds.requires_eventfd() or requires_poll()


def requires_multiprocessing() -> Optional[str]:
    if "spawn" not in multiprocessing.get_all_start_methods():
        return "multiprocessing has no 'spawn' start method here"
    try:
        # Fails on platforms without a working sem_open (some containers).
        importlib.import_module("multiprocessing.synchronize")
    except ImportError as exc:
        return "multiprocessing synchronisation is unavailable: %s" % exc
    return requires_shared_clock()


# --- the waiter child, whichever way it was started ----------------------------


class _Child:
    """The parent's handle on one waiter child process."""

    pid: int
    how_started: str

    def poll_exit(self, timeout_s: Optional[float]) -> Optional[int]:
        """Wait up to ``timeout_s`` (None: forever) for exit; the return code or None."""
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
            self.kill()
            code = self.poll_exit(None)
        assert code is not None
        return code


class _PopenChild(_Child):
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
        return text[-2000:]


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

    def reap(self, grace_s: float) -> int:
        if self.reaped_code is None:
            self.reaped_code = self.child.reap(grace_s)
        return self.reaped_code

    def fault(self, what: str, phase: str, *, died: bool = False) -> WaiterChildError:
        """Reap the child, then build the error that reports ``what`` happened."""
        if died:
            # Its end of the connection is closed: give it a moment to finish
            # exiting so that the report says how it ended.
            code = self.child.poll_exit(_EXIT_GRACE_S)
            if code is not None:
                self.reaped_code = code
        code = self.reap(_EXIT_GRACE_S)
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

    def send(self, value: int, phase: str) -> None:
        try:
            self.conn.send(value)
        except OSError:
            raise self.fault("went away", phase, died=True) from None

    def expect(self, tags: Sequence[str], timeout_s: float, phase: str) -> Tuple[str, Any]:
        """The child's next message, which must be one of ``tags``."""
        try:
            ready = self.conn.poll(timeout_s)
        except OSError:
            raise self.fault("went away", phase, died=True) from None
        if not ready:
            raise self.fault("did not answer within %.1f s" % timeout_s, phase)
        try:
            message = self.conn.recv()
        except (EOFError, OSError):
            raise self.fault("died", phase, died=True) from None
        tag = message[0]
        if tag == "error":
            error = self.fault("failed", phase, died=True)
            raise WaiterChildError("%s\nchild traceback:\n%s" % (error, message[1]))
        if tag not in tags:
            raise self.fault("sent %r where %s was expected" % (message, "/".join(tags)), phase)
        return tag, message[1]

    def quit(self) -> Dict[str, Any]:
        """Ask the child to exit and check that it did, cleanly; return its farewell facts."""
        phase = "at the end of the arm"
        self.send(_proc_child.QUIT, phase)
        _, farewell = self.expect(("bye",), _REPLY_GRACE_S, phase)
        code = self.child.poll_exit(_EXIT_GRACE_S)
        if code is None:
            raise self.fault("did not exit within %.1f s when asked" % _EXIT_GRACE_S, phase)
        self.reaped_code = code
        if code != 0:
            raise self.fault("did not exit cleanly", phase, died=True)
        return farewell


def _measure_wakes(
    params: MeasureParams,
    session: _Session,
    notify: Callable[[int], None],
    *,
    started_ns: int,
    reset: Optional[Callable[[], None]] = None,
    after_wake: Optional[AfterWake] = None,
) -> RawLatency:
    """The wake loop: handshake, settle, ``t0``, notify, collect the child's ``t1``.

    ``started_ns`` is when the child was launched (for ``child_start_ms``).
    ``reset()`` runs before each wake is armed (outside the timed window).
    """
    collector = LatencyCollector(params)
    _, hello = session.expect(("hello",), _START_TIMEOUT_S, "while starting")
    child_start_ms = (now_ns() - started_ns) / 1e6
    clock = _clock_implementation()
    if hello["clock"] != clock or not _is_system_wide_clock(clock):
        raise session.fault(
            "uses clock %s while the parent uses %s: stamps cannot be subtracted"
            % (hello["clock"], clock),
            "while starting",
        )
    reply_s = params.timeout_s + _REPLY_GRACE_S
    total = params.total_wakes
    sleep = time.sleep
    settle_s = params.settle_s
    for index in range(total):
        phase = "during wake %d of %d (warm-up included)" % (index + 1, total)
        if reset is not None:
            reset()
        session.send(index, phase)
        _, armed = session.expect(("ready",), reply_s, phase)
        if armed != index:
            raise session.fault("armed wake %r instead of %d" % (armed, index), phase)
        sleep(settle_s)
        t0 = now_ns()
        plant_delay(params, t0)
        notify(index)
        tag, value = session.expect(("woke", "lost"), reply_s, phase)
        if tag == "woke":
            if value < t0:
                raise session.fault(
                    "returned from its wait %d ns before it was notified" % (t0 - value), phase
                )
            collector.add(value - t0)
        else:
            collector.add(None)
        if after_wake is not None:
            after_wake(index, session.child.pid)
    notifier_cpu_seen = current_cpu()
    farewell = session.quit()
    return collector.result(
        settle_us=params.settle_us,
        clock=clock,
        child_started_by=session.child.how_started,
        child_start_ms=round(child_start_ms, 3),
        child_python=hello.get("python"),
        child_cpus=hello.get("cpus"),
        notifier_cpu_seen=notifier_cpu_seen,
        waiter_cpu_seen=farewell.get("waiter_cpu_seen"),
    )


# --- Popen children: kill-sigwait-child, pipe-process, eventfd-fork -----------


def _waiter_cpu(params: MeasureParams) -> Optional[int]:
    """The CPU the waiter child must pin itself to, or None (placement ``any``)."""
    return cpu_for(params.placement, params.notifier_cpu, params.waiter_cpu, WAITER)


def _child_command(
    mode: str, conn_fd: int, timeout_s: float, waiter_cpu: Optional[int], fds: Sequence[int]
) -> List[str]:
    return (
        [sys.executable, "-c", _BOOTSTRAP, _SRC_DIR, mode, str(conn_fd), repr(float(timeout_s))]
        + ["-" if waiter_cpu is None else str(waiter_cpu)]
        + [str(fd) for fd in fds]
    )


def _start_popen_child(
    mode: str, timeout_s: float, waiter_cpu: Optional[int], fds: Sequence[int]
) -> Tuple[_PopenChild, Any]:
    """Launch a waiter child (it pins itself to ``waiter_cpu``); return its handle and the parent's connection end."""
    parent_conn, child_conn = multiprocessing.connection.Pipe(duplex=True)
    stderr_file = None
    try:
        stderr_file = tempfile.TemporaryFile(prefix="wakelab-child-stderr-")
        argv = _child_command(mode, child_conn.fileno(), timeout_s, waiter_cpu, fds)
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr_file,
            pass_fds=(child_conn.fileno(),) + tuple(fds),
            close_fds=True,
        )
    except BaseException:
        parent_conn.close()
        if stderr_file is not None:
            stderr_file.close()
        raise
    finally:
        child_conn.close()
    return _PopenChild(proc, stderr_file), parent_conn


def _measure_popen_arm(
    params: MeasureParams,
    arm_name: str,
    mode: str,
    *,
    child_fds: Sequence[int] = (),
    make_notify: Callable[[int], Callable[[int], None]],
    after_start: Optional[Callable[[], None]] = None,
    after_wake: Optional[AfterWake] = None,
) -> RawLatency:
    """Run one Popen-child arm; ``make_notify(child_pid)`` builds the notify call."""
    started_ns = now_ns()
    child, conn = _start_popen_child(mode, params.timeout_s, _waiter_cpu(params), child_fds)
    session = _Session(arm_name, child, conn)
    try:
        if after_start is not None:
            after_start()
        return _measure_wakes(
            params, session, make_notify(child.pid), started_ns=started_ns, after_wake=after_wake
        )
    finally:
        conn.close()
        session.reap(_EXIT_GRACE_S)
        child.close()


def measure_kill_sigwait_child(
    params: MeasureParams, *, after_wake: Optional[AfterWake] = None
) -> RawLatency:
    """Latency (ns) of ``os.kill(child, SIGUSR1)`` waking a child blocked in ``sigtimedwait``.

    The child blocks SIGUSR1 before announcing itself, so the signal is never
    delivered to a handler: it stays pending until ``sigtimedwait`` takes it.
    """
    kill = os.kill
    signum = signal.SIGUSR1

    def make_notify(pid: int) -> Callable[[int], None]:
        def notify(index: int) -> None:
            kill(pid, signum)

        return notify

    return _measure_popen_arm(
        params, "kill-sigwait-child", "sigwait", make_notify=make_notify, after_wake=after_wake
    )


def measure_pipe_process(
    params: MeasureParams, *, after_wake: Optional[AfterWake] = None
) -> RawLatency:
    """Latency (ns) of ``os.write`` to a pipe waking a child blocked in ``poll()`` on its read end."""
    read_fd, write_fd = os.pipe()
    fds = [read_fd, write_fd]

    def close_read_end() -> None:
        # The child has its own copy now; the parent only writes.
        os.close(read_fd)
        fds.remove(read_fd)

    write = os.write
    token = b"w"

    def make_notify(pid: int) -> Callable[[int], None]:
        def notify(index: int) -> None:
            write(write_fd, token)

        return notify

    try:
        return _measure_popen_arm(
            params,
            "pipe-process",
            "pipe",
            child_fds=(read_fd,),
            make_notify=make_notify,
            after_start=close_read_end,
            after_wake=after_wake,
        )
    finally:
        for fd in fds:
            os.close(fd)


def measure_eventfd_fork(
    params: MeasureParams, *, after_wake: Optional[AfterWake] = None
) -> RawLatency:
    """Latency (ns) of ``os.eventfd_write`` waking a child blocked in ``poll()`` on the shared eventfd.

    The eventfd is created in the parent and inherited by the child across
    fork+exec (``pass_fds``); see the module docstring for why not a bare fork.
    """
    efd = os.eventfd(0, os.EFD_CLOEXEC | os.EFD_NONBLOCK)
    eventfd_write = os.eventfd_write

    def make_notify(pid: int) -> Callable[[int], None]:
        def notify(index: int) -> None:
            eventfd_write(efd, 1)

        return notify

    try:
        return _measure_popen_arm(
            params,
            "eventfd-fork",
            "eventfd",
            child_fds=(efd,),
            make_notify=make_notify,
            after_wake=after_wake,
        )
    finally:
        os.close(efd)


# --- multiprocessing (spawn) children: mp-event, mp-queue -----------------------


def _resource_tracker() -> Any:
    from multiprocessing import resource_tracker

    return getattr(resource_tracker, "_resource_tracker", None)


def _resource_tracker_running() -> bool:
    tracker = _resource_tracker()
    return tracker is not None and getattr(tracker, "_fd", None) is not None


def _stop_resource_tracker() -> None:
    tracker = _resource_tracker()
    stop = getattr(tracker, "_stop", None)
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


def _measure_spawned_arm(run: Callable[[Any], RawLatency]) -> RawLatency:
    """Run ``run(spawn_context)``, leaving no resource tracker behind that was not there before."""
    # Starting the tracker unblocks SIGINT/SIGTERM in the calling thread:
    # put the mask back afterwards.
    with preserved_signal_state(()):
        tracker_was_running = _resource_tracker_running()
        try:
            return run(multiprocessing.get_context("spawn"))
        except BaseException as exc:
            # A traceback keeps the arm's frames, and with them its Event or
            # Queue, alive; their semaphores must be gone before the tracker.
            _release_frames(exc)
            raise
        finally:
            # The semaphores must be finalised (which unregisters them with
            # the tracker) before the tracker goes, or it reports them leaked
            # and a late finaliser would start a new tracker.
            gc.collect()
            if not tracker_was_running:
                _stop_resource_tracker()


def _run_spawned_child(
    params: MeasureParams,
    arm_name: str,
    ctx: Any,
    target: Callable[..., None],
    shared: Any,
    notify: Callable[[int], None],
    reset: Optional[Callable[[], None]],
    after_wake: Optional[AfterWake],
) -> RawLatency:
    parent_conn, child_conn = ctx.Pipe(duplex=True)
    process = ctx.Process(
        target=target,
        args=(child_conn, shared, params.timeout_s, _waiter_cpu(params)),
        name="wakelab-%s-waiter" % arm_name,
        daemon=True,
    )
    started_ns = now_ns()
    try:
        process.start()
    except BaseException:
        parent_conn.close()
        raise
    finally:
        child_conn.close()
    child = _SpawnedChild(process)
    session = _Session(arm_name, child, parent_conn)
    try:
        return _measure_wakes(
            params, session, notify, started_ns=started_ns, reset=reset, after_wake=after_wake
        )
    finally:
        parent_conn.close()
        session.reap(_EXIT_GRACE_S)
        child.close()


def measure_mp_event(params: MeasureParams, *, after_wake: Optional[AfterWake] = None) -> RawLatency:
    """Latency (ns) of ``multiprocessing.Event.set()`` waking a child blocked in ``wait(timeout)``.

    This is a round trip, not one wake: ``set()`` holds the event's condition
    lock while ``notify_all()`` releases the sleeper and then *waits for it to
    acknowledge* (``_woken_count``); the child, once acknowledged, must take
    the condition lock back, which it gets only when ``set()`` returns.  So a
    sample spans three cross-process wake-ups (child, parent, child), as it
    does for every user of ``multiprocessing.Event``.
    """

    def run(ctx: Any) -> RawLatency:
        event = ctx.Event()
        try:
            set_event = event.set

            def notify(index: int) -> None:
                set_event()

            return _run_spawned_child(
                params,
                "mp-event",
                ctx,
                _proc_child.mp_event_waiter,
                event,
                notify,
                event.clear,
                after_wake,
            )
        finally:
            set_event = event = None  # let its semaphores go

    return _measure_spawned_arm(run)


def measure_mp_queue(params: MeasureParams, *, after_wake: Optional[AfterWake] = None) -> RawLatency:
    """Latency (ns) of ``multiprocessing.Queue.put(i)`` waking a child blocked in ``get(timeout)``.

    ``put`` only appends to a buffer and notifies the queue's feeder thread,
    which pickles the item and writes it to the queue's pipe; the measured
    path includes that hand-off, as it does for every user of the queue.
    """

    def run(ctx: Any) -> RawLatency:
        queue = ctx.Queue()
        try:
            put = queue.put

            def notify(index: int) -> None:
                put(index)

            return _run_spawned_child(
                params,
                "mp-queue",
                ctx,
                _proc_child.mp_queue_waiter,
                queue,
                notify,
                None,
                after_wake,
            )
        finally:
            queue.close()
            queue.join_thread()  # the feeder thread must not outlive the arm
            put = queue = None  # let its semaphores go

    return _measure_spawned_arm(run)


ARMS: List[Arm] = [
    Arm(
        name="kill-sigwait-child",
        family="processes",
        kind=LATENCY,
        mechanism="os.kill(child_pid, SIGUSR1) from the parent wakes a child process blocked in "
        "signal.sigtimedwait() with SIGUSR1 blocked",
        waiter=BLOCKED,
        scope=CROSS_PROCESS,
        t0="parent: perf_counter_ns() immediately before os.kill(child_pid, SIGUSR1)",
        t1="child: perf_counter_ns() as the first statement after signal.sigtimedwait() returns",
        measure=measure_kill_sigwait_child,
        requires=requires_sigwait,
    ),
    Arm(
        name="pipe-process",
        family="processes",
        kind=LATENCY,
        mechanism="os.write() of one byte to a pipe wakes a child process blocked in poll() on the "
        "read end (the child reads the byte after t1)",
        waiter=BLOCKED,
        scope=CROSS_PROCESS,
        t0="parent: perf_counter_ns() immediately before os.write(pipe_w, b'w')",
        t1="child: perf_counter_ns() as the first statement after poll() on the pipe returns",
        measure=measure_pipe_process,
        requires=requires_poll,
    ),
    Arm(
        name="mp-event",
        family="processes",
        kind=LATENCY,
        mechanism="multiprocessing.Event (spawn context): set() in the parent wakes a spawned child "
        "blocked in Event.wait(timeout)",
        waiter=BLOCKED,
        scope=CROSS_PROCESS,
        t0="parent: perf_counter_ns() immediately before multiprocessing.Event.set()",
        t1="child: perf_counter_ns() as the first statement after Event.wait() returns True",
        measure=measure_mp_event,
        requires=requires_multiprocessing,
    ),
    Arm(
        name="mp-queue",
        family="processes",
        kind=LATENCY,
        mechanism="multiprocessing.Queue (spawn context): put(i) in the parent, via the queue's "
        "feeder thread and pipe, wakes a spawned child blocked in Queue.get(timeout)",
        waiter=BLOCKED,
        scope=CROSS_PROCESS,
        t0="parent: perf_counter_ns() immediately before multiprocessing.Queue.put(i)",
        t1="child: perf_counter_ns() as the first statement after Queue.get() returns item i",
        measure=measure_mp_queue,
        requires=requires_multiprocessing,
    ),
    Arm(
        name="eventfd-fork",
        family="processes",
        kind=LATENCY,
        mechanism="os.eventfd shared with a child process (inherited across fork+exec via "
        "pass_fds): os.eventfd_write() wakes the child blocked in poll() on it",
        waiter=BLOCKED,
        scope=CROSS_PROCESS,
        t0="parent: perf_counter_ns() immediately before os.eventfd_write(efd, 1)",
        t1="child: perf_counter_ns() as the first statement after poll() on the eventfd returns",
        measure=measure_eventfd_fork,
        requires=requires_eventfd,
    ),
]
