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
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from typing import Any, Dict, List

PROTOCOL = 1


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


def _read_all(fd: int) -> bytes:
    chunks: List[bytes] = []
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _serve_one(request_line: bytes, reply_fd: int) -> None:
    """Fork a fresh worker for one request; forward its reply, or say how it died."""
    try:
        request = json.loads(request_line.decode("utf-8"))
    except ValueError as exc:
        _reply(reply_fd, {"protocol": PROTOCOL, "ok": False, "error": "bad request: %s" % exc})
        return
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the worker: a new process, sharing nothing at run time with the template
        status = 0
        try:
            os.close(read_end)
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
    os.close(write_end)
    data = _read_all(read_end)
    os.close(read_end)
    _, status = os.waitpid(pid, 0)
    if data.endswith(b"\n"):
        _write_all(reply_fd, data)
        return
    if os.WIFSIGNALED(status):
        error = "worker killed by signal %d" % os.WTERMSIG(status)
    else:
        error = "worker exited with status %d without a reply" % os.WEXITSTATUS(status)
    _reply(reply_fd, {"protocol": PROTOCOL, "ok": False, "error": error})


def serve(reply_fd: int) -> int:
    """Template mode: one request per line on stdin, one forked worker and one reply line each."""
    import importlib

    for name in _preload():
        importlib.import_module(name)
    stdin = sys.stdin.buffer
    while True:
        line = stdin.readline()
        if not line:
            return 0
        if line.strip():
            _serve_one(line, reply_fd)


def main() -> int:
    reply_fd = os.dup(1)
    os.dup2(2, 1)  # anything printed from here on goes to stderr
    try:
        if sys.argv[1:] == ["--probe"]:
            from wakelab.harness.clock import calibrate
            from wakelab.harness.metadata import interpreter_info

            _reply(reply_fd, {"protocol": PROTOCOL, "ok": True, "interpreter": interpreter_info(), "timer": calibrate()})
            return 0
        if sys.argv[1:] == ["--serve"]:
            return serve(reply_fd)
        request = json.loads(sys.stdin.read())
        reply = handle(request)
    except Exception as exc:
        _reply(reply_fd, {"protocol": PROTOCOL, "ok": False, "error": "%s: %s" % (type(exc).__name__, exc)})
        return 1
    _reply(reply_fd, reply)
    return 0


if __name__ == "__main__":
    sys.exit(main())
