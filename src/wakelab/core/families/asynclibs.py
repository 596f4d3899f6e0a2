"""Async-library arms: a thread waking the event loops people run besides asyncio's.

Measuring side: the module imports only the standard library.  Each library
is imported lazily, inside an arm's ``requires`` and ``measure``, so the arms
are *optional*: available when the library imports in the measuring
interpreter, skipped with the reason otherwise ("trio is not installed in this
interpreter (CPython 3.11.7 on linux)").  ``wakelab list`` imports none of
them: it asks only whether each is installed (:data:`LISTING_CHECKS`).
wakelab does not depend on any of them; its ``test`` extra installs them so
that the tests run them for real.  Worker processes start with ``python -S``
(no site-packages), so the worker that measures one of these arms -- a fresh
process measuring that one arm -- first starts ``site`` as a normal start of
the interpreter would (:func:`see_site_packages`): "installed" means what it
means to that interpreter run without ``-S``, and the evidence says so
(``site_started``).

Every arm is a blocked waiter woken across threads: the worker's main thread
notifies, and a waiter thread runs the library's loop, idle in its poll
(``epoll_wait`` on Linux) at ``t0``.  Each has a stdlib counterpart, the
asyncio arm that is the same experiment on the standard library's loop
(:data:`COUNTERPARTS`); compare an arm with its counterpart, in the same run:

===========================  ======================================  ===========================  ========================
arm                          t0 (main thread, immediately before)    t1 (first statement ...)     stdlib counterpart
===========================  ======================================  ===========================  ========================
uvloop-call-soon-threadsafe  ``loop.call_soon_threadsafe(cb)`` into  of ``cb``                    ``call-soon-threadsafe``
                             a uvloop loop (libuv)
trio-token-event             ``token.run_sync_soon(event.set)``      after ``await                ``asyncio-event``
                             (a ``TrioToken``, a ``trio.Event``)     event.wait()`` in the task
anyio-asyncio-run-sync       ``anyio.from_thread.run_sync(fn,        of ``fn``                    ``call-soon-threadsafe``
                             token=token)``, asyncio backend
anyio-trio-run-sync          the same call, trio backend             of ``fn``                    ``call-soon-threadsafe``
gevent-async-watcher         ``watcher.send()`` of the hub's         after ``hub.wait(watcher)``  ``asyncio-event``
                             ``loop.async_()`` watcher               returns in the greenlet
===========================  ======================================  ===========================  ========================

What each is.

* ``uvloop-call-soon-threadsafe`` runs on the very loop driver and path as
  ``call-soon-threadsafe`` (:mod:`wakelab.core.drivers.loop`,
  :func:`~wakelab.core.families.aio.call_soon_threadsafe_path`): only the
  loop differs, ``uvloop.new_event_loop()`` (debug off) instead of the
  stdlib's selector loop.  uvloop queues the callback and sends its libuv
  async handle (an eventfd write); libuv's ``epoll_wait`` returns and the loop
  runs the callback.
* ``trio-token-event``: the task awaits a fresh ``trio.Event`` inside
  ``trio.run`` (bounded by ``trio.move_on_after``); ``run_sync_soon`` queues
  ``event.set`` and writes to trio's wake-up socket; trio's run loop wakes
  from epoll, runs ``event.set``, which reschedules the task, and the task
  resumes in the next scheduling batch -- as ``asyncio-event``'s task resumes
  one loop iteration after its ``Event.set`` callback.
* ``anyio-*-run-sync``: ``anyio.from_thread.run_sync`` with the loop's
  ``anyio.lowlevel.current_token()``, which blocks the calling thread until
  ``fn`` has run in the loop.  On the asyncio backend (the stdlib selector
  loop, debug off) anyio sends a wrapper of ``fn`` with
  ``loop.call_soon_threadsafe`` and waits on a ``concurrent.futures.Future``;
  on the trio backend it calls ``trio.from_thread.run_sync``, which sends it
  with ``TrioToken.run_sync_soon`` and waits on a ``queue.SimpleQueue``.  So
  the counterpart of both is ``call-soon-threadsafe``; the difference is
  anyio's (and trio's) layer.  ``fn`` stamps ``t1`` and sets the
  ``anyio.Event`` the waiter task awaits (bounded by ``anyio.move_on_after``).
* ``gevent-async-watcher``: the waiter thread's greenlet blocks in
  ``hub.wait(watcher)`` on an async watcher of the thread's own hub (bounded
  by ``gevent.Timeout``); ``watcher.send()`` is gevent's one thread-safe call
  (libev's ``ev_async_send``: a flag and an eventfd write); the hub's loop
  wakes from epoll and runs the watcher's callback, which switches straight
  back to the waiting greenlet.  Its counterpart is ``asyncio-event``: a
  coroutine of the loop resumed by another thread (there, one loop iteration
  after the callback; here, from inside it).

The timed window is the driver's, as for every arm: ``t0`` right before the
notify call and nothing between (:mod:`wakelab.core.drivers`), a delay planted
there through ``MeasureParams.planted_delay_us``, closed loop only (neither
the loop driver nor the task driver has an open loop).  trio, anyio and gevent
run on the task driver (:mod:`wakelab.core.drivers.task`), which owns the
waiter thread, the handshake, the settle, ``t0``, lost and stale wakes; this
module only enters each library's loop and describes its moves there as a
:class:`~wakelab.core.drivers.task.TaskPath`.

gevent and global state.  gevent is never monkey-patched here: monkey-patching
would turn ``threading`` (and ``time.sleep``, ``socket``, ``select`` ...) into
greenlet versions for the whole process, corrupting every other arm measured
in it.  The arm uses gevent's own API only, in a thread of its own: the hub
and its loop are created in the arm's waiter thread (gevent keeps one hub per
thread; a hub outside the main thread installs no signal handler) and
destroyed, loop and watcher closed, before the arm returns, so nothing of it
is left in the process -- which makes the arm safe in-process too
(``--in-process``, the test suite), and in a worker it runs in a fresh process
of its own anyway.  Conversely, in an interpreter where something else has
already monkey-patched (gevent.monkey reports a patched module) the arm
refuses: its notifier and waiter would not be real threads.

trio, anyio and uvloop leave no global state either: each loop runs in the
waiter thread (none of them installs signal handlers or a wakeup fd outside
the main thread) and is closed when the arm ends.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import importlib.util
import sys
from typing import Any, Callable, Dict, List, Optional

from wakelab.core.drivers import loop as loop_driver
from wakelab.core.drivers import task as task_driver
from wakelab.core.drivers.task import TaskPath, WaiterLoop, run_unsuspended
from wakelab.core.families import aio, this_python
from wakelab.core.model import BLOCKED, CALLBACK, CROSS_THREAD, LATENCY, NEAREST, Arm, Family, MeasureParams, RawLatency, T1Shape, now_ns

# Tol's wine, a darker kin of asyncio's reddish purple (Okabe-Ito has no colour left that is not
# its sky blue, the colour of a family a report does not know).
FAMILY = Family(id="asynclibs", title="Async libraries (optional)", color="#882255", order=50)

#: Each arm's stdlib counterpart: the asyncio arm that is the same experiment on the stdlib loop.
COUNTERPARTS: Dict[str, str] = {
    "uvloop-call-soon-threadsafe": "call-soon-threadsafe",
    "trio-token-event": "asyncio-event",
    "anyio-asyncio-run-sync": "call-soon-threadsafe",
    "anyio-trio-run-sync": "call-soon-threadsafe",
    "gevent-async-watcher": "asyncio-event",
}


# -- availability ---------------------------------------------------------------


_site_state = {"started": False}


def see_site_packages() -> None:
    """In a process started with ``python -S`` (every worker), start ``site`` as a normal start would.

    Workers run with ``-S`` so that the measuring process holds the standard
    library and wakelab only, and starts fast.  These arms measure a library
    installed in the measuring interpreter, so the worker that measures one
    of them -- a fresh process measuring that one arm, then exiting -- first
    makes the interpreter's site directories importable, exactly as a start
    without ``-S`` does (``site.main()``: the venv's or the user's
    site-packages, ``.pth`` files, ``sitecustomize``).  Nothing changes in a
    process that started ``site`` already (``--in-process``, the test suite,
    the CLI).
    """
    if not sys.flags.no_site or _site_state["started"]:
        return
    _site_state["started"] = True
    import site

    site.main()


def uninstalled_reason(*modules: str) -> Optional[str]:
    """None when every one of ``modules`` is installed in this interpreter, else why not.

    Looks without importing (``find_spec`` of a top-level name imports nothing):
    what ``wakelab list`` shows (:data:`LISTING_CHECKS`).
    """
    see_site_packages()
    for module in modules:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            return "%s is not installed in this interpreter (%s)" % (module, this_python())
    return None


def unimportable_reason(*modules: str) -> Optional[str]:
    """None when every one of ``modules`` imports in this interpreter, else why not.

    Looks first without importing (:func:`uninstalled_reason`: an absent
    library costs nothing), then imports, so that an installed library that
    fails to import (a wheel built for another Python) is a reason too, not a
    failed arm.
    """
    reason = uninstalled_reason(*modules)
    if reason is not None:
        return reason
    for module in modules:
        try:
            importlib.import_module(module)
        except Exception as exc:  # an ImportError, or whatever a broken extension raises
            return "%s does not import in this interpreter (%s): %s" % (module, this_python(), exc)
    return None


def requires_uvloop() -> Optional[str]:
    reason = unimportable_reason("uvloop")
    if reason is not None:
        return reason
    # libuv opens one process-wide pipe (its signal lock) with the first loop of the process and
    # keeps it until exit.  Making that first loop here, outside the arm, checks that uvloop can
    # make a loop at all, and leaves the arm itself with nothing of its own to leave behind.
    try:
        new_uvloop().close()
    except Exception as exc:
        return "uvloop cannot make a loop in this interpreter (%s): %s" % (this_python(), exc)
    return None


def requires_trio() -> Optional[str]:
    return unimportable_reason("trio")


def requires_anyio_asyncio() -> Optional[str]:
    return unimportable_reason("anyio")


def requires_anyio_trio() -> Optional[str]:
    return unimportable_reason("anyio", "trio")


def requires_gevent() -> Optional[str]:
    reason = unimportable_reason("gevent")
    if reason is not None:
        return reason
    importlib.import_module("gevent.monkey")  # importing it patches nothing
    return _gevent_patched_reason()


def _gevent_patched_reason() -> Optional[str]:
    """Why the gevent arm refuses, if gevent's monkey-patching is active here (None if not)."""
    monkey = sys.modules.get("gevent.monkey")
    if monkey is not None and monkey.is_anything_patched():
        return ("gevent's monkey-patching is active in this interpreter: threading is green here, so the arm "
                "could not wake a greenlet from a real thread")
    return None


def listed_gevent_reason() -> Optional[str]:
    """:func:`requires_gevent` without importing gevent: nothing can be patched before
    ``gevent.monkey`` is imported, so only a process that imported it already can be patched."""
    return uninstalled_reason("gevent") or _gevent_patched_reason()


# Availability without importing, by arm: what ``wakelab list`` shows.  Importing uvloop, trio,
# anyio and gevent costs the listing most of a second, and importing them in the CLI's process
# proves little about the measuring interpreter anyway.  The full check -- the arm's ``requires``:
# the import, uvloop's first loop, gevent's monkey-patching -- runs where the arm is measured:
# in the worker (``harness.worker.handle``) or the in-process runner, before
# ``worker_conditions`` and ``measure``, so outside the timed window; the worker template
# preloads this module, which imports none of the libraries.  An installed library that does
# not import is listed as available and skipped, with its reason, when it is run.
LISTING_CHECKS: Dict[str, Callable[[], Optional[str]]] = {
    "uvloop-call-soon-threadsafe": functools.partial(uninstalled_reason, "uvloop"),
    "trio-token-event": functools.partial(uninstalled_reason, "trio"),
    "anyio-asyncio-run-sync": functools.partial(uninstalled_reason, "anyio"),
    "anyio-trio-run-sync": functools.partial(uninstalled_reason, "anyio", "trio"),
    "gevent-async-watcher": listed_gevent_reason,
}


def _version(distribution: str) -> str:
    """``trio 0.35.0``: the installed distribution's name and version (read after the wakes)."""
    try:
        import importlib.metadata

        return "%s %s" % (distribution, importlib.metadata.version(distribution))
    except Exception:  # no metadata (a vendored copy): the name alone
        return distribution


def _with_info(raw: RawLatency, facts: Dict[str, object]) -> RawLatency:
    """``raw`` with the library's facts (name and version, its loop) added to its info.

    ``site_started``: this process started ``site`` for the arm (a ``python -S`` worker:
    :func:`see_site_packages`).
    """
    return dataclasses.replace(raw, info={**raw.info, **facts, "site_started": _site_state["started"]})


# -- uvloop: the loop driver, with a uvloop loop ----------------------------------------


def new_uvloop() -> Any:
    """A fresh ``uvloop.Loop`` with debug mode off (as the loop driver's stdlib loop)."""
    import uvloop

    loop = uvloop.new_event_loop()
    loop.set_debug(False)
    return loop


def measure_uvloop_call_soon_threadsafe(params: MeasureParams) -> RawLatency:
    """Wake latency (ns) of ``loop.call_soon_threadsafe(cb)`` reaching ``cb`` on an idle uvloop loop in a waiter thread."""
    raw = loop_driver.measure(params, aio.call_soon_threadsafe_path, loop_factory=new_uvloop, name="wakelab-uvloop-loop")
    return _with_info(raw, {"library": _version("uvloop")})


# -- trio: a task woken through the run's token -----------------------------------------


def trio_runner(waiter_loop: WaiterLoop) -> None:
    """In the waiter thread: ``trio.run`` a task that awaits a fresh ``trio.Event`` per wake."""
    import trio

    async def main() -> None:
        run_sync_soon = trio.lowlevel.current_trio_token().run_sync_soon
        current: List[Any] = [trio.Event()]

        def prepare() -> None:
            current[0] = trio.Event()

        async def wait(timeout_s: float) -> Optional[int]:
            event = current[0]
            with trio.move_on_after(timeout_s):
                await event.wait()
                t1 = now_ns()
                return t1
            return None

        def bind() -> Callable[[], object]:
            return functools.partial(run_sync_soon, current[0].set)

        await waiter_loop(TaskPath(prepare=prepare, wait=wait, bind=bind))

    trio.run(main)


def measure_trio_token_event(params: MeasureParams) -> RawLatency:
    """Wake latency (ns) of ``TrioToken.run_sync_soon(event.set)`` reaching the trio task awaiting ``event.wait()``."""
    raw = task_driver.measure(params, trio_runner, name="wakelab-trio-loop")
    return _with_info(raw, {"library": _version("trio"), "loop": "trio.run"})


# -- anyio: from_thread.run_sync on either backend ------------------------------------


class _Stamped:
    """One wake of an anyio arm: the function the notify runs in the loop, and what it saw."""

    __slots__ = ("event", "t1")

    def __init__(self, event: Any) -> None:
        self.event = event
        self.t1: Optional[int] = None

    def stamp(self) -> None:
        """Run in the loop by ``anyio.from_thread.run_sync``: ``t1`` is its first statement."""
        t1 = now_ns()
        self.t1 = t1
        self.event.set()


def anyio_runner(backend: str, facts: Dict[str, object]) -> Callable[[WaiterLoop], None]:
    """The runner for ``anyio.run(..., backend=backend)``: the task awaits the Event each wake's function sets.

    ``facts`` receives the loop the backend really ran (the asyncio loop's class).
    """

    def runner(waiter_loop: WaiterLoop) -> None:
        import anyio
        import anyio.from_thread
        import anyio.lowlevel

        async def main() -> None:
            facts["loop"] = _running_loop_name(backend)
            token = anyio.lowlevel.current_token()
            run_sync = anyio.from_thread.run_sync
            current: List[_Stamped] = [_Stamped(anyio.Event())]

            def prepare() -> None:
                current[0] = _Stamped(anyio.Event())

            async def wait(timeout_s: float) -> Optional[int]:
                wake = current[0]
                with anyio.move_on_after(timeout_s):
                    await wake.event.wait()
                return wake.t1  # taken in the loop, in stamp

            def bind() -> Callable[[], object]:
                return functools.partial(run_sync, current[0].stamp, token=token)

            await waiter_loop(TaskPath(prepare=prepare, wait=wait, bind=bind))

        anyio.run(main, backend=backend, backend_options=_ANYIO_OPTIONS[backend])

    return runner


def _running_loop_name(backend: str) -> str:
    if backend != "asyncio":
        return "trio.run"
    import asyncio

    loop = asyncio.get_running_loop()
    if isinstance(loop, asyncio.SelectorEventLoop):
        return "asyncio.SelectorEventLoop"
    return "%s.%s" % (type(loop).__module__, type(loop).__qualname__)


#: The backends' loops, pinned: the asyncio backend on the loop driver's stdlib selector loop with
#: debug off (never an installed policy's uvloop, never -X dev's debug mode); trio as it comes.
_ANYIO_OPTIONS: Dict[str, Dict[str, object]] = {
    "asyncio": {"debug": False, "loop_factory": loop_driver.new_loop},
    "trio": {},
}


def _measure_anyio(params: MeasureParams, backend: str) -> RawLatency:
    facts: Dict[str, object] = {}
    raw = task_driver.measure(params, anyio_runner(backend, facts), name="wakelab-anyio-%s-loop" % backend)
    library = _version("anyio") + ("" if backend == "asyncio" else " (%s)" % _version("trio"))
    return _with_info(raw, {"library": library, "backend": backend, **facts})


def measure_anyio_asyncio_run_sync(params: MeasureParams) -> RawLatency:
    """Wake latency (ns) of ``anyio.from_thread.run_sync(fn, token=...)`` reaching ``fn`` in anyio's asyncio backend."""
    return _measure_anyio(params, "asyncio")


def measure_anyio_trio_run_sync(params: MeasureParams) -> RawLatency:
    """Wake latency (ns) of ``anyio.from_thread.run_sync(fn, token=...)`` reaching ``fn`` in anyio's trio backend."""
    return _measure_anyio(params, "trio")


# -- gevent: a greenlet woken through its hub's async watcher --------------------------


def gevent_runner(facts: Dict[str, object]) -> Callable[[WaiterLoop], None]:
    """The runner for a gevent hub of the waiter thread's own; ``facts`` receives its loop's description."""

    def runner(waiter_loop: WaiterLoop) -> None:
        import gevent

        hub = gevent.get_hub()  # this thread's hub, created here (never the main thread's)
        try:
            watcher = hub.loop.async_()
            try:
                facts["loop"] = "gevent %s, %s" % (type(hub.loop).__module__, getattr(hub.loop, "backend", "?"))
                hub_wait = hub.wait

                def prepare() -> None:
                    """Nothing per wake: ``hub.wait`` starts the watcher, which forgets an earlier send."""

                async def wait(timeout_s: float) -> Optional[int]:
                    with gevent.Timeout(timeout_s, False):
                        hub_wait(watcher)
                        t1 = now_ns()
                        return t1
                    return None

                run_unsuspended(waiter_loop(TaskPath(prepare=prepare, wait=wait, notify=watcher.send)))
            finally:
                watcher.close()
        finally:
            hub.destroy(destroy_loop=True)

    return runner


def measure_gevent_async_watcher(params: MeasureParams) -> RawLatency:
    """Wake latency (ns) of ``watcher.send()`` (a gevent async watcher) reaching the greenlet blocked in ``hub.wait``."""
    facts: Dict[str, object] = {}
    raw = task_driver.measure(params, gevent_runner(facts), name="wakelab-gevent-hub")
    return _with_info(raw, {"library": _version("gevent"), "monkey_patched": False, **facts})


# Every arm on the task driver, by name: its runner factory (tests run it against a notifier
# that never notifies).
RUNNERS: Dict[str, Callable[[], Callable[[WaiterLoop], None]]] = {
    "trio-token-event": lambda: trio_runner,
    "anyio-asyncio-run-sync": lambda: anyio_runner("asyncio", {}),
    "anyio-trio-run-sync": lambda: anyio_runner("trio", {}),
    "gevent-async-watcher": lambda: gevent_runner({}),
}


def _arm(name: str, driver: str, mechanism: str, t0: str, t1: str,
         measure: Callable[[MeasureParams], RawLatency], requires: Callable[[], Optional[str]]) -> Arm:
    return Arm(name=name, family=FAMILY.id, driver=driver, kind=LATENCY, mechanism=mechanism, waiter=BLOCKED,
               scope=CROSS_THREAD, t0=t0, t1=t1, measure=measure, requires=requires,
               native="native-selector-pipe", native_match=NEAREST, t1_shape=T1Shape("epoll", CALLBACK))


# Native floor ("vs C", declared by _arm): as for the asyncio arms, native-selector-pipe is the
# nearest C experiment (a thread parked in epoll_wait, woken by a write), never a matched one: t1
# here is in a callback or a task the library's loop dispatches after its poll.
ARMS: List[Arm] = [
    _arm(
        "uvloop-call-soon-threadsafe", "loop",
        mechanism="loop.call_soon_threadsafe(cb) from the main thread wakes an idle uvloop loop (libuv, epoll) in a worker thread; counterpart: call-soon-threadsafe",
        t0="main thread: perf_counter_ns() immediately before loop.call_soon_threadsafe(cb) on the uvloop loop",
        t1="loop thread: perf_counter_ns() as the first statement of cb",
        measure=measure_uvloop_call_soon_threadsafe,
        requires=requires_uvloop,
    ),
    _arm(
        "trio-token-event", "task",
        mechanism="TrioToken.run_sync_soon(event.set) from the main thread wakes a task awaiting trio.Event.wait() in trio.run (idle in epoll) in a worker thread; counterpart: asyncio-event",
        t0="main thread: perf_counter_ns() immediately before token.run_sync_soon(event.set)",
        t1="trio thread: perf_counter_ns() as the first statement after `await event.wait()` returns in the waiting task",
        measure=measure_trio_token_event,
        requires=requires_trio,
    ),
    _arm(
        "anyio-asyncio-run-sync", "task",
        mechanism="anyio.from_thread.run_sync(fn, token=token) from the main thread runs fn in an idle anyio event loop (asyncio backend, stdlib selector loop) in a worker thread, blocking until fn returns; counterpart: call-soon-threadsafe",
        t0="main thread: perf_counter_ns() immediately before anyio.from_thread.run_sync(fn, token=token)",
        t1="loop thread: perf_counter_ns() as the first statement of fn",
        measure=measure_anyio_asyncio_run_sync,
        requires=requires_anyio_asyncio,
    ),
    _arm(
        "anyio-trio-run-sync", "task",
        mechanism="anyio.from_thread.run_sync(fn, token=token) from the main thread runs fn in an idle anyio event loop (trio backend: trio.from_thread.run_sync) in a worker thread, blocking until fn returns; counterpart: call-soon-threadsafe",
        t0="main thread: perf_counter_ns() immediately before anyio.from_thread.run_sync(fn, token=token)",
        t1="trio thread: perf_counter_ns() as the first statement of fn",
        measure=measure_anyio_trio_run_sync,
        requires=requires_anyio_trio,
    ),
    _arm(
        "gevent-async-watcher", "task",
        mechanism="watcher.send() on a gevent async watcher (hub.loop.async_()) from the main thread wakes a greenlet blocked in hub.wait(watcher) in a worker thread whose hub is idle in epoll (no monkey-patching); counterpart: asyncio-event",
        t0="main thread: perf_counter_ns() immediately before watcher.send()",
        t1="waiter thread: perf_counter_ns() as the first statement after hub.wait(watcher) returns in the waiting greenlet",
        measure=measure_gevent_async_watcher,
        requires=requires_gevent,
    ),
]

