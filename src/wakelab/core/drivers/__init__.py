"""Drivers: one per way of waiting, each owning the whole wake loop.

=========  ==================================  ===================================  =========
driver     the waiter                          arms                                 open loop
=========  ==================================  ===================================  =========
thread     a waiter thread of the worker       threads, fds, ``pthread-kill-sigwait``  yes
main       the worker's main thread (or, in    the signal arms whose handler or     yes
           self mode, the notifier itself)     ``sigwait`` runs in the main thread
loop       an asyncio event loop (a waiter     asyncio, ``uvloop-*``                no
           thread; the main thread for
           ``add_signal_handler``)
task       a task (or greenlet) of a           async libraries: trio, anyio, gevent no
           library's own loop, in a waiter
           thread
child      a child process                     processes                            yes
floor      a thread or process in C            native                               no
subinterp  a thread running in a subinter-     ``interp-queue``, ``interp-pipe``    no
           preter (``concurrent.interpreters``)
pool       an executor's idle worker (thread,  ``*-pool-submit``                    no
           subinterpreter or process)
storm      the receiver of a signal storm (a   storms                               yes
           handler, a thread, the C floor)
=========  ==================================  ===================================  =========

A family module supplies only its primitive's moves (``reset``, ``wait``,
``notify``, optionally ``before`` and ``after`` the notify); the driver owns
the handshake, the settle, ``t0``, the planted delay, the notify, ``t1``
bookkeeping, lost wakes and the open or closed loop.  ``t0`` is taken in this
package and nowhere else.

The timed window
----------------
Every driver builds its notify step once per arm, with :func:`notify_step`,
before the first wake::

    before()              # e.g. take the lock a Condition is notified under
    t0 = perf_counter_ns()
    notify()              # the primitive's notify call, nothing between
    after()               # e.g. release that lock: the wake cannot finish without it

and then, in every driver the same way, the notifier *blocks* on the
driver's completion handshake (a ``threading.Event``, a pipe read, a
``Connection.recv``), which releases the GIL.  Between ``t0`` and the notify
call there is no branch, call, append or hook: the step is one of a few
closures chosen once, so an unplanted run executes exactly the three lines
above.

What the notifier still does after the notify.  With a GIL, the interval from
the notify call's return to the notifier's next GIL release is inside every
cross-thread sample, because the woken waiter must take the GIL before it can
run ``t1 = perf_counter_ns()``.  Here that interval is: ``after()`` if any,
returning from the step, and entering the handshake's wait (``Event.wait`` ->
``Condition.wait`` -> acquiring the parked lock, which drops the GIL).  It is
the same short path in every driver; ``bench/notify_tail.py`` bounds its cost
(an ``Event.wait(0)`` on an unset Event runs that path and its return).  It is
part of what a Python program pays too, since a real notifier carries on
running after its notify.

The settle, fixed and random
----------------------------
A blocked waiter announces its wait, and the notifier lets a settle pass
before ``t0`` so that the waiter is parked when the notify comes.  Each
wake's settle is ``params.settle_us`` plus a random part, uniform over
``0..params.settle_jitter_us`` whole microseconds (:func:`settle_schedule_s`).
Why random: a wait that does not block in the kernel but polls -- checks,
sleeps P, checks again (``concurrent.interpreters.Queue.get()`` retries every
10 ms) -- answers a notify at its next check, and that check's phase is set
by when the wait began, that is, by the settle.  A fixed settle lands on the
same phase every time and reports a constant (p50 183 µs with a fixed 20 ms
settle against 4.4 ms with a random one, for that queue); a random part that
spans P lands everywhere in the period, so the wakes spread evenly up to P,
which :mod:`wakelab.analysis.quality` recognises and names.  For a wait that
blocks, the settle's length changes nothing but the idle state the CPU has
reached.  The schedule is drawn before the first wake (no draw inside the
loop), from a ``random.Random`` seeded with ``params.seed``,
``params.settle_stream`` and the caller's ``stream``: the same seed gives
the same settles, on any interpreter.  The C floor is given the same
schedule (:mod:`wakelab.core.drivers.floor`).

Planted delays (self-tests)
---------------------------
``params.planted_delay_us`` puts a wait of that length between ``t0`` and the
notify: every sample must grow by it.  ``params.planted_after_us`` puts one
after the notify (after ``after()``): no sample may grow by it, since the
waiter is already woken.  Both wait with :func:`planted_wait`, which sleeps
(GIL released) and spins only the last :data:`SPIN_TAIL_NS`, so the delay is
exact to about a microsecond at its end while it holds the GIL for at most
that tail -- a delay moved to the wrong side of the notify cannot hide behind
a held GIL.
"""

from __future__ import annotations

import dataclasses
import os
import random
import threading
import time
from typing import Callable, Dict, List, Optional

from wakelab.core.model import LOST_NS, LatencyCollector, MeasureParams, now_ns


#: src/: the folder that holds the wakelab package, put first on ``sys.path`` where a driver's waiter
#: imports its family's moves afresh (an exec'd child, a subinterpreter, an interpreter pool's worker).
#: Derived from this file rather than wakelab.__file__ so that it also works while wakelab is a
#: namespace package.
SRC_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


#: Set (by the worker, or the runner in process) when the run is traced: the closed-loop
#: drivers then keep every wake's ``t0`` -- stored after the wake is over, never inside the
#: timed window -- so that the kernel's scheduler events can be matched to each wake
#: (:mod:`wakelab.analysis.components`).  Off, nothing is kept.
RECORD_T0 = False


def native_tid() -> Optional[int]:
    """The calling thread's kernel thread id (what the scheduler's events name), None if unknown."""
    get = getattr(threading, "get_native_id", None)
    if get is None:
        return None
    try:
        return int(get())
    except (OSError, ValueError):  # pragma: no cover - not on Linux
        return None


def recording_t0() -> bool:
    """True when the drivers keep each wake's ``t0`` (:data:`RECORD_T0`)."""
    return RECORD_T0


def wake_t0_log(params: MeasureParams) -> Optional[List[int]]:
    """A slot per wake for its ``t0`` when the run is traced (:data:`RECORD_T0`), else None."""
    return [0] * params.total_wakes if RECORD_T0 else None


def t0_info(collector: LatencyCollector, t0s: Optional[List[int]], warmup: int) -> Dict[str, object]:
    """``{"wake_t0_ns": [...]}``: the ``t0`` of each counted sample, aligned with ``samples_ns``.

    Empty when no log was kept.  The collector's slots say which wakes were
    counted: warm-up wakes and lost ones (None) have no sample.
    """
    if t0s is None:
        return {}
    kept = [t0s[i] for i, value in enumerate(collector.slots) if i >= warmup and type(value) is int and value < LOST_NS]
    # Taken after the wakes, like the t0s: where this process keeps the GIL, to name a re-block on it.
    return {"wake_t0_ns": kept, "interpreter_data": {"pid": os.getpid(), "ranges": interpreter_data_ranges()}}


def interpreter_data_ranges(maps: str = "/proc/self/maps") -> List[List[int]]:
    """``[start, end)`` address ranges of the interpreter's own writable static data in this process.

    The writable mappings of the executable or of ``libpython``/``libpypy``,
    each extended by the anonymous mapping right after it (its ``.bss``).
    CPython keeps its GIL there (``_PyRuntime``: the GIL's mutex and condition
    for 3.11, the main interpreter's for 3.12+), so a futex word in these ranges
    is the GIL.  Empty where ``/proc`` cannot be read.
    """
    import os.path
    import sys

    try:
        with open(maps) as fh:
            lines = fh.read().splitlines()
    except OSError:
        return []
    exe = os.path.realpath(sys.executable) if sys.executable else ""
    ranges: List[List[int]] = []
    after_ours = False
    for line in lines:
        fields = line.split(None, 5)
        if len(fields) < 5 or "-" not in fields[0]:
            continue
        low, _, high = fields[0].partition("-")
        try:
            start, end = int(low, 16), int(high, 16)
        except ValueError:
            continue
        path = fields[5].strip() if len(fields) > 5 else ""
        name = os.path.basename(path)
        ours = bool(path) and (path == exe or name.startswith(("libpython", "libpypy")))
        writable = "w" in fields[1]
        if ours and writable:
            ranges.append([start, end])
        elif after_ours and writable and not path and ranges and ranges[-1][1] == start:
            ranges[-1][1] = end
        after_ours = ours and writable
    return ranges


class HarnessError(RuntimeError):
    """The harness itself failed (a waiter that never came up, a broken handshake ...)."""


class ArmDeclarationError(ValueError):
    """An arm or :class:`WakePath` declared against the rules (the message says which and how to fix it).

    The public API's error (:data:`wakelab.api.v1.ArmDeclarationError`), raised for built-in and
    user-defined declarations alike.
    """


def check_callable(owner: str, field: str, value: object, optional: bool = True) -> None:
    """:class:`ArmDeclarationError` unless ``value`` is callable (or None, where ``optional``)."""
    if value is None and optional:
        return
    if not callable(value):
        raise ArmDeclarationError("%s: %s must be a function, got %s" % (owner, field, type(value).__name__))


@dataclasses.dataclass(frozen=True)
class WakePath:
    """One primitive's moves, as a family module -- or a user's arm file, through
    :mod:`wakelab.api.v1`, which exports this very class -- declares them for a driver.

    * ``reset()`` returns the primitive to its un-notified state, clearing
      whatever a late or lost wake left behind (closed loop: the notifier,
      before each wake; open loop: the waiter, after each wake);
    * ``wait(timeout_s)`` is the waiter's wait: it returns True when woken and
      False on timeout, and the driver takes ``t1`` as the first thing after
      it returns -- or, for waits that must do more after the primitive
      returns (re-check a flag, release a lock), ``wait_stamped(timeout_s)``
      takes ``t1 = perf_counter_ns()`` itself, as the first statement after
      the primitive's wait returns, and returns it (None on timeout);
    * ``notify()`` is the notify call itself, called right after ``t0``;
    * ``before()`` / ``after()`` optionally run just before ``t0`` and just
      after ``notify()`` (a lock held around the notify);
    * ``bind()``, instead of ``notify``, for a primitive that is new every
      wake: it runs before ``t0`` and returns that wake's notify callable.

    Exactly one of ``wait`` and ``wait_stamped``, and one of ``notify`` and
    ``bind``, is given, and ``bind`` never with ``before`` (it runs before
    ``t0`` already); every move is a function.  A path against these rules
    raises :class:`ArmDeclarationError`.  Use ``functools.partial`` for a
    notify that takes arguments: it adds no Python frame to the window.
    """

    reset: Callable[[], object]
    notify: Optional[Callable[[], object]] = None
    wait: Optional[Callable[[float], bool]] = None
    wait_stamped: Optional[Callable[[float], Optional[int]]] = None
    before: Optional[Callable[[], object]] = None
    after: Optional[Callable[[], object]] = None
    bind: Optional[Callable[[], Callable[[], object]]] = None

    def __post_init__(self) -> None:
        for field in ("reset", "notify", "wait", "wait_stamped", "before", "after", "bind"):
            check_callable("WakePath", field, getattr(self, field), optional=field != "reset")
        if (self.wait is None) == (self.wait_stamped is None):
            raise ArmDeclarationError("WakePath takes exactly one of wait= and wait_stamped=")
        if (self.notify is None) == (self.bind is None):
            raise ArmDeclarationError("WakePath takes exactly one of notify= and bind=")
        if self.bind is not None and self.before is not None:
            raise ArmDeclarationError("WakePath takes before= or bind=, not both (bind runs before t0 already)")

    def step(self, params: MeasureParams) -> Callable[[], int]:
        """This path's timed notify step (see :func:`notify_step`)."""
        return notify_step(params, self.notify, before=self.before, after=self.after, bind=self.bind)

    def stamped(self) -> Callable[[float], Optional[int]]:
        """The waiter's wait as one function returning ``t1`` (None on timeout)."""
        if self.wait_stamped is not None:
            return self.wait_stamped
        wait = self.wait
        assert wait is not None
        clock = now_ns

        def stamped_wait(timeout_s: float) -> Optional[int]:
            ok = wait(timeout_s)
            t1 = clock()
            return t1 if ok else None

        return stamped_wait


#: A planted wait spins (GIL held) only for its last 200 µs; before that it sleeps.
SPIN_TAIL_NS = 200_000

#: Slack every handshake allows on top of the arm's own wait timeout.
HANDSHAKE_SLACK_S = 5.0


def handshake_timeout_s(params: MeasureParams) -> float:
    """How long a driver waits for its other side: the waiter's own bound plus slack."""
    return params.timeout_s + HANDSHAKE_SLACK_S


def planted_wait(deadline_ns: int) -> None:
    """Wait until ``perf_counter_ns()`` reaches ``deadline_ns``: sleep, then spin the tail.

    Sleeping keeps the GIL free (a delay planted after a notify must not hold
    back the woken waiter); spinning the last :data:`SPIN_TAIL_NS` keeps the
    end of the delay precise despite the sleep's own wake-up latency.
    """
    remaining = deadline_ns - now_ns() - SPIN_TAIL_NS
    if remaining > 0:
        time.sleep(remaining / 1e9)
    while now_ns() < deadline_ns:
        pass


def settle_schedule_us(params: MeasureParams, stream: int = 0) -> List[int]:
    """Each wake's settle in whole microseconds, for ``params.total_wakes`` wakes (warm-up included).

    ``params.settle_us`` plus a part drawn uniformly from ``0..params.settle_jitter_us``
    (inclusive), from a ``random.Random`` seeded with ``params.seed`` (0 when
    None: a measurement started outside the runner), ``params.settle_stream``
    (the worker's stream, set by the runner) and ``stream`` (a driver that
    needs a second schedule in one measurement asks for stream 1).  Equal
    arguments give equal schedules on every Python 3.9+ and PyPy (a string seed
    is hashed with SHA-512, and ``random()`` is the same Mersenne Twister
    everywhere); a longer run's schedule starts with a shorter one's.  With no
    random part every settle is ``settle_us``.
    """
    fixed = params.settle_us
    jitter = params.settle_jitter_us
    total = params.total_wakes
    if jitter <= 0:
        return [fixed] * total
    draw = random.Random("wakelab-settle %d %d %d" % (params.seed or 0, params.settle_stream, stream)).random
    span = jitter + 1  # 0..jitter inclusive
    return [fixed + int(draw() * span) for _ in range(total)]


def settle_schedule_s(params: MeasureParams, stream: int = 0) -> List[float]:
    """Each wake's settle in seconds (:func:`settle_schedule_us`), ready for ``time.sleep``."""
    return [us / 1e6 for us in settle_schedule_us(params, stream)]


def notify_step(
    params: MeasureParams,
    notify: Optional[Callable[[], object]],
    *,
    before: Optional[Callable[[], object]] = None,
    after: Optional[Callable[[], object]] = None,
    bind: Optional[Callable[[], Callable[[], object]]] = None,
) -> Callable[[], int]:
    """The notifier's timed step for one arm, chosen once: a function that notifies and returns ``t0``.

    See the module docstring for the shape.  ``before`` runs outside the
    window and ``after`` inside it; ``notify`` is called with no arguments
    immediately after ``t0`` is taken (after the planted delay, when one is
    planted).  For a primitive that is new every wake (a Future), ``bind()``
    runs before ``t0`` and returns that wake's notify callable instead.
    """
    if (notify is None) == (bind is None):
        raise ValueError("notify_step takes exactly one of notify and bind")
    delay_ns = params.planted_delay_us * 1000
    after_ns = params.planted_after_us * 1000
    clock = now_ns

    if delay_ns or after_ns:
        # Self-test variant: the planted waits are the only additions.
        def planted_step() -> int:
            if before is not None:
                before()
            fire = bind() if bind is not None else notify
            t0 = clock()
            if delay_ns:
                planted_wait(t0 + delay_ns)
            fire()  # type: ignore[misc]
            if after is not None:
                after()
            if after_ns:
                planted_wait(clock() + after_ns)
            return t0

        return planted_step

    if before is not None and bind is not None:
        raise ValueError("notify_step takes before or bind, not both")
    # From here on, every variant is exactly: [prepare], t0, notify, [after].
    if bind is not None:
        if after is None:

            def bound_step() -> int:
                fire = bind()
                t0 = clock()
                fire()
                return t0

            return bound_step

        def bound_step_after() -> int:
            fire = bind()
            t0 = clock()
            fire()
            after()
            return t0

        return bound_step_after

    fire = notify
    assert fire is not None
    if before is None and after is None:

        def step() -> int:
            t0 = clock()
            fire()
            return t0

    elif after is None:
        assert before is not None
        pre = before

        def step() -> int:
            pre()
            t0 = clock()
            fire()
            return t0

    elif before is None:
        post = after

        def step() -> int:
            t0 = clock()
            fire()
            post()
            return t0

    else:
        pre, post = before, after

        def step() -> int:
            pre()
            t0 = clock()
            fire()
            post()
            return t0

    return step
