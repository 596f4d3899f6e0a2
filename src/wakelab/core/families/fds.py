"""File-descriptor arms: a waiter thread blocked on an fd, woken by a write from the main thread.

Every arm here is the same experiment with a different kernel object in the
middle: the waiter thread sits in ``poll`` (or the selector's ``epoll``)
until the fd turns readable, takes ``t1`` as the first statement after that
wait returns, then reads the token; the main thread writes one token.  The C
floor takes ``t1`` at the same point (after ``poll``/``epoll_wait``, before the
read), so the two divide like by like.  ``socketpair`` is the exception: its
``recv`` with a timeout polls and reads in one call, so ``t1`` follows the
read there.  A readable fd that yields no token (a spurious wake-up) is not a
wake: the waiter goes back to waiting, and the ``t1`` of the poll that did
bring the token is the one kept.

All of them run on the thread driver (:mod:`wakelab.core.drivers.thread`):
the waiter announces itself, the notifier lets ``settle_us`` pass so the
waiter is parked in the kernel, then takes ``t0`` and writes.

The read side is non-blocking and ``reset()`` drains it before every wake,
so a token that arrives late (after its wake was already counted lost)
cannot turn the next wake into a zero-latency fake.  Every fd is closed in
``finally``.
"""

from __future__ import annotations

import functools
import os
import select
import selectors
import socket
from typing import Callable, List, Optional, Tuple

from wakelab.core.drivers import WakePath
from wakelab.core.drivers import thread as driver
from wakelab.core.families import this_python
from wakelab.core.model import (
    AFTER_READ,
    AFTER_WAIT,
    BLOCKED,
    CROSS_THREAD,
    LATENCY,
    MATCHED,
    Arm,
    Family,
    MeasureParams,
    RawLatency,
    T1Shape,
    now_ns,
    with_info,
)

FAMILY = Family(id="fds", title="File descriptors", color="#009E73", order=30, user_arms=True)

_TOKEN = b"x"


def _poll_then_read(fd: int, read_token: Callable[[], bool]) -> Callable[[float], Optional[int]]:
    """A stamped ``wait(timeout_s)``: poll ``fd`` for POLLIN, take ``t1``, then ``read_token()``.

    ``read_token`` does one non-blocking read and says whether it got a
    token; a readable fd that yields nothing (a spurious wake-up) sends us
    back to ``poll`` for the rest of the timeout.  Returns ``t1`` (None on
    timeout).  ``poll`` rather than ``select`` so a process with more than
    FD_SETSIZE fds still works.
    """
    if hasattr(select, "poll"):
        poller = select.poll()
        poller.register(fd, select.POLLIN)

        def wait_readable(timeout_s: float) -> bool:
            return bool(poller.poll(max(0, int(timeout_s * 1000.0 + 0.999))))

    else:  # pragma: no cover - platforms without poll()

        def wait_readable(timeout_s: float) -> bool:
            return bool(select.select([fd], [], [], timeout_s)[0])

    def wait(timeout_s: float) -> Optional[int]:
        deadline_ns = now_ns() + int(timeout_s * 1e9)
        while True:
            remaining_s = (deadline_ns - now_ns()) / 1e9
            if remaining_s <= 0:
                return None
            readable = wait_readable(remaining_s)
            t1 = now_ns()
            if readable and read_token():
                return t1

    return wait


# -- pipe -------------------------------------------------------------------


def _token_reader(read_fd: int) -> Tuple[Callable[[], bool], Callable[[], None]]:
    """``(read_token, drain)`` for a non-blocking pipe read end.

    ``read_token()`` consumes what is there and says whether anything was;
    ``drain()`` empties the pipe, so a late token cannot fake the next wake.
    """

    def read_token() -> bool:
        try:
            return bool(os.read(read_fd, 64))
        except BlockingIOError:
            return False

    def drain() -> None:
        while read_token():
            pass

    return read_token, drain


def _measure_pipe(params: MeasureParams, payload: bytes) -> RawLatency:
    """Pipe wake with a configurable notify payload (an empty one writes nothing: a lost wake)."""
    read_fd, write_fd = os.pipe()
    try:
        os.set_blocking(read_fd, False)
        read_token, drain = _token_reader(read_fd)
        path = WakePath(reset=drain, wait_stamped=_poll_then_read(read_fd, read_token), notify=functools.partial(os.write, write_fd, payload))
        raw = driver.measure(params, path, "wakelab-pipe-waiter")
    finally:
        os.close(read_fd)
        os.close(write_fd)
    return with_info(raw, wait="poll, t1, read")


def measure_pipe(params: MeasureParams) -> RawLatency:
    """Wake latency (ns) of ``os.write`` of one byte waking a thread polling the pipe's read end."""
    return _measure_pipe(params, _TOKEN)


# -- eventfd ----------------------------------------------------------------


def requires_eventfd() -> Optional[str]:
    if not hasattr(os, "eventfd"):
        return "os.eventfd does not exist in %s: it needs Linux and Python 3.10 or newer" % this_python()
    return None


def measure_eventfd(params: MeasureParams) -> RawLatency:
    """Wake latency (ns) of ``os.eventfd_write(fd, 1)`` waking a thread polling the eventfd."""
    fd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
    try:

        def read_token() -> bool:
            try:
                os.eventfd_read(fd)
            except BlockingIOError:
                return False
            return True

        def drain() -> None:
            read_token()  # one read resets the counter to zero

        path = WakePath(reset=drain, wait_stamped=_poll_then_read(fd, read_token), notify=functools.partial(os.eventfd_write, fd, 1))
        raw = driver.measure(params, path, "wakelab-eventfd-waiter")
    finally:
        os.close(fd)
    return with_info(raw, wait="poll, t1, eventfd_read")


# -- socketpair -------------------------------------------------------------


def measure_socketpair(params: MeasureParams) -> RawLatency:
    """Wake latency (ns) of ``sock.send`` of one byte waking a thread in ``recv`` with a timeout.

    The receiving socket is in timeout mode, so CPython's ``recv`` itself
    polls the fd (bounded by ``timeout_s``) before reading: the path a
    program using ``settimeout`` gets.
    """
    sender, receiver = socket.socketpair()
    try:
        socket_family = socket.AddressFamily(sender.family).name

        def drain() -> None:
            receiver.setblocking(False)
            try:
                while receiver.recv(64):
                    pass
            except BlockingIOError:
                pass
            finally:
                receiver.settimeout(params.timeout_s)

        def wait(timeout_s: float) -> bool:
            # The timeout was set by drain(), outside the timed window.
            try:
                return bool(receiver.recv(1))
            except socket.timeout:
                return False

        path = WakePath(reset=drain, wait=wait, notify=functools.partial(sender.send, _TOKEN))
        raw = driver.measure(params, path, "wakelab-socketpair-waiter")
    finally:
        sender.close()
        receiver.close()
    return with_info(raw, wait="recv with settimeout", socket_family=socket_family)


# -- selector over a pipe ---------------------------------------------------


def measure_selector_pipe(params: MeasureParams) -> RawLatency:
    """Wake latency (ns) of a pipe write waking ``selectors.DefaultSelector.select()`` in a waiter thread.

    The selector (epoll on Linux) is the one an event loop would use; the
    waiter reads the byte before taking ``t1``, as a loop's self-pipe
    handler does.
    """
    read_fd, write_fd = os.pipe()
    selector = None  # type: Optional[selectors.BaseSelector]
    try:
        os.set_blocking(read_fd, False)
        selector = selectors.DefaultSelector()
        selector.register(read_fd, selectors.EVENT_READ)
        sel = selector
        read_token, drain = _token_reader(read_fd)

        def wait(timeout_s: float) -> Optional[int]:
            deadline_ns = now_ns() + int(timeout_s * 1e9)
            while True:
                remaining_s = (deadline_ns - now_ns()) / 1e9
                if remaining_s <= 0:
                    return None
                ready = sel.select(remaining_s)
                t1 = now_ns()
                if ready and read_token():
                    return t1

        path = WakePath(reset=drain, wait_stamped=wait, notify=functools.partial(os.write, write_fd, _TOKEN))
        raw = driver.measure(params, path, "wakelab-selector-waiter")
        selector_name = type(selector).__name__
    finally:
        if selector is not None:
            selector.close()
        os.close(read_fd)
        os.close(write_fd)
    return with_info(raw, wait="selector.select, t1, read", selector=selector_name)


ARMS: List[Arm] = [
    Arm(
        name="pipe",
        family="fds",
        driver="thread",
        kind=LATENCY,
        mechanism="os.write of one byte to a pipe in the main thread wakes a worker in poll() on the read end, then reads it",
        waiter=BLOCKED,
        scope=CROSS_THREAD,
        t0="main thread: perf_counter_ns() immediately before os.write(pipe_w, b'x')",
        t1="worker thread: perf_counter_ns() as the first statement after poll() returned readable (the byte is read after t1; a poll that yields no byte is not the wake)",
        measure=measure_pipe,
        native="native-pipe", native_match=MATCHED, t1_shape=T1Shape("poll", AFTER_WAIT),
    ),
    Arm(
        name="eventfd",
        family="fds",
        driver="thread",
        kind=LATENCY,
        mechanism="os.eventfd_write(fd, 1) in the main thread wakes a worker in poll() on the eventfd, which then reads it",
        waiter=BLOCKED,
        scope=CROSS_THREAD,
        t0="main thread: perf_counter_ns() immediately before os.eventfd_write(fd, 1)",
        t1="worker thread: perf_counter_ns() as the first statement after poll() returned readable (the counter is read after t1; a poll that yields nothing is not the wake)",
        measure=measure_eventfd,
        requires=requires_eventfd,
        native="native-eventfd", native_match=MATCHED, t1_shape=T1Shape("poll", AFTER_WAIT),
    ),
    Arm(
        name="socketpair",
        family="fds",
        driver="thread",
        kind=LATENCY,
        mechanism="socket.send of one byte on a socketpair in the main thread wakes a worker in recv() with a timeout",
        waiter=BLOCKED,
        scope=CROSS_THREAD,
        t0="main thread: perf_counter_ns() immediately before sock.send(b'x')",
        t1="worker thread: perf_counter_ns() as the first statement after sock.recv(1) returned the byte",
        measure=measure_socketpair,
        # CPython's recv with a timeout: poll, then recv, and t1 after both.
        native="native-socketpair", native_match=MATCHED, t1_shape=T1Shape("poll", AFTER_READ),
    ),
    Arm(
        name="selector-pipe",
        family="fds",
        driver="thread",
        kind=LATENCY,
        mechanism="os.write of one byte to a pipe wakes a worker in selectors.DefaultSelector().select() (epoll on Linux), which then reads it",
        waiter=BLOCKED,
        scope=CROSS_THREAD,
        t0="main thread: perf_counter_ns() immediately before os.write(pipe_w, b'x')",
        t1="worker thread: perf_counter_ns() as the first statement after selector.select() returned (the byte is read after t1; a select that yields no byte is not the wake)",
        measure=measure_selector_pipe,
        native="native-selector-pipe", native_match=MATCHED, t1_shape=T1Shape("epoll", AFTER_WAIT),
    ),
]
