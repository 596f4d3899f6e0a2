"""The storm driver: many senders signal one receiver at once; what reaches the receiving code.

Measuring side: standard library only, Python 3.9+.

The original lab's limits end with "not multiprocess kill storms".  A storm
is not one wake at a time: ``senders`` processes (or threads) each send
``SIGUSR1`` or ``SIGRTMIN`` to one receiver as fast as ``os.kill`` goes (or,
in open loop, one every ``interval_us``), and the receiver -- a Python
handler, a thread in ``sigtimedwait``, a thread reading the wakeup fd, or
the C floor's handler or ``sigwaitinfo`` -- sees what it sees.  A standard
signal is one bit in the kernel (sends while it is pending merge); a
real-time signal is queued, one entry a send; and CPython's own C handler
only sets a flag that the main thread checks between bytecodes, so the
queueing real-time signals promise may be lost at the interpreter's level.

What is counted (the arms' ``mechanism`` says it again):

* **sent** -- ``os.kill`` calls that returned without error, summed over the
  senders: the kernel accepted the signal (queued it, for a real-time one;
  for a standard one, possibly merged it with one already pending);
* **refused** -- ``os.kill`` calls that failed with ``EAGAIN``: a real-time
  signal the kernel would not queue (``RLIMIT_SIGPENDING`` reached);
* **delivered** -- how many times the receiving code ran for the signal: the
  Python handler's calls; ``sigtimedwait``'s returns; bytes read from the
  wakeup fd (CPython's C handler writes one per delivery it sees); the C
  handler's runs; ``sigwaitinfo``'s returns;
* **ratio** -- delivered / sent;
* **flushed** -- signals still pending when the receiver stopped looking,
  consumed by the clean-up (``sigtimedwait`` with the signal blocked): never
  delivered, never left behind;
* **strays** -- deliveries that reached a handler the arm did not measure
  with (a ``sigtimedwait`` arm's safety handler, run because some thread of
  the process did not block the signal).

The run, for one arm and ``params.total_wakes`` probes::

    start the senders (processes: a fresh interpreter each, ready and waiting)
    set up the receiver (handler / waiting thread / wakeup fd; the C floor's own process)
    storm-free pass: the receiver's main thread runs its work loop for FREE_PASS_S
    storm: a coordinator thread lets the senders go, and collects their counts;
           the main thread runs the same work loop until they are done
    drain: deliveries are awaited until none came for QUIET_S (at most timeout_s)
    tear down (flush, restore), reap every sender

Bounds: each sender sends ``SENDS_PER_PROBE`` (open loop:
``SENDS_PER_PROBE_OPEN``) signals per probe, at most ``MAX_SENDS_PER_SENDER``,
and stops after ``STORM_BOUND_S`` whatever it has sent; every read from a
sender or the C receiver has a deadline; senders still alive at the end are
killed, and every one is reaped.  Handlers, the mask and the wakeup fd are
restored by the receivers (:mod:`wakelab.core.families.storms`).

The samples.  Sender 0 makes ``total_wakes`` of its sends *probes*, evenly
spread over its sends: ``t0`` is its ``perf_counter_ns()`` immediately
before the probe's ``os.kill`` (open loop: the send's scheduled instant, as
the other drivers' open loops take it), and ``t1`` is the first delivery
that began at or after the probe's kill was issued (``t0`` plus any planted
delay): the handler's first statement, the wait's or the read's return, the
C handler's clock reading.  Under a storm a delivery may answer another
sender's signal: the figure is how long after a send the receiving code next
runs, which is what a program that reacts to a signal gets.  A probe whose
kill was refused, or after which no delivery came, is a lost wake.  There is
no settle: the receiver never waits for one probe at a time.

Lost work.  The receiver's main thread runs a pure-Python loop (the C
receiver: a C loop) in chunks, once storm-free and once during the storm;
``info`` keeps both rates and ``work_lost = 1 - storm / free``: the storm's
whole cost to the receiver's main thread, handling the signal and the
senders' share of the CPUs alike.

The planted delays (self-tests) are the sender's: ``planted_delay_us``
between a probe's ``t0`` and its kill (it must show), ``planted_after_us``
right after it (it must not).
"""

from __future__ import annotations

import bisect
import dataclasses
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
import types
from typing import Callable, ContextManager, Dict, List, NamedTuple, Optional, Sequence, Tuple

from wakelab.core.drivers import HarnessError
from wakelab.core.model import LatencyCollector, MeasureParams, RawLatency, now_ns

#: This driver honours ``params.mode == "open"``: each sender sends one signal every ``interval_us``.
OPEN_LOOP = True

#: Signals each sender sends per probe: at full rate, and on a schedule (open loop).
SENDS_PER_PROBE = 100
SENDS_PER_PROBE_OPEN = 10
#: No sender sends more than this many signals in one storm.
MAX_SENDS_PER_SENDER = 200_000
#: A sender stops after this long, whatever it has sent.
STORM_BOUND_S = 30.0
#: The storm-free pass of the receiver's work loop.
FREE_PASS_S = 0.1
#: The drain ends once no delivery came for this long (at most params.timeout_s).
QUIET_S = 0.05
#: One chunk of the receiver's work loop: iterations of an empty Python loop.
WORK_CHUNK = 2000
#: Slack on top of a storm's bound for every wait on a sender or the C receiver.
SLACK_S = 10.0

# The senders' loop: one source, exec'd here for sender threads and run by ``python -S -c`` for
# sender processes (which import nothing of wakelab).  ``t0`` is taken here, immediately before
# the probe's kill.  Planted waits sleep and spin their last 200 µs, as drivers.planted_wait does.
SENDER_SOURCE = r'''
import errno as _errno


def planted_wait(deadline_ns, clock, sleep):
    remaining = deadline_ns - clock() - 200000
    if remaining > 0:
        sleep(remaining / 1e9)
    while clock() < deadline_ns:
        pass


def send_storm(pid, signum, sends, every, probes, interval_ns, delay_ns, after_ns, bound_ns, clock, kill, sleep):
    """Send ``sends`` signals to ``pid``; every ``every``-th (from the first) of the first ``probes``
    segments is a probe whose t0 is kept.  Returns {sent, refused, t0, due, error}."""
    refused = 0
    attempts = 0
    t0s = []
    dues = []
    error = None
    start = clock()
    stop_at = start + bound_ns
    index = 0
    segment = 0
    try:
        while index < sends:
            if clock() > stop_at:
                break
            if segment < probes:
                if interval_ns:
                    due = start + index * interval_ns
                    remaining = due - clock()
                    if remaining > 0:
                        sleep(remaining / 1e9)
                    dues.append(due)
                if delay_ns or after_ns:
                    t0 = clock()
                    if delay_ns:
                        planted_wait(t0 + delay_ns, clock, sleep)
                    try:
                        kill(pid, signum)
                    except OSError as exc:
                        if exc.errno != _errno.EAGAIN:
                            raise
                        refused += 1
                        t0 = -1
                    if after_ns:
                        planted_wait(clock() + after_ns, clock, sleep)
                else:
                    t0 = clock()
                    try:
                        kill(pid, signum)
                    except OSError as exc:
                        if exc.errno != _errno.EAGAIN:
                            raise
                        refused += 1
                        t0 = -1
                t0s.append(t0)
                attempts += 1
                index += 1
                plain = every - 1
            else:
                plain = every
            plain = min(plain, sends - index)
            if interval_ns:
                for _ in range(plain):
                    due = start + index * interval_ns
                    remaining = due - clock()
                    if remaining > 0:
                        sleep(remaining / 1e9)
                    try:
                        kill(pid, signum)
                    except OSError as exc:
                        if exc.errno != _errno.EAGAIN:
                            raise
                        refused += 1
                    attempts += 1
                    index += 1
            else:
                for _ in range(plain):
                    try:
                        kill(pid, signum)
                    except OSError as exc:
                        if exc.errno != _errno.EAGAIN:
                            raise
                        refused += 1
                attempts += plain
                index += plain
            segment += 1
    except OSError as exc:
        error = "os.kill failed: %s" % (exc.strerror or exc)
    return {"sent": attempts - refused, "refused": refused, "t0": t0s, "due": dues, "error": error,
            "started_ns": start, "ended_ns": clock()}
'''

_SENDER_MAIN = SENDER_SOURCE + r'''

def _main():
    import json
    import os
    import sys
    import time

    orders = json.loads(sys.argv[1])
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    if sys.stdin.readline() != "go\n":
        return 3
    result = send_storm(clock=time.perf_counter_ns, kill=os.kill, sleep=time.sleep, **orders)
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()
    return 0


raise SystemExit(_main())
'''

_sender = types.ModuleType("wakelab_storm_sender")
exec(compile(SENDER_SOURCE, "<wakelab storm sender>", "exec"), _sender.__dict__)
#: The senders' loop (see SENDER_SOURCE); its answer is a JSON object with a :class:`SenderResult`'s fields.
send_storm = _sender.send_storm

PROCESS = "process"
THREAD = "thread"


@dataclasses.dataclass(frozen=True)
class StormPlan:
    """Who sends what: ``senders`` processes or threads (``sender_kind``), ``signum``."""

    signum: int
    senders: int = 4
    sender_kind: str = PROCESS


class SenderArgs(NamedTuple):
    """One sender's orders, named as :func:`send_storm`'s parameters (a sender process gets them as a JSON object)."""

    pid: int
    signum: int
    sends: int
    every: int
    probes: int
    interval_ns: int
    delay_ns: int
    after_ns: int
    bound_ns: int


class SenderResult(NamedTuple):
    """One sender's counts: its probes' ``t0`` (-1: refused) and, in open loop, their scheduled
    instants (``due``); ``error`` when it could not go on."""

    sent: int = 0
    refused: int = 0
    t0: Sequence[int] = ()
    due: Sequence[int] = ()
    error: Optional[str] = None
    started_ns: int = 0
    ended_ns: int = 0


@dataclasses.dataclass
class Receiver:
    """A receiver as a family module sets it up for the driver (Python receivers).

    ``delivered()`` counts deliveries so far; ``stamps()`` their ``t1`` in order (at most one a
    delivery: a wakeup-fd read that brought several bytes is one stamp); ``stop()`` ends the
    receiver's own thread, if any, after the drain; ``info()`` adds its facts (strays, flushed
    ...) once it is torn down.  ``main_blocks`` is True when the signal is blocked in the main
    thread for the whole arm (a ``sigtimedwait`` receiver): a planted hold would change nothing.
    """

    delivered: Callable[[], int]
    stamps: Callable[[], Sequence[int]]
    stop: Callable[[], None]
    info: Callable[[], Dict[str, object]]
    main_blocks: bool = False


def sends_per_sender(params: MeasureParams) -> int:
    """How many signals each sender sends for ``params`` (see the module docstring's bounds)."""
    per_probe = SENDS_PER_PROBE_OPEN if params.mode == "open" else SENDS_PER_PROBE
    total = params.total_wakes
    return max(total, min(total * per_probe, MAX_SENDS_PER_SENDER))


def _sender_args(params: MeasureParams, plan: StormPlan, pid: int, index: int) -> SenderArgs:
    count = sends_per_sender(params)
    total = params.total_wakes
    first = index == 0  # the sender whose sends include the probes
    return SenderArgs(pid=pid, signum=int(plan.signum), sends=count, every=max(1, count // max(1, total)),
                      probes=total if first else 0, interval_ns=params.interval_us * 1000 if params.mode == "open" else 0,
                      delay_ns=params.planted_delay_us * 1000 if first else 0, after_ns=params.planted_after_us * 1000 if first else 0,
                      bound_ns=int(STORM_BOUND_S * 1e9))


def _bound_s(params: MeasureParams) -> float:
    """How long anything of one storm may take before the driver gives up on it."""
    return STORM_BOUND_S + params.timeout_s + SLACK_S


class _Line:
    """Lines from a pipe, each read with a deadline (never a hang)."""

    def __init__(self, fd: int, what: str) -> None:
        self.fd = fd
        self.what = what
        self.buffer = b""

    def read(self, deadline: float) -> str:
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise HarnessError("%s said nothing in time" % self.what)
            ready, _, _ = select.select([self.fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                raise HarnessError("%s ended without a word" % self.what)
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line.decode("utf-8", "replace")


def _block_here(signum: int) -> None:
    """Block the storm's signal in the calling thread: the driver's own threads never take it."""
    signal.pthread_sigmask(signal.SIG_BLOCK, [signum])


class _Senders:
    """The storm's senders, started and ready; :meth:`go` lets them send, :meth:`results` collects
    their counts; :meth:`close` kills what is left and reaps every one (always)."""

    def __init__(self, params: MeasureParams, plan: StormPlan, pid: int) -> None:
        self.params = params
        self.plan = plan
        self.procs: List["subprocess.Popen[bytes]"] = []
        self.lines: List[_Line] = []
        self.threads: List[threading.Thread] = []
        self.go_event = threading.Event()
        self.thread_results: List[Optional[SenderResult]] = [None] * plan.senders
        self.deadline = time.monotonic() + _bound_s(params)
        try:
            self._start(pid)
        except BaseException:  # the senders started so far are killed and reaped, never left running
            for proc in self.procs:
                proc.kill()
            self.close()
            raise

    def _start(self, pid: int) -> None:
        params, plan = self.params, self.plan
        if plan.sender_kind == PROCESS:
            for index in range(plan.senders):
                args = json.dumps(_sender_args(params, plan, pid, index)._asdict())
                proc = subprocess.Popen([sys.executable, "-S", "-c", _SENDER_MAIN, args], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, close_fds=True)
                self.procs.append(proc)
                assert proc.stdout is not None
                self.lines.append(_Line(proc.stdout.fileno(), "storm sender %d" % index))
            ready_by = time.monotonic() + 60.0
            for line in self.lines:
                if line.read(ready_by) != "ready":
                    raise HarnessError("%s did not start" % line.what)
        else:
            for index in range(plan.senders):
                thread = threading.Thread(target=self._send_from_thread, args=(_sender_args(params, plan, pid, index), index),
                                          name="wakelab-storm-sender-%d" % index, daemon=True)
                thread.start()
                self.threads.append(thread)

    def _send_from_thread(self, args: SenderArgs, index: int) -> None:
        _block_here(self.plan.signum)
        if not self.go_event.wait(_bound_s(self.params)):
            return
        try:
            self.thread_results[index] = SenderResult(**send_storm(clock=now_ns, kill=os.kill, sleep=time.sleep, **args._asdict()))
        except BaseException as exc:  # surfaced by results()
            self.thread_results[index] = SenderResult(error="sender thread failed: %r" % (exc,))

    def go(self) -> None:
        self.deadline = time.monotonic() + _bound_s(self.params)
        if self.procs:
            for proc in self.procs:
                assert proc.stdin is not None
                proc.stdin.write(b"go\n")
                proc.stdin.flush()
        else:
            self.go_event.set()

    def results(self) -> List[SenderResult]:
        """Each sender's counts, once it is done (a :class:`HarnessError` past the deadline)."""
        out: List[SenderResult] = []
        if self.procs:
            for line in self.lines:
                text = line.read(self.deadline)
                try:
                    out.append(SenderResult(**json.loads(text)))
                except (ValueError, TypeError):
                    raise HarnessError("%s answered %r" % (line.what, text[:200])) from None
            return out
        for index, thread in enumerate(self.threads):
            thread.join(max(0.0, self.deadline - time.monotonic()))
            result = self.thread_results[index]
            if thread.is_alive() or result is None:
                raise HarnessError("storm sender thread %d did not finish" % index)
            out.append(result)
        return out

    def close(self) -> None:
        self.go_event.set()  # a thread never let go returns at once: its go wait ends
        for proc in self.procs:
            if proc.poll() is None:
                try:
                    proc.wait(timeout=max(0.0, min(self.deadline - time.monotonic(), 5.0)))
                except subprocess.TimeoutExpired:
                    proc.kill()
        for proc in self.procs:
            proc.wait()
            _close_pipes(proc)
        for thread in self.threads:
            thread.join(_bound_s(self.params))


def _close_pipes(proc: "subprocess.Popen[bytes]") -> None:
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            try:
                stream.close()
            except OSError:  # a write still buffered for a process that is gone
                pass


def _work(until: Callable[[], bool], chunk: int = WORK_CHUNK) -> Tuple[int, int]:
    """The receiver's main-thread work: chunks of an empty loop until ``until()``; ``(chunks, ns)``."""
    span = range(chunk)
    chunks = 0
    start = now_ns()
    while not until():
        for _ in span:
            pass
        chunks += 1
    return chunks, now_ns() - start


def probe_samples(params: MeasureParams, probe: SenderResult, stamps: Sequence[int]) -> RawLatency:
    """The probes' latencies: each from its ``t0`` (open loop: its scheduled instant) to the first
    delivery at or after its kill was issued (``t0`` plus any planted delay); a refused probe, or one
    no delivery followed, is lost.  ``stamps`` must be in time order."""
    collector = LatencyCollector(params)
    t0s, dues = probe.t0, probe.due
    delay_ns = params.planted_delay_us * 1000
    ordered = list(stamps)
    total = params.total_wakes
    for index in range(total):
        t0 = t0s[index] if index < len(t0s) else -1
        if t0 < 0:
            collector.add(None)
            continue
        at = bisect.bisect_left(ordered, t0 + delay_ns)
        if at == len(ordered):
            collector.add(None)
            continue
        origin = dues[index] if params.mode == "open" and index < len(dues) else t0
        collector.add(ordered[at] - origin)
    return collector.result()


def _storm_info(plan: StormPlan, results: Sequence[SenderResult], delivered: int, free: Tuple[int, int],
                storm: Tuple[int, int], params: MeasureParams) -> Dict[str, object]:
    """The storm's facts for the raw record's ``info`` (:class:`HarnessError` if a sender failed)."""
    errors = [r.error for r in results if r.error]
    if errors:
        raise HarnessError("a storm sender failed: %s" % errors[0])
    free_rate = free[0] / (free[1] / 1e9) if free[1] > 0 else None
    storm_rate = storm[0] / (storm[1] / 1e9) if storm[1] > 0 else None
    sent = sum(r.sent for r in results)
    storm_ns = max(r.ended_ns for r in results) - min(r.started_ns for r in results)
    info: Dict[str, object] = {
        "signal": signal_name(plan.signum),
        "signal_number": int(plan.signum),
        "senders": plan.senders,
        "sender_kind": plan.sender_kind,
        "sends_per_sender": sends_per_sender(params),
        "sent": sent,
        "refused": sum(r.refused for r in results),
        "delivered": delivered,
        "delivery_ratio": round(delivered / sent, 6) if sent else None,
        "storm_s": round(storm_ns / 1e9, 6),
        "work_free_per_s": round(free_rate, 1) if free_rate is not None else None,
        "work_storm_per_s": round(storm_rate, 1) if storm_rate is not None else None,
        "work_lost": round(1.0 - storm_rate / free_rate, 6) if free_rate and storm_rate is not None else None,
        "mode": params.mode,
    }
    if params.mode == "open":
        info["interval_us"] = params.interval_us
    return info


def signal_name(signum: int) -> str:
    """``SIGUSR1``, ``SIGRTMIN``, ``SIGRTMIN+3``."""
    rtmin = getattr(signal, "SIGRTMIN", None)
    if rtmin is not None and rtmin <= signum <= getattr(signal, "SIGRTMAX", rtmin):
        return "SIGRTMIN" if signum == rtmin else "SIGRTMIN+%d" % (signum - rtmin)
    try:
        return signal.Signals(signum).name
    except ValueError:
        return "signal %d" % signum


def measure(params: MeasureParams, plan: StormPlan, open_receiver: Callable[[int], ContextManager[Receiver]],
            hold_s: float = 0.0) -> RawLatency:
    """One storm at this process's main thread, received by ``open_receiver(cap)``'s receiver
    (``cap``: the most deliveries there can be, one per send).

    Call from the main thread.  ``hold_s`` (a test's planted coalescing): the main thread blocks
    the signal for the storm's first ``hold_s`` seconds, so that sends in that time can only merge
    (standard signals) or queue (real-time ones).
    """
    signum = plan.signum
    done = threading.Event()
    collected: List[List[SenderResult]] = []  # the coordinator's: the senders' results, or what it raised
    failed: List[BaseException] = []
    hard_deadline = time.monotonic() + _bound_s(params)
    with open_receiver(sends_per_sender(params) * plan.senders) as receiver:
        # Inside the receiver: every sender is done (or killed) and reaped before the receiver
        # restores the handler, so that no late signal of ours meets the default action.
        senders = _Senders(params, plan, os.getpid())
        coordinator: Optional[threading.Thread] = None
        try:
            free = _work(_after(FREE_PASS_S))
            held = hold_s > 0 and not receiver.main_blocks
            if held:
                signal.pthread_sigmask(signal.SIG_BLOCK, [signum])

            def coordinate() -> None:
                try:
                    _block_here(signum)
                    senders.go()
                    collected.append(senders.results())
                except BaseException as exc:
                    failed.append(exc)
                finally:
                    done.set()

            def over() -> bool:
                return done.is_set() or time.monotonic() > hard_deadline

            coordinator = threading.Thread(target=coordinate, name="wakelab-storm-coordinator", daemon=True)
            coordinator.start()
            if held:
                release_at = now_ns() + int(hold_s * 1e9)
                first = _work(lambda: now_ns() >= release_at or over())
                signal.pthread_sigmask(signal.SIG_UNBLOCK, [signum])
                rest = _work(over)
                storm = (first[0] + rest[0], first[1] + rest[1])
            else:
                storm = _work(over)
            coordinator.join(max(0.0, hard_deadline - time.monotonic()))
            if failed:
                raise HarnessError("the storm failed: %s" % (failed[0],))
            if not collected:
                raise HarnessError("the storm's senders did not finish within %.0f s" % _bound_s(params))
            _drain(receiver.delivered, params.timeout_s)
        finally:
            if hold_s > 0 and not receiver.main_blocks:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, [signum])
            senders.close()
            if coordinator is not None:
                coordinator.join(_bound_s(params))
            receiver.stop()
    delivered = receiver.delivered()
    stamps = receiver.stamps()
    info = _storm_info(plan, collected[0], delivered, free, storm, params)
    raw = probe_samples(params, collected[0][0], stamps)
    info.update(receiver.info())
    if hold_s > 0:
        info["planted_hold_s"] = hold_s
    return dataclasses.replace(raw, info=info)


def _after(seconds: float) -> Callable[[], bool]:
    end = now_ns() + int(seconds * 1e9)
    return lambda: now_ns() >= end


def _drain(delivered: Callable[[], int], timeout_s: float) -> None:
    """Wait until no delivery came for :data:`QUIET_S`, at most ``timeout_s`` (signals are handled
    meanwhile: the sleep is interrupted by each, and resumed)."""
    deadline = time.monotonic() + timeout_s
    seen = delivered()
    changed = time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(QUIET_S / 10)
        now = delivered()
        if now != seen:
            seen, changed = now, time.monotonic()
        elif time.monotonic() - changed >= QUIET_S:
            return


# -- the C floor's receivers ---------------------------------------------------------------------

C_HANDLER = "storm-handler"
C_SIGWAIT = "storm-sigwait"


def measure_c(params: MeasureParams, plan: StormPlan, experiment: str) -> RawLatency:
    """One storm at the C floor's receiver ``experiment`` (``storm-handler`` or ``storm-sigwait``),
    in a process of its own (see the storm section of ``wakelab_floor.c``)."""
    from wakelab.core.drivers import floor

    cap = sends_per_sender(params) * plan.senders
    argv = floor.receiver_argv(experiment, params, {
        "signo": int(plan.signum), "cap": cap, "free_ms": int(FREE_PASS_S * 1000), "quiet_ms": int(QUIET_S * 1000),
    })
    deadline = time.monotonic() + _bound_s(params) + 60.0
    receiver = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, close_fds=True)
    senders: Optional[_Senders] = None
    try:
        assert receiver.stdin is not None and receiver.stdout is not None
        out = _Line(receiver.stdout.fileno(), "the C storm receiver")
        head = out.read(deadline).split()
        if head[:3] != ["wakelab-storm", "1", "ready"] or len(head) != 4:
            raise HarnessError("the C storm receiver said %r" % " ".join(head))
        pid = int(head[3])
        senders = _Senders(params, plan, pid)

        def say(word: str) -> None:
            assert receiver.stdin is not None
            receiver.stdin.write(word.encode("ascii") + b"\n")
            receiver.stdin.flush()

        say("free")
        free_line = out.read(deadline).split()
        say("storm")
        if out.read(deadline) != "storming":
            raise HarnessError("the C storm receiver did not start its storm")
        senders.go()
        results = senders.results()
        say("stop")
        tail = out.read(deadline).split()
        if len(free_line) != 3 or free_line[0] != "free" or len(tail) != 6 or tail[0] != "storm":
            raise HarnessError("the C storm receiver answered %r and %r" % (free_line, tail))
        recorded = int(tail[5])
        stamps = [int(out.read(deadline)) for _ in range(recorded)]
        if out.read(deadline) != "end storm":
            raise HarnessError("the C storm receiver's output did not end")
        receiver.stdin.close()
        if receiver.wait(max(1.0, deadline - time.monotonic())) != 0:
            raise HarnessError("the C storm receiver exited with status %s" % receiver.returncode)
    finally:
        if senders is not None:
            senders.close()
        if receiver.poll() is None:
            receiver.kill()
        receiver.wait()
        errors = receiver.stderr.read().decode("utf-8", "replace").strip() if receiver.stderr is not None else ""
        _close_pipes(receiver)
        if receiver.returncode not in (0, None) and errors:
            raise HarnessError("the C storm receiver failed: %s" % errors.splitlines()[0])
    info = _storm_info(plan, results, int(tail[3]), (int(free_line[1]), int(free_line[2])), (int(tail[1]), int(tail[2])), params)
    raw = probe_samples(params, results[0], stamps)
    info["flushed"] = int(tail[4])
    info.update(floor.floor_binary().info())
    info.update(floor.scheduling_info())
    return dataclasses.replace(raw, info=info)

