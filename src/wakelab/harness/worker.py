"""A worker process: measures one arm under the given conditions, returns raw samples.

Started by the runner as ``python -m wakelab.harness.worker`` with the
package's parent folder on ``PYTHONPATH``, on any interpreter of the machine
(stdlib only, Python 3.9+; nothing needs installing there).

Protocol (version 1): one JSON request on stdin::

    {"protocol": 1, "arm": "event", "family": "threads", "params": {...MeasureParams...}, "conditions": {...Conditions...}}

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
"""

from __future__ import annotations

import dataclasses
import json
import os
import select
import signal
import sys
from typing import Any, Callable, Dict, List, Optional, Sequence

PROTOCOL = 1


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


_SAMPLES_MARK = "\u0000samples\u0000"
_CHUNK = 20000


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _reply(fd: int, doc: Dict[str, Any]) -> None:
    """Write ``doc`` as one JSON line; a large ``raw.samples_ns`` is streamed in chunks.

    Streaming keeps a worker holding a million samples from also holding a
    second, textual copy of them (the 64 MB budget in bench/).
    """
    raw = doc.get("raw")
    samples = raw.get("samples_ns") if isinstance(raw, dict) else None
    if not isinstance(raw, dict) or not isinstance(samples, (list, tuple)):
        _write_all(fd, (json.dumps(doc, separators=(",", ":")) + "\n").encode("utf-8"))
        return
    raw["samples_ns"] = _SAMPLES_MARK
    head, tail = json.dumps(doc, separators=(",", ":")).split(json.dumps(_SAMPLES_MARK), 1)
    _write_all(fd, head.encode("utf-8") + b"[")
    for start in range(0, len(samples), _CHUNK):
        chunk = ",".join(map(str, samples[start : start + _CHUNK]))
        _write_all(fd, (("," if start else "") + chunk).encode("ascii"))
    _write_all(fd, b"]" + (tail + "\n").encode("utf-8"))


def handle(request: Dict[str, Any]) -> Dict[str, Any]:
    """Measure the arm described by ``request``; the reply document."""
    from wakelab.core.registry import find_arm
    from wakelab.core.model import MeasureParams, RawLatency, raw_to_dict
    from wakelab.harness.conditions import Conditions, worker_conditions
    from wakelab.harness.metadata import interpreter_info

    if request.get("protocol") != PROTOCOL:
        raise ValueError("worker protocol %r, expected %d" % (request.get("protocol"), PROTOCOL))
    arm = find_arm(str(request["arm"]), str(request["family"]))
    params = MeasureParams.from_dict(dict(request["params"]))
    conditions = Conditions.from_dict(dict(request.get("conditions") or {}))
    reason = arm.unavailable_reason()
    if reason is not None:
        return {"protocol": PROTOCOL, "ok": False, "unavailable": reason, "error": reason}
    with worker_conditions(params, conditions) as applied:
        raw = arm.measure(params)
    if isinstance(raw, RawLatency):
        # The samples are streamed by _reply straight from the tuple: no list copy of them.
        raw_doc = raw_to_dict(dataclasses.replace(raw, samples_ns=()))
        raw_doc["samples_ns"] = raw.samples_ns
    else:
        raw_doc = raw_to_dict(raw)
    return {
        "protocol": PROTOCOL,
        "ok": True,
        "raw": raw_doc,
        "interpreter": interpreter_info(),
        "applied": applied,
        "pid": os.getpid(),
    }


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


def _await_reply(read_end: int, stdin: _Input) -> bytes:
    """What the worker writes on ``read_end`` until it closes it, watching the runner meanwhile."""
    chunks: List[bytes] = []
    while True:
        ready = select.select([read_end] if stdin.closed else [read_end, stdin.fd], [], [])[0]
        if stdin.fd in ready and not stdin.fill():
            _take_group_down()
        if read_end in ready:
            chunk = os.read(read_end, 1 << 16)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)


def _worker(request: Dict[str, Any], pipe: Sequence[int], template_pid: int, mask: Sequence[int]) -> None:
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
    try:
        request = json.loads(request_line.decode("utf-8"))
    except ValueError as exc:
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
        data = _await_reply(read_end, stdin)
    finally:
        os.close(read_end)
    _, status = os.waitpid(pid, 0)
    _worker_pid = 0
    if data.endswith(b"\n"):
        _write_all(reply_fd, data)
        return
    _kill_stragglers()  # what the dead worker's arm started (a C floor) would measure on
    if os.WIFSIGNALED(status):
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
        request = json.loads(sys.stdin.read())
        reply = handle(request)
    except Exception as exc:
        _reply(reply_fd, {"protocol": PROTOCOL, "ok": False, "error": "%s: %s" % (type(exc).__name__, exc)})
        return 1
    _reply(reply_fd, reply)
    return 0


if __name__ == "__main__":
    sys.exit(main())
