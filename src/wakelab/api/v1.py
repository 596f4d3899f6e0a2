"""Measure your own wake path: the arm API, version 1 (stable).

An *arm* is one wake experiment: a notifier wakes a waiter, and wakelab
records ``t1 - t0`` for every wake.  With this module you declare an arm of
your own -- your library's notify path, your job queue's wake-up -- and
wakelab does everything else: the wake loop, worker processes, conditions
(``--placement``, ``--cpu-threads`` ...), ``--python all``, repetitions,
``--trace``, the matrix, ``compare`` and the reports.  You supply only the
primitive's three moves; wakelab's thread driver (the same one that runs
``event``, ``queue`` and ``pipe``) owns the loop.

Standard library only, Python 3.9+ and PyPy, so that a worker process
started with ``python -S`` on any interpreter of the machine can import it.

A whole arm file
----------------
::

    # my_arms.py -- run with: wakelab run --arm-file my_arms.py
    import threading
    from wakelab.api.v1 import BLOCKED, CROSS_THREAD, Arm, WakePath

    def event_path():
        event = threading.Event()          # a fresh primitive for every measurement
        return WakePath(reset=event.clear, wait=event.wait, notify=event.set)

    ARMS = [
        Arm(
            name="my-event",
            family="threads",
            waiter=BLOCKED,
            scope=CROSS_THREAD,
            mechanism="threading.Event: set() wakes a thread blocked in wait()",
            t0="main thread: perf_counter_ns() immediately before Event.set()",
            t1="waiter thread: perf_counter_ns() as the first statement after Event.wait() returns",
            path=event_path,
        ),
    ]

The file is run as a module of its own (not on ``sys.path``); it must define
``ARMS``, a list of :class:`Arm`.  Keep its top level quick and free of side
effects: it runs once in the ``wakelab`` process (bounded to
:data:`LOAD_TIMEOUT_S` seconds) and again in every worker process.  What it
imports must be importable where the workers run: the standard library, this
module, and -- for the interpreter wakelab itself runs on -- the packages the
file imported when wakelab loaded it (their ``sys.path`` folders are passed
to the workers, which otherwise start without site-packages).  With
``--python`` of another interpreter, a package that is not pure Python is
not importable there: give the arm a ``requires`` that says so.

The moves (:class:`WakePath`)
-----------------------------
``path`` is a function taking no arguments that builds a fresh primitive and
returns its :class:`WakePath`.  It is called once per measurement, in the
worker, before the first wake.  Per wake, the driver does::

    notifier (the worker's main thread)      waiter (a thread of the worker)
    reset()                                  -- outside the timed window
    handshake: the waiter announces ------>  wait(timeout_s)       parks here
    sleep(settle)
    before()                                 -- if given, outside the window
    t0 = perf_counter_ns()
    notify()                                 -- your notify call
    after()                                  -- if given, inside the window
    blocks on the driver's handshake         t1 = perf_counter_ns() right after
                                             wait() returns True

* ``reset()``: back to the un-notified state, discarding whatever a late or
  lost wake left behind (drain a queue, clear a flag, read a pipe empty).
  It must not block.  In closed loop (the default) the notifier calls it
  before each wake; with ``--mode open`` the waiter calls it right after
  each wake, while the notifier may already be notifying again.
* ``wait(timeout_s) -> bool``: the waiter's wait.  Return True when woken,
  False when ``timeout_s`` seconds passed without a wake (that wake is
  counted lost).  It **must** honour ``timeout_s``: a wait that never
  returns fails the arm after ``timeout_s`` plus a few seconds' slack.
* ``wait_stamped(timeout_s) -> int | None``, instead of ``wait``, for a wait
  that must do more after the primitive returns (take the job off the queue,
  release a lock, re-check a flag): take ``t1 = now_ns()`` as the first
  statement after the primitive's wait returns, finish, and return ``t1``
  (None on timeout).
* ``notify()``: the notify call itself, called with no arguments right after
  ``t0``.  Give it as a bound method or a :func:`functools.partial`, not a
  ``lambda`` or a ``def`` around the call: every Python frame you add is
  inside the timed window.
* ``before()`` / ``after()``: optional, run just before ``t0`` and just
  after ``notify()`` -- a lock held around the notify, released after it.
* ``bind() -> notify``, instead of ``notify``, for a primitive that is new
  every wake (a Future): it runs before ``t0`` and returns that wake's
  notify callable.

Exactly one of ``wait`` and ``wait_stamped``, and one of ``notify`` and
``bind``, is given.

The declaration (:class:`Arm`)
------------------------------
``name``       lower-case letters, digits and ``-``, at most 64 characters,
               not the name of a built-in arm (see ``wakelab list``).
``family``     where reports list it: ``threads``, ``signals``, ``fds``,
               ``asyncio`` or ``processes``.
``waiter``     :data:`BLOCKED` (the waiter parks in the kernel; the driver
               lets it settle before ``t0``) or :data:`SPINNING` (it polls).
               Part of the arm's identity: reports keep them apart.
``scope``      :data:`CROSS_THREAD` (notifier and waiter are threads of one
               process: the driver's shape) or :data:`CROSS_PROCESS` (your
               wake path itself crosses a process, e.g. through a broker).
``t0``, ``t1`` exactly which instants they are, in words (the evidence
               records them); see the driver's shape above.
``path``       the function returning the :class:`WakePath`.
``mechanism``  one line: what notifies and what waits (optional).
``requires``   optional function returning None when the arm can run here,
               or the reason it cannot (a library not installed, an OS
               without the call); the arm is then skipped with that reason.

A declaration that breaks these rules raises :class:`ArmDeclarationError`
when the file is loaded, and ``wakelab run`` stops with one line naming the
file, the line and the fix (exit status 2).

What wakelab does with it
-------------------------
* ``wakelab run --arm-file FILE`` (repeatable) runs the file's arms, or with
  ``--arms A,B`` the ones named (built-in arms may stand beside them:
  ``--arms my-event,event``).  Every other option works as for built-in arms.
* Installed packages provide arms through the entry-point group
  ``wakelab.arms``: the entry point's name is the arm's name and its object
  is an :class:`Arm` (or a function returning one), for example in
  ``pyproject.toml``::

      [project.entry-points."wakelab.arms"]
      my-event = "mypackage.wakelab_arms:MY_EVENT"

  It is looked up only when ``--arms`` names an arm that is neither built in
  nor in an ``--arm-file``, and only that entry point is loaded.
* The evidence marks every such arm ``"user_defined": true`` with its
  ``"origin"``: the file's absolute path and the SHA-256 of the bytes that
  were run, or the entry point, its distribution and version.  Workers check
  the hash and refuse a file that changed during the run.
* Problems while measuring fail the arm with the reason, never the run: a
  move that raises (the reason names the exception and your file's line), a
  wait that never returns or a notify that never returns (the worker is
  killed when it stops running, or at its deadline), a notify that never
  wakes the waiter (every wake is counted lost).

Check your arm with a planted delay: ``--planted-delay-us 2000`` must move
p50 by about 2 ms (it is inserted between ``t0`` and ``notify()``).

Stability: the names in ``__all__`` and their meanings are version 1 of this
API and will not change; what may grow is new optional fields with defaults.
"""

from __future__ import annotations

import dataclasses
import re
import time
from typing import Callable, Optional, Tuple

# WakePath (the moves) and ArmDeclarationError are the core's own, exported here: an arm file's
# path is handed to the thread driver as it is declared, the very class the built-in arms use.
from wakelab.core.drivers import ArmDeclarationError, WakePath
from wakelab.core.drivers import check_callable as _check_callable
from wakelab.core.registry import user_arm_families

__all__ = [
    "API_VERSION",
    "BLOCKED",
    "SPINNING",
    "CROSS_THREAD",
    "CROSS_PROCESS",
    "WAITER_STATES",
    "SCOPES",
    "FAMILIES",
    "LOAD_TIMEOUT_S",
    "now_ns",
    "WakePath",
    "Arm",
    "ArmDeclarationError",
]

#: This module's version of the API.
API_VERSION = 1

#: Waiter states.
BLOCKED = "blocked"
SPINNING = "spinning"
WAITER_STATES: Tuple[str, ...] = (BLOCKED, SPINNING)

#: Scopes.  ``self`` (notifier and waiter in one thread) is not offered: the driver's waiter is
#: a thread of its own.
CROSS_THREAD = "cross-thread"
CROSS_PROCESS = "cross-process"
SCOPES: Tuple[str, ...] = (CROSS_THREAD, CROSS_PROCESS)

#: Families a user arm may be listed under (``native`` is the C floor's own): those whose module
#: declares ``user_arms=True`` (:class:`wakelab.core.model.Family`).
FAMILIES: Tuple[str, ...] = user_arm_families()

#: Seconds an arm file's top level may take to run when wakelab loads it.
LOAD_TIMEOUT_S = 10.0

#: The clock ``t0`` and ``t1`` are read from (``time.perf_counter_ns``, CLOCK_MONOTONIC on Linux);
#: a ``wait_stamped`` takes its ``t1`` from it.
now_ns = time.perf_counter_ns

_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")
_TEXT_MAX = 1000


def _check_word(field: str, value: object, valid: Tuple[str, ...]) -> None:
    if value not in valid:
        raise ArmDeclarationError(
            "Arm %s must be one of %s, got %r" % (field, ", ".join(repr(v) for v in valid), value)
        )


def _check_text(field: str, value: object, required: bool) -> None:
    if not isinstance(value, str):
        raise ArmDeclarationError("Arm %s must be a string, got %s" % (field, type(value).__name__))
    if required and not value.strip():
        raise ArmDeclarationError("Arm %s must say exactly which instant it is, got an empty string" % field)
    if len(value) > _TEXT_MAX or "\n" in value or "\r" in value:
        raise ArmDeclarationError("Arm %s must be one line of at most %d characters" % (field, _TEXT_MAX))


@dataclasses.dataclass(frozen=True)
class Arm:
    """One wake experiment of your own (see "The declaration" in the module docstring)."""

    name: str
    family: str
    waiter: str
    scope: str
    t0: str
    t1: str
    path: Callable[[], WakePath]
    mechanism: str = ""
    requires: Optional[Callable[[], Optional[str]]] = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.fullmatch(self.name):
            raise ArmDeclarationError(
                "Arm name must be lower-case letters, digits and '-', starting with a letter or digit, "
                "at most 64 characters; got %r" % (self.name,)
            )
        _check_word("family", self.family, FAMILIES)
        if self.waiter == "none":
            raise ArmDeclarationError("Arm waiter 'none' is for rate arms; a user arm's waiter is 'blocked' or 'spinning'")
        _check_word("waiter", self.waiter, WAITER_STATES)
        if self.scope == "self":
            raise ArmDeclarationError(
                "Arm scope 'self' is not offered: the driver's waiter is a thread of its own "
                "(use 'cross-thread', or 'cross-process' when your wake path crosses a process)"
            )
        _check_word("scope", self.scope, SCOPES)
        _check_text("t0", self.t0, True)
        _check_text("t1", self.t1, True)
        _check_text("mechanism", self.mechanism, False)
        if isinstance(self.path, WakePath):
            raise ArmDeclarationError(
                "Arm path must be a function that returns a WakePath (a fresh primitive for every "
                "measurement), got a WakePath: pass the function that builds it"
            )
        _check_callable("Arm", "path", self.path, optional=False)
        _check_callable("Arm", "requires", self.requires)
