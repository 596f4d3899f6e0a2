"""Running an arm in fresh worker processes and pooling what they return (stdlib only).

One worker is not evidence: whole processes shift level (allocation, where
the scheduler put them, what the other vCPU was doing), so each arm is
measured in several workers one after another, the counted wakes are split
between them, and the pooled samples are reported with the spread between
workers.  A worker that crashes, hangs past its deadline, replies with
garbage or with a record short of what it was asked for (:func:`check_raw`)
makes the arm fail with that reason; its whole process group is killed and
reaped, so nothing is left behind.

Nothing is left behind when this process dies either, whatever kills it:
each measuring process is told this process's pid (``--parent-pid``) and
asks the kernel for a signal when its parent dies, and the template watches
its stdin, a pipe only this process writes (see "Dying with the parent" in
:mod:`wakelab.harness.worker`).  The kernel signals when the *thread* that
started the process ends: start a :class:`WorkerPool` from a thread that
outlives its use (the runner uses its main thread).

A worker that stalls is found within a few seconds plus its longest single
wait, whatever ``n`` is: the template watches it and fails it (see
"Liveness" in :mod:`wakelab.harness.worker`), and this process watches the
template's heartbeat (:data:`TEMPLATE_SILENCE_S`).  Every read from a child
process is bounded (:func:`run_bounded`, :func:`reply_cap_bytes`,
:data:`STDERR_CAP_BYTES`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from typing import IO, Callable, Dict, List, Mapping, Optional, Sequence

import wakelab
from wakelab.core.model import IntSeries, MeasureParams, Raw, RawLatency, RawRate, int64s, raw_from_dict
from wakelab.harness.conditions import Conditions
from wakelab.harness.worker import HEARTBEAT, Request, reply_cap_bytes

MIN_PYTHON = (3, 9)
# Seconds a worker may take beyond the time its wakes can take at worst (a backstop: the
# heartbeat finds a stalled worker long before).
WORKER_GRACE_S = 60.0
# Seconds the template may be silent while a worker measures (it beats every HEARTBEAT_S),
# and before its first byte for a request (a fresh template imports every measuring module).
TEMPLATE_SILENCE_S = 5.0
TEMPLATE_START_S = 60.0
# How long a template that closed its output gets to exit before it is killed.
DIED_WAIT_S = 5.0
# Bytes a worker template may write to its stderr (a temporary file), and that a probe or a
# one-request worker may write to stdout; what they write to stderr beyond its tail is dropped.
STDERR_CAP_BYTES = 16 << 20
PROBE_CAP_BYTES = 1 << 20
# Seconds an interpreter may take to say its version.
PROBE_TIMEOUT_S = 30.0


class WorkerError(RuntimeError):
    """A worker crashed, hung, or replied with something that is not a reply."""


class InterpreterError(ValueError):
    """An interpreter given with --python that cannot run the measuring code."""


class ArmUnavailable(RuntimeError):
    """The worker's interpreter cannot run this arm (the reason is the message)."""


class IncompleteReply(WorkerError):
    """A raw record that does not account for every wake or round that was asked for."""


def check_raw(raw: Raw, params: MeasureParams, kind: str) -> Optional[str]:
    """Why ``raw`` is not a full answer to ``params`` for an arm of ``kind``, or None.

    A latency record must hold ``params.n`` counted wakes, samples and lost
    together; a rate record ``params.rounds`` rounds of ``params.install_n``
    calls, each with its empty-loop baseline.  Anything short is not a
    measurement of what was asked (an arm that returned 2 of 200 wakes).
    """
    if kind == "rate":
        if not isinstance(raw, RawRate):
            return "returned a latency record for a rate arm"
        if len(raw.round_ns) != params.rounds:
            return "returned %d of %d counted rounds" % (len(raw.round_ns), params.rounds)
        if raw.n_per_round != params.install_n:
            return "returned rounds of %d calls, %d asked for" % (raw.n_per_round, params.install_n)
        if len(raw.baseline_round_ns) != len(raw.round_ns):
            return "returned %d empty-loop rounds for %d rounds" % (len(raw.baseline_round_ns), len(raw.round_ns))
        return None
    if not isinstance(raw, RawLatency):
        return "returned a rate record for a latency arm"
    taken = len(raw.samples_ns) + raw.lost
    if taken != params.n:
        return "returned %d of %d counted wakes (%d samples + %d lost)" % (taken, params.n, len(raw.samples_ns), raw.lost)
    if any(v < 0 for v in raw.samples_ns):
        return "returned %d negative samples (t1 before t0)" % sum(1 for v in raw.samples_ns if v < 0)
    return None


def package_parent() -> str:
    """The folder to put on PYTHONPATH so another interpreter imports this wakelab."""
    return os.path.dirname(os.path.dirname(os.path.abspath(wakelab.__file__)))


def worker_env(extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    """This process's environment for a worker: wakelab's folder first on PYTHONPATH, then ``extra``'s
    PYTHONPATH (an A/B side's folders), then the one inherited; ``extra``'s other variables set."""
    env = dict(os.environ)
    extra = dict(extra or {})
    path = [package_parent(), extra.pop("PYTHONPATH", ""), env.get("PYTHONPATH", "")]
    env.update(extra)
    env["PYTHONPATH"] = os.pathsep.join(p for p in path if p)
    return env


def split_counts(total: int, parts: int) -> List[int]:
    """``total`` spread over at most ``parts`` positive counts, as evenly as possible."""
    parts = max(1, min(parts, total))
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def worker_deadline_s(params: MeasureParams, kind: str = "latency") -> float:
    """How long one worker of an arm of ``kind`` may run in all before it is declared hung.

    A backstop for a worker that runs but never finishes; one that stops
    running is found by its heartbeat within seconds.
    """
    if kind == "rate":
        # A rate arm's call costs well under 100 µs even on a slow interpreter under load.
        return WORKER_GRACE_S + params.install_n * (params.rounds + params.warmup_rounds) * 2 * 100e-6
    per_wake = params.settle_max_s + params.timeout_s + (params.planted_delay_ns + params.planted_after_ns) / 1e9 + 0.01
    if params.mode == "open":
        per_wake += params.interval_us / 1e6
    return WORKER_GRACE_S + (params.warmup + params.n) * per_wake


def _kill_group(proc: "subprocess.Popen[bytes]") -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def _last_line(data: bytes) -> str:
    lines = [line for line in data[-65536:].decode("utf-8", "replace").splitlines() if line.strip()]
    return lines[-1].strip()[:500] if lines else ""


class ChildTimeout(WorkerError):
    """A child process that did not finish in time (its whole process group was killed)."""


class ChildOverflow(WorkerError):
    """A child process that wrote more than it may (its whole process group was killed)."""


def run_bounded(
    argv: Sequence[str],
    *,
    timeout_s: float,
    cap_bytes: int = PROBE_CAP_BYTES,
    input: bytes = b"",
    env: Optional[Dict[str, str]] = None,
) -> "subprocess.CompletedProcess[bytes]":
    """Run ``argv`` in its own session and return its status, stdout and the tail of its stderr.

    Every read is bounded: more than ``cap_bytes`` on stdout raises
    :class:`ChildOverflow`, stderr keeps its last ``cap_bytes``; not done
    within ``timeout_s`` (including what it started still holding its pipes)
    raises :class:`ChildTimeout`.  Either way, and always at the end, the whole
    process group is SIGKILLed and reaped: nothing it started is left behind.
    ``OSError`` when it cannot be started.
    """
    deadline = time.monotonic() + timeout_s
    with subprocess.Popen(
        list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
        start_new_session=True,
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        out, err = bytearray(), bytearray()
        try:
            try:
                proc.stdin.write(input)  # small (a request), and the pipe holds 64 KiB
                proc.stdin.close()
            except BrokenPipeError:
                pass
            streams = {proc.stdout.fileno(): out, proc.stderr.fileno(): err}
            exited_at: Optional[float] = None
            while streams:
                now = time.monotonic()
                if exited_at is None and proc.poll() is not None:
                    exited_at = now
                # Exited, but something it started holds its pipes: that is not waited for long.
                end = deadline if exited_at is None else min(deadline, exited_at + 1.0)
                if now >= end:
                    if exited_at is not None:
                        break
                    raise ChildTimeout("%s: no answer within %.0f s (killed with its process group)" % (argv[0], timeout_s))
                for fd in select.select(list(streams), [], [], min(end - now, 0.2))[0]:
                    chunk = os.read(fd, 1 << 16)
                    if not chunk:
                        del streams[fd]
                        continue
                    sink = streams[fd]
                    sink += chunk
                    if sink is out and len(out) > cap_bytes:
                        raise ChildOverflow("%s: wrote more than %d bytes (killed with its process group)" % (argv[0], cap_bytes))
                    if sink is err and len(err) > cap_bytes:
                        del err[: len(err) - cap_bytes]
            left = deadline - time.monotonic()
            try:
                proc.wait(max(left, 0.0))
            except subprocess.TimeoutExpired:
                raise ChildTimeout("%s: no answer within %.0f s (killed with its process group)" % (argv[0], timeout_s)) from None
        finally:
            _kill_group(proc)
    return subprocess.CompletedProcess(list(argv), proc.returncode, bytes(out), bytes(err))


def call_worker(python: str, request: Mapping[str, object], deadline_s: float, args: Sequence[str] = (),
                env: Optional[Dict[str, str]] = None) -> Reply:
    """Run one worker to completion and return its reply document (``env``: see :func:`worker_env`)."""
    # -S: no site-packages. The measuring process gets the standard library and
    # this package only, and starts several times faster.
    argv = [python, "-S", "-m", "wakelab.harness.worker", "--parent-pid", str(os.getpid()), *args]
    cap = reply_cap_bytes(_params_of(request)) if args != ["--probe"] else PROBE_CAP_BYTES
    try:
        done = run_bounded(argv, timeout_s=deadline_s, cap_bytes=cap, input=json.dumps(request).encode("utf-8"), env=worker_env(env))
    except ChildTimeout:
        raise WorkerError("worker hung: no reply within %.0f s (killed)" % deadline_s) from None
    except ChildOverflow:
        raise WorkerError("worker reply exceeds %d bytes (killed)" % cap) from None
    reply = _parse_reply(done.stdout)
    if reply is None:
        raise _ended(done.returncode, _last_line(done.stderr) or _last_line(done.stdout) or "no output")
    return reply


def _params_of(request: Mapping[str, object]) -> Dict[str, object]:
    """A request's measuring parameters (empty for a probe)."""
    params = request.get("params")
    return dict(params) if isinstance(params, Mapping) else {}


@dataclasses.dataclass(frozen=True)
class Reply:
    """A worker's reply (protocol: :mod:`wakelab.harness.worker`); ``raw`` is for :func:`raw_from_dict`."""

    ok: bool
    error: Optional[str] = None
    unavailable: Optional[str] = None
    raw: object = None
    interpreter: Mapping[str, object] = dataclasses.field(default_factory=dict)
    applied: Mapping[str, object] = dataclasses.field(default_factory=dict)
    timer: Mapping[str, object] = dataclasses.field(default_factory=dict)
    pid: int = 0


def _parse_reply(data: bytes) -> Optional[Reply]:
    """The reply in ``data``, or None when it is not one."""
    try:
        doc = json.loads(data.decode("utf-8"))
    except ValueError:
        return None
    if not isinstance(doc, dict) or "ok" not in doc:
        return None
    error, unavailable = (None if doc.get(key) is None else str(doc[key]) for key in ("error", "unavailable"))
    interpreter, applied, timer = (dict(doc[key]) if isinstance(doc.get(key), dict) else {} for key in ("interpreter", "applied", "timer"))
    pid = doc.get("pid")
    return Reply(bool(doc["ok"]), error, unavailable, doc.get("raw"), interpreter, applied, timer, pid if type(pid) is int else 0)


def _ended(returncode: Optional[int], detail: str) -> WorkerError:
    """How a worker process that gave no valid reply ended."""
    if returncode is None:
        return WorkerError("worker closed its output without a reply and did not exit (killed; %s)" % detail)
    if returncode < 0:
        return WorkerError("worker killed by signal %d (%s)" % (-returncode, detail))
    return WorkerError("worker exited with status %d without a valid reply (%s)" % (returncode, detail))


class WorkerPool:
    """A worker template process (``worker --serve``) on one interpreter, started on first use.

    :meth:`call` sends one request and waits, up to a deadline, for the reply
    of the fresh worker the template forks for it.  A template that dies, hangs
    or answers garbage is killed with its whole process group (workers and
    their children included) and :class:`WorkerError` says what happened; the
    next call starts a new one.  Always :meth:`close` it (or use ``with``).
    """

    def __init__(self, python: Optional[str] = None, env: Optional[Dict[str, str]] = None) -> None:
        self.python = python or sys.executable
        self.env = dict(env or {})  # added to the workers' environment (see worker_env)
        self._proc: Optional["subprocess.Popen[bytes]"] = None
        self._stderr: Optional[IO[bytes]] = None

    def __enter__(self) -> "WorkerPool":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _start(self) -> "subprocess.Popen[bytes]":
        self._stderr = tempfile.TemporaryFile()
        self._proc = subprocess.Popen(
            # -S: no site-packages. The measuring processes get the standard library and
            # this package only, and start several times faster.
            [self.python, "-S", "-m", "wakelab.harness.worker", "--parent-pid", str(os.getpid()), "--serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=worker_env(self.env),
            start_new_session=True,  # its own process group: a hung worker is killed with its children
        )
        return self._proc

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        size = self._stderr.seek(0, os.SEEK_END)
        self._stderr.seek(max(0, size - 4096))
        return _last_line(self._stderr.read(4096))

    def _died(self, proc: "subprocess.Popen[bytes]", received: bytes) -> WorkerError:
        try:
            returncode: Optional[int] = proc.wait(DIED_WAIT_S)
        except subprocess.TimeoutExpired:
            returncode = None  # closed its output but did not exit: killed below
        received += self._drain_stdout(proc)
        if received.strip():
            self.kill()
            return WorkerError("worker replied with something that is not a reply (%s)" % _last_line(received))
        detail = self._stderr_tail() or "no output"
        self.kill()
        return _ended(returncode, detail)

    @staticmethod
    def _drain_stdout(proc: "subprocess.Popen[bytes]", wait_s: float = 1.0) -> bytes:
        """What an exited template left on its stdout (bounded: its children may hold the pipe)."""
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        data = bytearray()
        deadline = time.monotonic() + wait_s
        while len(data) < 65536:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                break
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            data += chunk
        return bytes(data)

    def call(self, request: Mapping[str, object], deadline_s: float) -> Reply:
        """Send ``request`` to a fresh worker and return its reply document."""
        proc = self._proc if self._proc is not None and self._proc.poll() is None else self._start()
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(json.dumps(request).encode("utf-8") + b"\n")
            proc.stdin.flush()
        except BrokenPipeError:
            # The template stopped reading; it may still be running (and writing). What it
            # sends, or its end of output, says what happened: the bounded read below decides.
            pass
        fd = proc.stdout.fileno()
        received = bytearray()
        cap = reply_cap_bytes(_params_of(request))
        started = time.monotonic()
        deadline = started + deadline_s
        heard: Optional[float] = None  # when the template last wrote anything for this request
        try:
            while not received.endswith(b"\n"):
                now = time.monotonic()
                quiet_until = started + TEMPLATE_START_S if heard is None else heard + TEMPLATE_SILENCE_S
                if now >= deadline:
                    self.kill()
                    raise WorkerError("worker hung: no reply within %.0f s (killed)" % deadline_s)
                if now >= quiet_until:
                    self.kill()
                    raise WorkerError(
                        "worker stalled: its template sent no heartbeat for %.0f s (killed)"
                        % (now - (started if heard is None else heard))
                    )
                if not select.select([fd], [], [], min(deadline, quiet_until) - now)[0]:
                    continue
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    raise self._died(proc, bytes(received))
                heard = time.monotonic()
                received += chunk.lstrip(HEARTBEAT) if not received else chunk
                if len(received) > cap:
                    self.kill()
                    raise WorkerError("worker reply exceeds %d bytes (killed)" % cap)
                if self._stderr is not None and os.fstat(self._stderr.fileno()).st_size > STDERR_CAP_BYTES:
                    self.kill()
                    raise WorkerError("worker wrote more than %d bytes to stderr (killed)" % STDERR_CAP_BYTES)
        except BaseException:
            if self._proc is proc:
                self.kill()  # Ctrl-C or any failure: take the template, workers and children down
            raise
        reply = _parse_reply(bytes(received))
        if reply is None:
            self.kill()
            raise WorkerError("worker replied with something that is not a reply (%s)" % _last_line(bytes(received)))
        return reply

    def kill(self) -> None:
        """Kill the template's whole process group and reap it."""
        proc, self._proc = self._proc, None
        if proc is not None:
            _kill_group(proc)
            for stream in (proc.stdin, proc.stdout):
                if stream is not None:
                    try:
                        stream.close()
                    except OSError:
                        pass  # a request still buffered for a template that is gone: the pipe is broken
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def close(self) -> None:
        """Let the template exit (end of input), or kill it if it does not."""
        proc = self._proc
        if proc is not None and proc.stdin is not None:
            try:
                proc.stdin.close()
                proc.wait(10.0)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.kill()


@dataclasses.dataclass(frozen=True)
class Probe:
    """What a probe of an interpreter found: its facts (summary.json's ``interpreter``) and its
    timer's calibration (``timer``), as its worker reported them."""

    interpreter: Dict[str, object]
    timer: Dict[str, object]


def probe_interpreter(python: str, env: Optional[Dict[str, str]] = None) -> Probe:
    """The :class:`Probe` of ``python`` (its workers' ``env`` added: see :func:`worker_env`);
    :class:`InterpreterError` if it cannot measure."""
    if not (os.path.isfile(python) and os.access(python, os.X_OK)):
        raise InterpreterError("interpreter %s does not exist or is not executable" % python)
    try:
        done = run_bounded([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], timeout_s=PROBE_TIMEOUT_S)
        if done.returncode != 0:
            raise ValueError(done.returncode)
        major, minor = (int(x) for x in done.stdout.decode().strip().split("."))
    except (OSError, WorkerError, ValueError):
        raise InterpreterError("%s does not run as a Python interpreter" % python) from None
    if (major, minor) < MIN_PYTHON:
        raise InterpreterError(
            "%s is Python %d.%d; the measuring code needs %d.%d or newer" % ((python, major, minor) + MIN_PYTHON)
        )
    try:
        reply = call_worker(python, {}, 120.0, args=["--probe"], env=env)
    except WorkerError as exc:
        raise InterpreterError("%s cannot run wakelab's measuring code: %s" % (python, exc)) from None
    if not reply.ok or not reply.interpreter:
        why = reply.error or reply.unavailable or "its probe answered without the interpreter's identity"
        raise InterpreterError("%s cannot run wakelab's measuring code: %s" % (python, why))
    return Probe(dict(reply.interpreter), dict(reply.timer))


@dataclasses.dataclass(frozen=True)
class WorkerResult:
    """What one worker measured."""

    raw: Raw
    interpreter: Mapping[str, object]
    applied: Mapping[str, object]
    pid: int


def run_workers(
    arm_name: str,
    params: MeasureParams,
    conditions: Conditions,
    *,
    workers: int,
    python: Optional[str] = None,
    on_worker: Optional[Callable[[int, int], None]] = None,
    pool: Optional[WorkerPool] = None,
    stamps: bool = False,
    origin: Optional[Mapping[str, object]] = None,
    frames: bool = False,
) -> List[WorkerResult]:
    """Measure ``arm_name`` in up to ``workers`` fresh processes, one after another.

    Latency arms split ``params.n`` between the workers (each also takes its
    own warm-up wakes); rate arms split ``params.rounds``.  Raises
    :class:`WorkerError` when any worker fails.  ``pool`` is the template to
    fork workers from (one is started, and closed, for this call if omitted).
    ``stamps`` asks the workers to keep each wake's ``t0`` in the raw record's
    ``info["wake_t0_ns"]`` (a traced run: :data:`wakelab.core.drivers.RECORD_T0`).  ``origin``: where
    a user-defined arm comes from for these workers (an A/B side's own arm file), instead of the
    registry's.  ``frames`` asks them to publish their Python frames to perf while they measure
    (:mod:`wakelab.harness.frames`).
    """
    if pool is None:
        with WorkerPool(python) as own:
            return run_workers(arm_name, params, conditions, workers=workers, on_worker=on_worker, pool=own, stamps=stamps,
                               origin=origin, frames=frames)
    from wakelab.core.registry import get_arm, user_arm_origin

    arm = get_arm(arm_name)
    loaded_from = user_arm_origin(arm_name)  # a user-defined arm: the worker loads its file first (unless given its own)
    if origin is None and loaded_from is not None:
        origin = loaded_from.to_dict()
    kind_is_rate = arm.kind == "rate"
    counts = split_counts(params.rounds if kind_is_rate else params.n, workers)
    results: List[WorkerResult] = []
    for index, count in enumerate(counts):
        worker_params = dataclasses.replace(params, rounds=count) if kind_is_rate else dataclasses.replace(params, n=count)
        # Each worker draws its settles from a stream of its own: the k-th from params' stream + k.
        worker_params = dataclasses.replace(worker_params, settle_stream=params.settle_stream + index)
        request = Request(arm_name, arm.family, worker_params.to_dict(), conditions.to_dict(),
                          None if origin is None else dict(origin), stamps, frames)
        reply = pool.call(request.to_dict(), worker_deadline_s(worker_params, arm.kind))
        if reply.unavailable:
            raise ArmUnavailable(reply.unavailable)
        if not reply.ok:
            raise WorkerError("worker %d of %d: %s" % (index + 1, len(counts), reply.error))
        try:
            raw = raw_from_dict(reply.raw)
        except ValueError as exc:
            raise WorkerError("worker %d of %d replied with a malformed record: %s" % (index + 1, len(counts), exc)) from None
        problem = check_raw(raw, worker_params, arm.kind)
        if problem is not None:
            raise IncompleteReply("worker %d of %d %s" % (index + 1, len(counts), problem))
        results.append(WorkerResult(raw=raw, interpreter=reply.interpreter, applied=reply.applied, pid=reply.pid))
        if on_worker is not None:
            on_worker(index, len(counts))
    return results


def pool_raws(raws: Sequence[Raw]) -> Raw:
    """One raw record holding every worker's samples (or rounds), in worker order."""
    first = raws[0]
    if isinstance(first, RawLatency):
        # Compact int64 series (8 bytes a wake), never a list of a million ints.
        samples = int64s()
        components: Dict[str, IntSeries] = {}
        for raw in raws:
            assert isinstance(raw, RawLatency)
            samples.extend(iter(raw.samples_ns))  # iter(): an array of another typecode is refused whole
            for name, series in raw.components_ns.items():
                components.setdefault(name, int64s()).extend(iter(series))
        latency = [r for r in raws if isinstance(r, RawLatency)]
        # Per-wake CPUs only when every worker recorded them: a partial series could not be aligned.
        with_cpus = all(len(r.waiter_cpus) == len(r.samples_ns) and len(r.notifier_cpus) == len(r.samples_ns) for r in latency)
        return RawLatency(
            samples_ns=samples,
            lost=sum(r.lost for r in latency),
            warmup_discarded=sum(r.warmup_discarded for r in latency),
            components_ns=dict(components),
            info={"workers": [dict(r.info) for r in raws]} if len(raws) > 1 else dict(first.info),
            waiter_cpus=IntSeries("i", (c for r in latency for c in r.waiter_cpus)) if with_cpus else (),
            notifier_cpus=IntSeries("i", (c for r in latency for c in r.notifier_cpus)) if with_cpus else (),
        )
    rates = [r for r in raws if isinstance(r, RawRate)]
    return RawRate(
        n_per_round=rates[0].n_per_round,
        round_ns=tuple(t for r in rates for t in r.round_ns),
        baseline_round_ns=tuple(t for r in rates for t in r.baseline_round_ns),
        warmup_rounds=sum(r.warmup_rounds for r in rates),
        info={"workers": [dict(r.info) for r in raws]} if len(raws) > 1 else dict(first.info),
    )
