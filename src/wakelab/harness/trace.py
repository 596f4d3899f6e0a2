"""Collecting the kernel's scheduler events around a measurement, with ``perf``.

Why ``perf`` and not tracefs.  Both read the same tracepoints.  tracefs
(``/sys/kernel/tracing``) is one buffer for the whole machine: two programs
tracing at once (two wakelab runs, or another tool) switch each other's events
on and off and read each other's data, and its text output gives timestamps in
microseconds only.  ``perf record`` opens its own per-CPU buffers, so any
number of sessions coexist, stamps each event in nanoseconds on the clock we
ask for (``-k CLOCK_MONOTONIC``: the clock behind ``time.perf_counter_ns()``
on Linux, so events line up with every wake's ``t0`` and ``t1``), and ``perf
script`` prints them in a stable text format.  Debian ships it as
``linux-perf``.  Nothing here runs in a measuring process: the worker side
stays stdlib-only and does not know it is traced, beyond keeping each wake's
``t0`` (:data:`wakelab.core.drivers.RECORD_T0`).

A session records system-wide (``-a``), because the measuring threads do not
exist yet when it starts, and is *armed* through perf's control fifo: it
starts disabled (``-D -1``), and :meth:`SchedTrace.start` returns only once
perf acknowledged ``enable``, so no wake is measured before the events flow.
:meth:`SchedTrace.stop` disables and ends it; :meth:`SchedTrace.events` runs
``perf script`` and keeps only the events that name the given thread ids.

Where tracing is not allowed (no ``perf``, not root and
``kernel.perf_event_paranoid`` too high, no tracepoints), :class:`TraceUnavailable`
carries one sentence saying why and how to enable it.

Why the waiter's blocking system calls too.  The scheduler's events are not
always all there: on some kernels a CPU that idles records nothing in its idle
task -- not its ``sched_wakeup``, not its ``sched_switch`` from idle to the
woken waiter, not its ``power:cpu_idle`` exit (seen on this project's 2-vCPU
Firecracker guests: every event of ``swapper/1`` is missing, on perf and
tracefs alike, while ``swapper/0`` records them).  A wake into that CPU shows
its ``sched_waking`` and then the waiter already running.  The waiter's own
events fill the gap: the exit of the system call it slept in
(``syscalls:sys_exit_futex``, ``sys_exit_read``, ...) is the first thing it
does on its CPU, within a microsecond or two of being switched in, so the
split can place the switch-in there instead of giving the wake up.  And the
matching ``sys_enter_*`` says what each further sleep waited on: a futex by
its address (a lock, a condition, the GIL), an fd, a timer, a signal, a
child -- and the exit's return value whether it timed out.  These are
:data:`SYSCALLS`, recorded where the kernel has their tracepoints
(:func:`default_events`); a tracepoint costs each of those calls about a
microsecond while perf records, on the whole machine, which the traced pass's
overhead (traced p50 against untraced passes on both sides) shows.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple

from wakelab.analysis.components import SchedEvent
from wakelab.harness.frames import SAMPLE_EVENT, FrameSample, parse_stack

#: The scheduler's tracepoints: who wakes whom, who runs where, who moves.
EVENTS = ("sched:sched_waking", "sched:sched_wakeup", "sched:sched_switch", "sched:sched_migrate_task")
#: The system calls a waiter sleeps in, followed at their entry and exit (``syscalls:sys_enter_NAME``,
#: ``syscalls:sys_exit_NAME``) where the kernel has the tracepoints: locks, conditions, semaphores and
#: the GIL (futex); fds (read, recv, select, poll, epoll); timers; signals; children.
SYSCALLS = (
    "futex", "read", "readv", "recvfrom", "recvmsg", "select", "pselect6", "poll", "ppoll", "epoll_wait",
    "epoll_pwait", "epoll_pwait2", "clock_nanosleep", "nanosleep", "rt_sigtimedwait", "rt_sigsuspend", "pause",
    "wait4", "waitid",
)
#: Where the kernel lists its tracepoints (tracefs, then its older place under debugfs).
TRACEFS_EVENTS = ("/sys/kernel/tracing/events", "/sys/kernel/debug/tracing/events")
#: How long perf may take to come up and acknowledge ``enable``.
START_TIMEOUT_S = 15.0
#: How long perf may take to end after ``stop`` (it writes its buffers out).
STOP_TIMEOUT_S = 30.0
#: How long ``perf script`` may take.
SCRIPT_TIMEOUT_S = 180.0
#: Per-CPU buffer in pages: room for a burst of a busy machine's context switches.
MMAP_PAGES = 1024

HOW_TO_ENABLE = (
    "run as root, or allow it with 'sysctl kernel.perf_event_paranoid=-1' "
    "(and install perf: 'apt install linux-perf')"
)


class TraceUnavailable(RuntimeError):
    """Tracing cannot run here; the message says why and how to enable it."""


def syscall_events(names: Sequence[str] = SYSCALLS, roots: Sequence[str] = TRACEFS_EVENTS) -> List[str]:
    """The ``syscalls:sys_enter_NAME`` / ``sys_exit_NAME`` tracepoints of ``names`` this kernel has
    (both of a pair, or neither); empty where its tracepoint list cannot be read."""
    for root in roots:
        folder = os.path.join(root, "syscalls")
        try:
            present = set(os.listdir(folder))
        except OSError:
            continue
        found: List[str] = []
        for name in names:
            if "sys_enter_" + name in present and "sys_exit_" + name in present:
                found += ["syscalls:sys_enter_" + name, "syscalls:sys_exit_" + name]
        return found
    return []


def default_events() -> Tuple[str, ...]:
    """What a session records unless told otherwise: :data:`EVENTS` and the waiter's blocking
    system calls (:func:`syscall_events`)."""
    return EVENTS + tuple(syscall_events())


# "pid/tid [cpu] sec.ns: event: fields" (perf script -F pid,tid,...), or "tid [cpu] ..." (-F tid,...).
_LINE = re.compile(
    r"^\s*(?:(?P<pid>-?\d+)/)?(?P<tid>-?\d+)\s+\[(?P<cpu>\d+)\]\s+(?P<sec>\d+)\.(?P<ns>\d{9}):\s+(?P<event>[\w:]+):\s(?P<rest>.*)$"
)
_WAKE = re.compile(r"\spid=(?P<pid>\d+)\s+prio=-?\d+\s+target_cpu=(?P<target>\d+)")
_SWITCH = re.compile(
    r"\sprev_pid=(?P<prev>\d+)\s+prev_prio=-?\d+\s+prev_state=(?P<state>\S+)\s+==>\s+next_comm=.*\snext_pid=(?P<next>\d+)\s+next_prio=-?\d+\s*$"
)
_MIGRATE = re.compile(r"\spid=(?P<pid>\d+)\s+prio=-?\d+\s+orig_cpu=(?P<orig>\d+)\s+dest_cpu=(?P<dest>\d+)")
# A system call's arguments ("uaddr: 0x7f.., op: 0x00000089, ...") and return value ("0xffffffffffffff92").
_ARG = re.compile(r"\w+:\s+(0x[0-9a-fA-F]+|-?\d+)")
_RET = re.compile(r"^\s*(0x[0-9a-fA-F]+|-?\d+)\s*$")


def _signed(text: str) -> int:
    """A return value as perf prints it (hex, two's complement on 64 bits) as a signed int."""
    value = int(text, 16) if text.lower().startswith("0x") else int(text)
    return value - (1 << 64) if value >= 1 << 63 else value


def parse_line(line: str) -> Optional[SchedEvent]:
    """One line of ``perf script -F pid,tid,cpu,time,event,trace --ns`` as an event (None: not one).

    ``comm`` fields may hold spaces, so each field is found by its key.
    """
    match = _LINE.match(line)
    if match is None:
        return None
    time_ns = int(match.group("sec")) * 1_000_000_000 + int(match.group("ns"))
    event = match.group("event")
    rest = " " + match.group("rest")
    cpu = int(match.group("cpu"))
    tid = int(match.group("tid"))
    tgid = int(match.group("pid") or 0)
    if event.startswith("syscalls:sys_"):
        return _parse_syscall(time_ns, event, cpu, tid, tgid, match.group("rest"))
    if event in ("sched:sched_waking", "sched:sched_wakeup"):
        wake = _WAKE.search(rest)
        if wake is None:
            return None
        kind = "waking" if event.endswith("waking") else "wakeup"
        return SchedEvent(time_ns, kind, cpu, tid, pid=int(wake.group("pid")), target_cpu=int(wake.group("target")), tgid=tgid)
    if event == "sched:sched_switch":
        switch = _SWITCH.search(rest)
        if switch is None:
            return None
        return SchedEvent(
            time_ns, "switch", cpu, tid,
            prev_pid=int(switch.group("prev")), prev_state=switch.group("state"), next_pid=int(switch.group("next")),
            tgid=tgid,
        )
    if event == "sched:sched_migrate_task":
        move = _MIGRATE.search(rest)
        if move is None:
            return None
        return SchedEvent(
            time_ns, "migrate", cpu, tid,
            pid=int(move.group("pid")), orig_cpu=int(move.group("orig")), dest_cpu=int(move.group("dest")), tgid=tgid,
        )
    return None


def _parse_syscall(time_ns: int, event: str, cpu: int, tid: int, tgid: int, rest: str) -> Optional[SchedEvent]:
    """``syscalls:sys_enter_NAME`` (its first two arguments: a futex's word and op, an fd ...) or
    ``syscalls:sys_exit_NAME`` (its return value, negative for an error: -110 timed out)."""
    _, _, which = event.partition(":")
    if which.startswith("sys_enter_"):
        args = [_signed(v) for v in _ARG.findall(rest)[:2]]
        args += [0] * (2 - len(args))
        return SchedEvent(time_ns, "enter", cpu, tid, tgid=tgid, syscall=which[len("sys_enter_"):], arg0=args[0], arg1=args[1])
    if which.startswith("sys_exit_"):
        ret = _RET.match(rest)
        if ret is None:
            return None
        return SchedEvent(time_ns, "exit", cpu, tid, tgid=tgid, syscall=which[len("sys_exit_"):], ret=_signed(ret.group(1)))
    return None


# perf script --show-lost-events: a line where perf's ring buffer overflowed and events were dropped.
_LOST = re.compile(r"\bLOST (?P<count>\d+) events!")
# A CPU sample's head line (its call chain follows, one frame a line, then a blank line).
_SAMPLE = re.compile(
    r"^\s*(?:(?P<pid>\d+)/)?(?P<tid>\d+)\s+\[(?P<cpu>\d+)\]\s+(?P<sec>\d+)\.(?P<ns>\d{9}):\s+(?:\d+\s+)?cpu-clock\S*:\s*$"
)


def parse_script(
    lines: Iterable[str],
    tids: Optional[Set[int]] = None,
    lost: Optional[List[int]] = None,
    samples: Optional[Dict[int, List[FrameSample]]] = None,
) -> Dict[int, List[SchedEvent]]:
    """Events by thread id (each list in time order), only for ``tids`` if given.

    A switch names two threads and is filed under both; a wake under the woken
    thread and the thread that raised it (which was on a CPU then); a system
    call under its own thread.  Events perf reports it dropped (``LOST N
    events!``) are added up in ``lost[0]`` if given.  CPU samples with call
    chains (``--trace-frames``) are filed in ``samples`` by thread, if given,
    with the Python frames on each stack (:class:`~wakelab.harness.frames.FrameSample`).
    """
    by_tid: Dict[int, List[SchedEvent]] = {}
    # The system calls of the whole machine far outnumber the rest: skip other threads' unparsed.
    own = None if tids is None else {str(t) for t in tids}
    in_stack = False  # reading a sample's call chain
    head: Optional["re.Match[str]"] = None  # ... of a sample to keep
    stack: List[str] = []
    for line in lines:
        if in_stack:
            if line.strip():
                if head is not None:
                    stack.append(line)
                continue
            if head is not None and samples is not None:
                _file_sample(head, stack, samples)
            in_stack, head, stack = False, None, []
            continue
        if "cpu-clock" in line:
            sampled = _SAMPLE.match(line)
            if sampled is not None:
                in_stack = True
                head = sampled if samples is not None and (own is None or sampled.group("tid") in own) else None
                continue
        if own is not None and "syscalls:sys_" in line:
            first = line.lstrip().split(None, 1)[0] if line.strip() else ""
            if first.rpartition("/")[2] not in own:
                continue
        dropped = _LOST.search(line)
        if dropped is not None:
            if lost is not None:
                lost[0] += int(dropped.group("count"))
            continue
        event = parse_line(line)
        if event is None:
            continue
        if event.kind == "switch":
            about = {event.prev_pid, event.next_pid}
        elif event.kind in ("enter", "exit"):
            about = {event.tid}
        elif event.kind in ("waking", "wakeup"):
            about = {event.pid, event.tid}
        else:
            about = {event.pid}
        for tid in about:
            if tid and (tids is None or tid in tids):
                by_tid.setdefault(tid, []).append(event)
    if head is not None and samples is not None:
        _file_sample(head, stack, samples)
    for events in by_tid.values():
        events.sort(key=lambda e: e.time_ns)
    return by_tid


def _file_sample(head: "re.Match[str]", stack: List[str], samples: Dict[int, List[FrameSample]]) -> None:
    tid = int(head.group("tid"))
    time_ns = int(head.group("sec")) * 1_000_000_000 + int(head.group("ns"))
    samples.setdefault(tid, []).append(FrameSample(time_ns, tid, int(head.group("pid") or 0), parse_stack(stack)))


def perf_path() -> Optional[str]:
    """``perf`` on ``PATH`` (None: not installed)."""
    return shutil.which("perf")


def precheck() -> Optional[str]:
    """Why tracing cannot run here, found without starting perf (None: worth trying)."""
    if perf_path() is None:
        return "tracing needs perf, which is not on PATH (install it: 'apt install linux-perf')"
    if os.geteuid() != 0:
        try:
            with open("/proc/sys/kernel/perf_event_paranoid") as f:
                paranoid = int(f.read().strip())
        except (OSError, ValueError):
            paranoid = None
        if paranoid is not None and paranoid > -1:
            return "tracing the scheduler system-wide is not allowed (kernel.perf_event_paranoid=%d, not root): %s" % (
                paranoid, HOW_TO_ENABLE)
    return None


def _first_line(text: str) -> str:
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("'trace' not valid"):
            return line
    return "(no message)"


class SchedTrace:
    """One ``perf record`` session of the scheduler tracepoints, on CLOCK_MONOTONIC.

    Records :func:`default_events` unless ``events`` names others.
    Use as ``with SchedTrace() as trace: ...measure...`` then
    ``trace.events(tids)``; or call :meth:`start`, :meth:`stop`,
    :meth:`close` yourself.  :meth:`close` (also on error) ends perf and
    removes the temporary folder.  Raises :class:`TraceUnavailable` from
    :meth:`start` when perf cannot record here.
    """

    def __init__(self, events: Optional[Sequence[str]] = None, perf: Optional[str] = None, frames: bool = False) -> None:
        # None: the scheduler's events and the waiter's blocking system calls (default_events()).
        self._events = tuple(events) if events is not None else default_events()
        # Also sample every CPU with call chains, for the Python frames (--trace-frames).
        self.frames = frames
        if frames:
            self._events += (SAMPLE_EVENT,)
        # The CPU samples of the threads asked for, by thread id (set by events() when frames).
        self.samples: Dict[int, List[FrameSample]] = {}
        self._perf = perf
        self._dir: Optional[str] = None
        self._proc: Optional["subprocess.Popen[bytes]"] = None
        self._ctl: Optional[int] = None
        self._ack: Optional[int] = None
        self._stderr: Optional[object] = None
        self.started_ns = 0
        self.stopped_ns = 0
        # Events perf dropped (its buffer overflowed, on a busy machine): wakes they belonged to
        # show as unattributed.  Set by :meth:`events`.
        self.lost_events = 0

    # -- life cycle ---------------------------------------------------------
    def __enter__(self) -> "SchedTrace":
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        if exc_info[0] is None:
            self.stop()
        else:
            self.close()

    @property
    def data_path(self) -> str:
        assert self._dir is not None
        return os.path.join(self._dir, "perf.data")

    def start(self) -> None:
        """Start perf and return once it records; :class:`TraceUnavailable` if it cannot."""
        reason = precheck() if self._perf is None else None
        if reason is not None:
            raise TraceUnavailable(reason)
        perf = self._perf or perf_path() or "perf"
        self._dir = tempfile.mkdtemp(prefix="wakelab-trace-")
        ctl = os.path.join(self._dir, "ctl")
        ack = os.path.join(self._dir, "ack")
        os.mkfifo(ctl, 0o600)
        os.mkfifo(ack, 0o600)
        argv = [perf, "record", "-q", "-a", "-k", "CLOCK_MONOTONIC", "-m", str(MMAP_PAGES)]
        for event in self._events:
            argv += ["-e", event]
        argv += ["-D", "-1", "--control", "fifo:%s,%s" % (ctl, ack), "-o", self.data_path]
        # perf records for as long as its workload lives: a process that reads its stdin, a
        # pipe only this process writes, so perf ends when we close it -- or when we die.
        argv += ["--", sys.executable, "-S", "-c", "import sys; sys.stdin.buffer.read()"]
        stderr = tempfile.TemporaryFile(dir=self._dir)
        self._stderr = stderr
        try:
            try:
                self._proc = subprocess.Popen(
                    argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=stderr, start_new_session=True
                )
            except OSError as exc:
                raise TraceUnavailable("cannot start perf (%s): %s" % (perf, exc.strerror or exc)) from None
            # The ack fifo is opened non-blocking at once; the ctl fifo once perf reads it.
            self._ack = os.open(ack, os.O_RDONLY | os.O_NONBLOCK)
            deadline = time.monotonic() + START_TIMEOUT_S
            while self._ctl is None:
                try:
                    self._ctl = os.open(ctl, os.O_WRONLY | os.O_NONBLOCK)
                except OSError as exc:
                    if exc.errno != errno.ENXIO:
                        raise
                    self._check_alive(deadline)
                    time.sleep(0.01)
            self._command("enable", deadline)
            self.started_ns = time.perf_counter_ns()
        except BaseException:
            self.close()
            raise

    def _perf_error(self) -> str:
        stderr = self._stderr
        if stderr is None:
            return "(no message)"
        try:
            stderr.seek(0)  # type: ignore[attr-defined]
            return _first_line(stderr.read(1 << 16).decode("utf-8", "replace"))  # type: ignore[attr-defined]
        except (OSError, ValueError):
            return "(no message)"

    def _check_alive(self, deadline: float) -> None:
        proc = self._proc
        assert proc is not None
        if proc.poll() is not None:
            raise TraceUnavailable(
                "perf could not record the scheduler's events (exit status %s: %s); %s"
                % (proc.returncode, self._perf_error(), HOW_TO_ENABLE)
            )
        if time.monotonic() > deadline:
            raise TraceUnavailable("perf did not start recording within %.0f s" % START_TIMEOUT_S)

    def _command(self, command: str, deadline: float) -> None:
        """Send ``command`` on the control fifo and wait for perf's ``ack``."""
        assert self._ctl is not None and self._ack is not None
        os.write(self._ctl, (command + "\n").encode("ascii"))
        received = b""
        while b"ack" not in received:
            try:
                received += os.read(self._ack, 64)
            except BlockingIOError:
                pass
            if b"ack" in received:
                break
            self._check_alive(deadline)
            time.sleep(0.005)

    def stop(self) -> None:
        """Stop recording and let perf write its data out."""
        proc = self._proc
        if proc is None:
            return
        self.stopped_ns = time.perf_counter_ns()
        try:
            if proc.poll() is None:
                try:
                    self._command("disable", time.monotonic() + STOP_TIMEOUT_S)
                except (OSError, TraceUnavailable):
                    pass
                self._end(proc)
                if proc.returncode not in (0, -signal.SIGINT):
                    raise TraceUnavailable("perf record failed (exit status %s: %s)" % (proc.returncode, self._perf_error()))
        finally:
            self._close_fifos()

    @staticmethod
    def _end(proc: "subprocess.Popen[bytes]") -> None:
        """End perf: its workload's stdin closes (perf then writes its data out), else SIGINT, else SIGKILL."""
        if proc.stdin is not None:
            try:
                proc.stdin.close()
            except OSError:
                pass
        try:
            proc.wait(STOP_TIMEOUT_S)
            return
        except subprocess.TimeoutExpired:
            pass
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
            raise TraceUnavailable("perf did not end within %.0f s of being stopped" % (2 * STOP_TIMEOUT_S)) from None

    def events(self, tids: Iterable[int]) -> Dict[int, List[SchedEvent]]:
        """The recorded events about ``tids``, by thread id, in time order (after :meth:`stop`)."""
        wanted = {int(t) for t in tids if t}
        perf = self._perf or perf_path() or "perf"
        argv = [perf, "script", "-i", self.data_path, "-F", "pid,tid,cpu,time,event,trace", "--ns", "--show-lost-events"]
        if self.frames:  # the samples with their call chains; the tracepoints as ever
            argv[4:6] = ["-F", "trace:pid,tid,cpu,time,event,trace", "-F", "sw:pid,tid,cpu,time,event,ip,sym"]
        assert self._dir is not None
        with tempfile.TemporaryFile(dir=self._dir) as out, tempfile.TemporaryFile(dir=self._dir) as err:
            try:
                proc = subprocess.run(
                    argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, timeout=SCRIPT_TIMEOUT_S, check=False
                )
            except subprocess.TimeoutExpired:
                raise TraceUnavailable("perf script did not finish within %.0f s" % SCRIPT_TIMEOUT_S) from None
            except OSError as exc:
                raise TraceUnavailable("cannot run perf script: %s" % (exc.strerror or exc)) from None
            if proc.returncode != 0:
                err.seek(0)
                raise TraceUnavailable("perf script failed: %s" % _first_line(err.read(1 << 16).decode("utf-8", "replace")))
            out.seek(0)
            lines = (raw.decode("utf-8", "replace") for raw in out)
            lost = [0]
            samples: Optional[Dict[int, List[FrameSample]]] = {} if self.frames else None
            found = parse_script(lines, wanted, lost, samples)
            self.lost_events = lost[0]
            self.samples = samples or {}
            return found

    def data_bytes(self) -> int:
        """Size of perf's recording (0 if there is none)."""
        try:
            return os.path.getsize(self.data_path)
        except (OSError, AssertionError):
            return 0

    def _close_fifos(self) -> None:
        for fd in (self._ctl, self._ack):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._ctl = self._ack = None

    def close(self) -> None:
        """End perf if it still runs and remove the temporary folder."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            try:
                self._end(proc)
            except TraceUnavailable:
                pass
        if proc is not None and proc.stdin is not None:
            try:
                proc.stdin.close()
            except OSError:
                pass
        self._close_fifos()
        if self._stderr is not None:
            try:
                self._stderr.close()  # type: ignore[attr-defined]
            except OSError:
                pass
            self._stderr = None
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
