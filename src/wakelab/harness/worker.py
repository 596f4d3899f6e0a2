"""A worker process: measures one arm under the given conditions, returns raw samples.

Started by the runner as ``python -m wakelab.harness.worker`` with the
package's parent folder on ``PYTHONPATH``, on any interpreter of the machine
(stdlib only, Python 3.9+; nothing needs installing there).

Protocol (version 1): one JSON request on stdin::

    {"protocol": 1, "arm": "event", "family": "threads", "params": {...MeasureParams...}, "conditions": {...Conditions...}}

with, for a user-defined arm, ``"user_arm": {...its origin...}`` (the arm file
and its sha256, or the entry point: :mod:`wakelab.core.user_arms`), which the
worker loads before it looks the arm up;

and, in a traced run, ``"stamps": true``: the drivers then keep each wake's
``t0`` and report it, with both sides' kernel thread ids, in the raw record's
``info`` (``wake_t0_ns``, ``waiter_tid``, ``notifier_tid``; see
:data:`wakelab.core.drivers.RECORD_T0`), for the runner to match to the
scheduler events it recorded meanwhile.  The worker itself does not trace.

and one JSON reply, written to the file descriptor that was stdout when the
worker started::

    {"protocol": 1, "ok": true, "raw": {...raw record...}, "interpreter": {...},
     "applied": {...}, "pid": 1234}
    {"protocol": 1, "ok": false, "error": "HarnessError: ..."}

Before measuring, stdout is pointed at stderr, so that nothing an arm or its
child processes print can corrupt the reply.  ``--probe`` replies with the
interpreter's facts and its timer calibration (used to validate ``--python``).

``--serve`` is how the runner uses it: the process imports every measuring
module once and becomes a *template*; for each request line on stdin it
forks a fresh worker, which measures and replies, then exits.  Each worker is
a new process that shares nothing at run time with the others (as with
multiprocessing's forkserver), but none of them pays for starting an
interpreter and importing the package -- which on a small VM costs more than
a whole arm's worth of wakes.  The template never measures and never starts
a thread, so forking it is safe.

Dying with the parent
---------------------
No measuring process may outlive the run, however the runner ends (Ctrl-C,
SIGTERM, SIGKILL, a crash).  The runner passes its pid (``--parent-pid``),
and each process asks the kernel to signal it when its parent dies
(``prctl(PR_SET_PDEATHSIG)`` through ctypes; Linux only), then re-checks
``os.getppid()``, since the parent may have died before the request took
effect:

* a forked worker gets SIGKILL when the template dies;
* the template gets SIGTERM when the runner dies, and its handler kills the
  template's whole process group with SIGKILL: the worker, *and whatever the
  arm started* (waiter children, the C floor and its child), which a plain
  SIGKILL of the template alone would leave measuring on as orphans;
* the template also treats end of input while a worker measures as the
  runner gone (its stdin is a pipe only the runner writes: a liveness pipe
  that works without prctl), and takes the group down the same way -- so a
  client keeps the template's stdin open until its last reply has come;
* when a worker dies without replying, the template kills the rest of its
  group, which the worker can no longer reap;
* ``--probe`` and the one-request mode get SIGKILL.

The kernel sends the signal when the *thread* that started the process
exits, not the process: the runner starts the template from its main thread.

Liveness
--------
A worker that stops making progress (stopped, deadlocked, a wait that never
ends) is found within a few seconds plus its longest single wait, whatever
``n`` is -- without the worker itself doing anything for it.  Nothing runs in
the measuring process to prove it is alive (a heartbeat thread there would
take the GIL and wake up inside timed windows); instead the template, which
is idle while its worker measures, looks every :data:`HEARTBEAT_S` at how
often the worker and its descendants have been put on a CPU
(``/proc/<pid>/task/<tid>/schedstat``: run time and run count; ``stat``'s
CPU ticks where schedstat is missing).  Every wake schedules the measuring
threads, and every wait in an arm is bounded (:func:`stall_after_s`: the
settle, the planted delays, the open-loop interval, ``timeout_s`` and the
handshake slack), so a worker none of whose threads ran for
:func:`stall_after_s` seconds is stalled: the template SIGKILLs it with what
its arm started and replies ``worker stalled: ...``.

The template proves its own liveness to the runner: on each request line
it writes one :data:`HEARTBEAT` byte at once, then one every
:data:`HEARTBEAT_S` while its worker measures, all before the reply line.
The byte is a space, which JSON ignores before a document.

Every read from a worker is bounded: a reply longer than
:func:`reply_cap_bytes` (what ``n`` samples can take, and slack) kills the
worker and is answered ``worker reply exceeds ...``.
"""

from __future__ import annotations

import array
import json
import os
import select
import signal
import sys
import time
from typing import Any, Callable, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple

PROTOCOL = 1

# Liveness (see "Liveness" above).
HEARTBEAT = b" "
HEARTBEAT_S = 0.5
# Seconds a worker may go unscheduled beyond its longest single wait before it is stalled.
STALL_GRACE_S = 3.0
# Bytes a reply may take beyond its samples, and per counted wake (a sample and its components).
REPLY_BASE_BYTES = 1 << 20
REPLY_PER_WAKE_BYTES = 216
# The driver's slack on every handshake (wakelab.core.drivers.HANDSHAKE_SLACK_S, kept in step
# by tests/test_worker_liveness.py): the template must not import a measuring module to read it.
HANDSHAKE_SLACK_S = 5.0


def _number(params: Mapping[str, object], key: str) -> float:
    value = params.get(key, 0)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def stall_after_s(params: Mapping[str, object]) -> float:
    """Seconds a worker measuring with ``params`` (a MeasureParams dict) may go without running.

    The longest single wait of any arm -- the settle (both its parts), both planted delays,
    the open-loop interval, then ``timeout_s`` plus the handshake slack --
    and :data:`STALL_GRACE_S`.
    """
    wait_us = sum(_number(params, key) for key in ("settle_us", "settle_jitter_us", "planted_delay_us", "planted_after_us", "interval_us"))
    return STALL_GRACE_S + wait_us / 1e6 + _number(params, "timeout_s") + HANDSHAKE_SLACK_S


def reply_cap_bytes(params: Mapping[str, object]) -> int:
    """The most bytes a reply to a request with ``params`` may take."""
    wakes = _number(params, "n") + _number(params, "warmup") + _number(params, "rounds") + _number(params, "warmup_rounds")
    return REPLY_BASE_BYTES + int(min(wakes, 1e9)) * REPLY_PER_WAKE_BYTES


# prctl(2) option: the signal this process gets when its parent (thread) dies.
PR_SET_PDEATHSIG = 1
# The template's exit status when it finds its runner gone.
EXIT_PARENT_GONE = 3

_prctl: Optional[Callable[..., int]] = None


def die_with_parent(signum: int, parent_pid: Optional[int]) -> bool:
    """Have the kernel send ``signum`` to this process when its parent dies; False if it already has.

    Linux only (``prctl(PR_SET_PDEATHSIG)`` through ctypes); elsewhere, or
    without ctypes, nothing is set up.  ``parent_pid`` is the pid the parent
    gave: once the request is in place, a different ``os.getppid()`` means the
    parent died before it (the process was re-parented), and no signal will come.
    """
    global _prctl
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            if _prctl is None:
                _prctl = ctypes.CDLL(None, use_errno=True).prctl
            arg = ctypes.c_ulong  # prctl is variadic: every argument after the option is an unsigned long
            _prctl(PR_SET_PDEATHSIG, arg(signum), arg(0), arg(0), arg(0))
        except (ImportError, OSError, AttributeError):
            pass  # no ctypes or no prctl: the template's liveness pipe still works
    return parent_pid is None or os.getppid() == parent_pid


# Series longer than this are streamed in chunks of this many values (see _reply).
_CHUNK = 20000
_MARK = "\u0000series-%d\u0000"


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _is_series(value: object) -> bool:
    """A series _reply streams: any ``array.array`` (json cannot dump one), a long list or tuple."""
    return isinstance(value, array.array) or (isinstance(value, (list, tuple)) and len(value) > _CHUNK)


def _mark_series(node: Any, found: List[Any]) -> Any:
    """``node`` with every long series replaced by a unique marker (the series go into ``found``)."""
    if _is_series(node):
        found.append(node)
        return _MARK % (len(found) - 1)
    if isinstance(node, dict):
        return {key: _mark_series(value, found) for key, value in node.items()}
    return node


def _reply(fd: int, doc: Mapping[str, object]) -> None:
    """Write ``doc`` as one JSON line, every long series in it streamed in chunks.

    A series (the samples, their components, the per-wake CPUs and t0s) may
    hold a million values, in a compact array (8 bytes each): writing it as
    ``json.dumps`` would first build a list of a million ints (about 40 bytes
    each) and a text copy of it.  Each one is replaced by a marker, the rest
    of the document is dumped, and each marker is written as the series'
    JSON array, :data:`_CHUNK` values at a time (``bench/worker_memory.py``:
    a worker holding a million samples stays within 30 MB).
    """
    series: List[Any] = []
    marked = _mark_series(doc, series)
    text = json.dumps(marked, separators=(",", ":"))
    for index, values in enumerate(series):
        marker = json.dumps(_MARK % index)
        head, text = text.split(marker, 1)
        _write_all(fd, head.encode("utf-8") + b"[")
        for start in range(0, len(values), _CHUNK):
            chunk = ",".join(map(str, values[start : start + _CHUNK]))
            _write_all(fd, (("," if start else "") + chunk).encode("ascii"))
        _write_all(fd, b"]")
    _write_all(fd, (text + "\n").encode("utf-8"))


class Request(NamedTuple):
    """One request (see the protocol above), as the client writes it and the worker reads it;
    ``user_arm`` is for :func:`wakelab.core.user_arms.load_origin`."""

    arm: str
    family: str
    params: Dict[str, object]
    conditions: Dict[str, object]
    user_arm: object = None
    stamps: bool = False
    frames: bool = False

    @classmethod
    def read(cls, doc: object) -> "Request":
        """The request in a JSON document (ValueError or KeyError saying what is wrong)."""
        if not isinstance(doc, dict):
            raise ValueError("a request must be an object")
        if doc.get("protocol") != PROTOCOL:
            raise ValueError("worker protocol %r, expected %d" % (doc.get("protocol"), PROTOCOL))
        params, conditions = doc["params"], doc.get("conditions") or {}
        if not isinstance(params, dict) or not isinstance(conditions, dict):
            raise ValueError("params and conditions must be objects")
        return cls(str(doc["arm"]), str(doc["family"]), params, conditions, doc.get("user_arm"),
                   doc.get("stamps") is True, doc.get("frames") is True)

    def to_dict(self) -> Dict[str, object]:
        return {"protocol": PROTOCOL, **self._asdict()}


def handle(request: Request) -> Dict[str, object]:
    """Measure the arm described by ``request``; the reply document."""
    from wakelab.core.registry import find_arm
    from wakelab.core.model import MeasureParams, raw_to_dict
    from wakelab.harness.conditions import Conditions, worker_conditions
    from wakelab.harness.metadata import interpreter_info

    if request.user_arm is not None:
        from wakelab.core.user_arms import load_origin

        load_origin(request.user_arm)  # the same file (checked by its sha256) before the look-up
    arm = find_arm(request.arm, request.family)
    params = MeasureParams.from_dict(request.params)
    conditions = Conditions.from_dict(request.conditions)
    reason = arm.unavailable_reason()
    if reason is not None:
        return {"protocol": PROTOCOL, "ok": False, "unavailable": reason, "error": reason}
    if request.stamps:
        import wakelab.core.drivers as drivers

        drivers.RECORD_T0 = True  # this forked worker measures one arm, then exits
    from wakelab.harness.frames import published_frames

    with worker_conditions(params, conditions) as applied, published_frames(request.frames) as no_frames:
        raw = arm.measure(params)
    if no_frames is not None:  # --trace-frames, and this interpreter cannot publish them: say why
        raw.info["frames_unavailable"] = no_frames
    # The record's compact series go into the reply as they are: _reply streams them.
    return {"protocol": PROTOCOL, "ok": True, "raw": raw_to_dict(raw, compact=True), "interpreter": interpreter_info(),
            "applied": applied, "pid": os.getpid()}


# Every module an arm may need, imported once by the template in --serve mode so that each
# forked worker starts warm: no import (or, with PYTHONDONTWRITEBYTECODE, compile) per worker.
def _preload() -> List[str]:
    from wakelab.core.registry import family_module_names

    return family_module_names() + [
        "wakelab.harness.conditions",
        "wakelab.harness.metadata",
        "concurrent.futures",
        "multiprocessing.synchronize",
        "multiprocessing.queues",
    ]


class _Input:
    """The template's stdin, read from its fd: the request lines, and the runner's liveness.

    Only the runner holds the pipe's write end, so end of input while a worker
    measures means the runner is gone.
    """

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.closed = False
        self._buffer = bytearray()

    def fill(self) -> bool:
        """Read what is there (blocks until something is); False at end of input."""
        chunk = os.read(self.fd, 1 << 16)
        if not chunk:
            self.closed = True
            return False
        self._buffer += chunk
        return True

    def readline(self) -> bytes:
        """The next line (the last may lack its newline); b"" at end of input."""
        while b"\n" not in self._buffer and not self.closed:
            self.fill()
        end = self._buffer.find(b"\n") + 1 or len(self._buffer)
        line = bytes(self._buffer[:end])
        del self._buffer[:end]
        return line


# The worker the template is waiting for (0: none).
_worker_pid = 0


def _take_group_down(*_: object) -> None:
    """The runner is gone: SIGKILL the template's process group -- the worker, whatever its arm
    started, and the template itself -- and exit.  The template's SIGTERM handler."""
    if os.getpgrp() == os.getpid():  # started in its own session, as the runner does
        os.killpg(os.getpid(), signal.SIGKILL)
    elif _worker_pid:
        os.kill(_worker_pid, signal.SIGKILL)
    os._exit(EXIT_PARENT_GONE)


def _kill_stragglers() -> None:
    """SIGKILL every other process of the template's group (Linux: found in /proc).

    A worker that died without replying did not reap what its arm started;
    a waiter child or the C floor binary would go on measuring beside the
    next worker.
    """
    me = os.getpid()
    if os.getpgrp() != me or not os.path.isdir("/proc"):
        return
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open("/proc/%s/stat" % name, "rb") as fh:
                pgrp = int(fh.read().rsplit(b")", 1)[1].split()[2])
            if pgrp == me:
                os.kill(int(name), signal.SIGKILL)
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile, or not ours to read


def _read_small(path: str) -> bytes:
    with open(path, "rb") as fh:
        return fh.read(4096)


def _task_progress(pid: int, tid: str) -> Tuple[int, int]:
    """How much thread ``tid`` of ``pid`` has run: (run time, times run) -- or CPU ticks."""
    base = "/proc/%d/task/%s/" % (pid, tid)
    try:
        runtime, _, runs = _read_small(base + "schedstat").split()[:3]
        return int(runtime), int(runs)
    except (OSError, ValueError):
        fields = _read_small(base + "stat").rsplit(b")", 1)[1].split()
        return int(fields[11]) + int(fields[12]), 0  # utime + stime


def progress(pid: int) -> Optional[Tuple[int, int]]:
    """How much ``pid`` and its descendants have run, summed over their threads; None without /proc.

    Any change between two looks means one of them was put on a CPU.
    """
    if not os.path.isdir("/proc/%d/task" % pid):
        return None
    total_time = total_runs = 0
    pending, seen = [pid], set()
    while pending:
        current = pending.pop()
        if current in seen:
            continue
        seen.add(current)
        try:
            tids = os.listdir("/proc/%d/task" % current)
        except OSError:
            continue  # gone meanwhile
        for tid in tids:
            try:
                used, runs = _task_progress(current, tid)
                total_time, total_runs = total_time + used, total_runs + runs
                pending.extend(int(c) for c in _read_small("/proc/%d/task/%s/children" % (current, tid)).split())
            except (OSError, ValueError, IndexError):
                continue  # exited meanwhile, or no children file (then only the worker is watched)
    return total_time, total_runs


def _await_reply(read_end: int, stdin: _Input, reply_fd: int, pid: int, params: Mapping[str, object]) -> Tuple[bytes, Optional[str]]:
    """What the worker writes on ``read_end`` until it closes it, and why it was cut short (or None).

    Meanwhile: the runner is watched (end of input), told every
    :data:`HEARTBEAT_S` that this template is alive, and the worker is
    watched for progress and a reply within its cap.
    """
    chunks: List[bytes] = []
    size = 0
    cap = reply_cap_bytes(params)
    stall_s = stall_after_s(params)
    last = progress(pid)
    moved_at = next_beat = time.monotonic()
    while True:
        now = time.monotonic()
        if now >= next_beat:
            _write_all(reply_fd, HEARTBEAT)
            next_beat = now + HEARTBEAT_S
            seen = progress(pid)
            if seen != last:
                last, moved_at = seen, now
            elif seen is not None and now - moved_at > stall_s:
                return b"", "worker stalled: it and its children did not run for %.1f s (killed)" % (now - moved_at)
        ready = select.select([read_end] if stdin.closed else [read_end, stdin.fd], [], [], max(0.0, next_beat - now))[0]
        if stdin.fd in ready and not stdin.fill():
            _take_group_down()
        if read_end in ready:
            chunk = os.read(read_end, 1 << 16)
            if not chunk:
                return b"".join(chunks), None
            size += len(chunk)
            if size > cap:
                return b"", "worker reply exceeds %d bytes (killed)" % cap
            chunks.append(chunk)


def _worker(request: Request, pipe: Sequence[int], template_pid: int, mask: Sequence[int]) -> None:
    """The forked worker: measure, reply on the pipe's write end, exit (never returns)."""
    status = 0
    read_end, write_end = pipe
    try:
        os.close(read_end)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the template's handler is not the worker's
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        if not die_with_parent(signal.SIGKILL, template_pid):
            os._exit(EXIT_PARENT_GONE)
        try:
            reply = handle(request)
        except Exception as exc:
            reply = {"protocol": PROTOCOL, "ok": False, "error": "%s: %s" % (type(exc).__name__, exc)}
            status = 1
        _reply(write_end, reply)
    except BaseException:
        status = 2
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)


def _serve_one(request_line: bytes, reply_fd: int, stdin: _Input) -> None:
    """Fork a fresh worker for one request; forward its reply, or say how it died."""
    global _worker_pid
    _write_all(reply_fd, HEARTBEAT)  # the request has come: from here on this template beats
    try:
        request = Request.read(json.loads(request_line.decode("utf-8")))
    except (ValueError, KeyError) as exc:
        _reply(reply_fd, {"protocol": PROTOCOL, "ok": False, "error": "bad request: %s" % exc})
        return
    read_end, write_end = os.pipe()
    template_pid = os.getpid()
    # SIGTERM (the runner's death) waits until the fork is done and the worker has dropped the
    # template's handler: the handler then finds the worker in the group, or the worker gone.
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    try:
        pid = os.fork()
        if pid == 0:  # the worker: a new process, sharing nothing at run time with the template
            _worker(request, (read_end, write_end), template_pid, list(mask))
        _worker_pid = pid
    except BaseException:
        os.close(read_end)
        raise
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        os.close(write_end)
    try:
        data, cut = _await_reply(read_end, stdin, reply_fd, pid, request.params)
        if cut is not None:
            os.kill(pid, signal.SIGKILL)
    finally:
        os.close(read_end)
    _, status = os.waitpid(pid, 0)
    _worker_pid = 0
    if cut is None and data.endswith(b"\n"):
        _write_all(reply_fd, data)
        return
    _kill_stragglers()  # what the dead worker's arm started (a C floor) would measure on
    if cut is not None:
        error = cut
    elif os.WIFSIGNALED(status):
        error = "worker killed by signal %d" % os.WTERMSIG(status)
    else:
        error = "worker exited with status %d without a reply" % os.WEXITSTATUS(status)
    _reply(reply_fd, {"protocol": PROTOCOL, "ok": False, "error": error})


def serve(reply_fd: int, parent_pid: Optional[int] = None) -> int:
    """Template mode: one request per line on stdin, one forked worker and one reply line each."""
    import importlib

    signal.signal(signal.SIGTERM, _take_group_down)
    if not die_with_parent(signal.SIGTERM, parent_pid):
        return EXIT_PARENT_GONE
    for name in _preload():
        importlib.import_module(name)
    stdin = _Input(sys.stdin.fileno())
    while True:
        line = stdin.readline()
        if not line:
            return 0
        if line.strip():
            _serve_one(line, reply_fd, stdin)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``[--parent-pid PID] [--probe | --serve]``; without a mode, one request on stdin."""
    args = list(sys.argv[1:] if argv is None else argv)
    parent_pid: Optional[int] = None
    if args[:1] == ["--parent-pid"] and len(args) > 1 and args[1].isdigit():
        parent_pid, args = int(args[1]), args[2:]
    reply_fd = os.dup(1)
    os.dup2(2, 1)  # anything printed from here on goes to stderr
    try:
        if args == ["--serve"]:
            return serve(reply_fd, parent_pid)
        if not die_with_parent(signal.SIGKILL, parent_pid):
            return EXIT_PARENT_GONE
        if args == ["--probe"]:
            from wakelab.harness.clock import calibrate
            from wakelab.harness.metadata import interpreter_info

            _reply(reply_fd, {"protocol": PROTOCOL, "ok": True, "interpreter": interpreter_info(), "timer": calibrate()})
            return 0
        reply = handle(Request.read(json.loads(sys.stdin.read())))
    except Exception as exc:
        _reply(reply_fd, {"protocol": PROTOCOL, "ok": False, "error": "%s: %s" % (type(exc).__name__, exc)})
        return 1
    _reply(reply_fd, reply)
    return 0


if __name__ == "__main__":
    sys.exit(main())
