"""Python frames in a traced wake: CPython's perf trampoline and perf's CPU samples.

``wakelab run --trace --trace-frames`` splits the notify path and the waiter's own
work by Python function.  While the traced pass runs, perf also samples every CPU
(:data:`SAMPLE_EVENT`: ``cpu-clock`` at :data:`SAMPLE_HZ` with frame-pointer call
chains), and each worker publishes its Python frames to perf
(:func:`published_frames`: ``sys.activate_stack_trampoline("perf")``, what ``-X perf``
does): every Python function then runs through a small trampoline of its own, named
``py::QUALNAME:FILE`` in ``/tmp/perf-PID.map``, so that a native call chain shows the
Python frames in it.  A sample of the notifier between ``t0`` and the kernel's wake of
the waiter is the notify path's; a sample of the waiter between ``t0`` and ``t1`` is its
own work (a thread is sampled only while it is on a CPU).
:func:`wakelab.analysis.frames.attribute_frames` counts them by Python call path.

Which interpreters can (:func:`why_no_frames`, asked in the worker's own
interpreter): CPython 3.12 or newer on Linux, built with frame pointers -- perf walks
a call chain by them, and a C frame without one ends the walk before any Python frame
(3.15 builds with them by default; for 3.12-3.14 a build with
``CFLAGS=-fno-omit-frame-pointer`` can).  Elsewhere the run says why, in one line.

The worker's map files are removed once perf has read them (:func:`remove_maps`).
Nothing here runs inside the timed window: the trampoline is switched on before the
first wake and off after the last, and costs each Python call a jump (the traced
pass's overhead shows it).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
from typing import Iterable, Iterator, List, Optional, Tuple

#: perf's sampling rate while frames are sampled (per CPU, per second).
SAMPLE_HZ = 20000
#: The sampled event, with call chains walked by frame pointers (only this event carries them).
SAMPLE_EVENT = "cpu-clock/freq=%d,call-graph=fp/" % SAMPLE_HZ
#: Where CPython writes a process's trampoline names.
MAP_PATH = "/tmp/perf-%d.map"


def why_no_frames() -> Optional[str]:
    """Why this interpreter cannot publish its Python frames to perf (None: it can).

    Stdlib only: asked in the measuring process, of its own interpreter.
    """
    import sysconfig

    impl = sys.implementation.name
    version = "%d.%d.%d" % sys.version_info[:3]
    if impl != "cpython":
        return "%s %s cannot publish its Python frames to perf (CPython 3.12+ can, with -X perf)" % (impl, version)
    if not sys.platform.startswith("linux"):
        return "perf's Python frames are a Linux feature"
    if not hasattr(sys, "activate_stack_trampoline"):
        return "CPython %s cannot publish its Python frames to perf (-X perf needs 3.12 or newer)" % version
    flags = " ".join(str(sysconfig.get_config_var(key) or "") for key in ("CFLAGS", "PY_CFLAGS", "PY_CFLAGS_NODIST", "CONFIG_ARGS"))
    if "-fno-omit-frame-pointer" not in flags:
        return ("CPython %s was built without frame pointers: perf cannot walk from its C frames to the Python ones "
                "(a build with CFLAGS=-fno-omit-frame-pointer can; 3.15 builds with them)" % version)
    return None


@contextlib.contextmanager
def published_frames(wanted: bool) -> Iterator[Optional[str]]:
    """Publish this process's Python frames to perf for the block, if ``wanted``; yields None when
    they are, else why not (not wanted: None and nothing done).  Restored after the block."""
    if not wanted:
        yield None
        return
    reason = why_no_frames()
    if reason is not None:
        yield reason
        return
    was_active = sys.is_stack_trampoline_active()  # type: ignore[attr-defined]
    try:
        if not was_active:
            sys.activate_stack_trampoline("perf")  # type: ignore[attr-defined]
    except (ValueError, OSError, RuntimeError) as exc:
        yield "publishing Python frames to perf failed: %s" % exc
        return
    try:
        yield None
    finally:
        if not was_active:
            sys.deactivate_stack_trampoline()  # type: ignore[attr-defined]


@dataclasses.dataclass(frozen=True)
class FrameSample:
    """One CPU sample of a thread: ``time_ns`` (CLOCK_MONOTONIC), the thread ``tid`` and its process
    ``tgid``, and the Python functions on its stack, innermost first (``Condition.wait``, ...)."""

    time_ns: int
    tid: int
    tgid: int
    python: Tuple[str, ...]


def python_frame(symbol: str) -> Optional[str]:
    """A trampoline's symbol (``py::Condition.wait:/usr/lib/python3.15/threading.py+0xa``) as its
    function's qualified name (``Condition.wait``); None for any other symbol."""
    if not symbol.startswith("py::"):
        return None
    name = symbol[4:]
    name = name.split(":", 1)[0]
    return name or None


def parse_stack(lines: Iterable[str]) -> Tuple[str, ...]:
    """The Python frames (innermost first) of a sample's call chain, as ``perf script`` prints it
    (one frame a line: address, symbol, maybe ``(dso)``)."""
    frames: List[str] = []
    for line in lines:
        parts = line.strip().split(None, 1)
        if len(parts) < 2:
            continue
        name = python_frame(parts[1].rsplit(" (", 1)[0].strip())
        if name is not None:
            frames.append(name)
    return tuple(frames)


def remove_maps(pids: Iterable[int]) -> None:
    """Remove the perf map files CPython wrote for ``pids`` (the traced workers)."""
    for pid in set(pids):
        if isinstance(pid, int) and pid > 0:
            with contextlib.suppress(OSError):
                os.unlink(MAP_PATH % pid)
