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
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from typing import Dict

PROTOCOL = 1


_SAMPLES_MARK = "\u0000samples\u0000"
_CHUNK = 20000


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _reply(fd: int, doc: Dict[str, object]) -> None:
    """Write ``doc`` as one JSON line; a large ``raw.samples_ns`` is streamed in chunks.

    Streaming keeps a worker holding a million samples from also holding a
    second, textual copy of them (the 64 MB budget in bench/).
    """
    raw = doc.get("raw")
    samples = raw.get("samples_ns") if isinstance(raw, dict) else None
    if not isinstance(samples, (list, tuple)):
        _write_all(fd, (json.dumps(doc, separators=(",", ":")) + "\n").encode("utf-8"))
        return
    raw["samples_ns"] = _SAMPLES_MARK  # type: ignore[index]
    head, tail = json.dumps(doc, separators=(",", ":")).split(json.dumps(_SAMPLES_MARK), 1)
    _write_all(fd, head.encode("utf-8") + b"[")
    for start in range(0, len(samples), _CHUNK):
        chunk = ",".join(map(str, samples[start : start + _CHUNK]))
        _write_all(fd, (("," if start else "") + chunk).encode("ascii"))
    _write_all(fd, b"]" + (tail + "\n").encode("utf-8"))


def handle(request: Dict[str, object]) -> Dict[str, object]:
    """Measure the arm described by ``request``; the reply document."""
    from wakelab.arms import find_arm
    from wakelab.arms.base import MeasureParams, RawLatency, raw_to_dict
    from wakelab.harness.conditions import Conditions, worker_conditions
    from wakelab.harness.metadata import interpreter_info

    if request.get("protocol") != PROTOCOL:
        raise ValueError("worker protocol %r, expected %d" % (request.get("protocol"), PROTOCOL))
    arm = find_arm(str(request["arm"]), str(request["family"]))
    params = MeasureParams.from_dict(dict(request["params"]))  # type: ignore[arg-type]
    conditions = Conditions.from_dict(dict(request.get("conditions") or {}))  # type: ignore[arg-type]
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


def main() -> int:
    reply_fd = os.dup(1)
    os.dup2(2, 1)  # anything printed from here on goes to stderr
    try:
        if sys.argv[1:] == ["--probe"]:
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
