"""A job queue's wake-up: a job handed to a worker thread through a socket.

Run it::

    wakelab run --arm-file examples/arms_jobqueue.py
    wakelab run --arm-file examples/arms_jobqueue.py --arms jobqueue-socket,socketpair   # beside the built-in fd arm

Many job queues (and event loops) keep their jobs in memory and wake the
consumer through a file descriptor it can wait on together with others: the
producer appends the job, then writes one byte to a socket; the consumer
sleeps in ``select``/``epoll``, reads the byte, and takes the job.  This arm
measures that whole hand-off, through a ``selectors`` selector on a
``socket.socketpair()``.  Its stdlib counterpart is the built-in
``socketpair`` arm (the bare socket wake, without selector and job).

Standard library only: the arm runs on every interpreter ``--python all``
finds.  ``requires`` skips it, with the reason, where there is no
``socket.socketpair``.
"""

from __future__ import annotations

import collections
import functools
import selectors
import socket
from typing import Deque, Optional

from wakelab.api.v1 import BLOCKED, CROSS_THREAD, Arm, WakePath, now_ns


class JobQueue:
    """Jobs in a deque; one byte on a socket per submitted job wakes the consumer."""

    def __init__(self) -> None:
        self._jobs: Deque[object] = collections.deque()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._wake_r, selectors.EVENT_READ)

    def submit(self, job: object) -> None:
        self._jobs.append(job)
        self._wake_w.send(b"j")

    def next_job(self, timeout: float) -> Optional[object]:
        """Sleep in the selector until a job is due (None after ``timeout`` seconds); take it."""
        if not self._selector.select(timeout):
            return None
        self._drain()
        return self._jobs.popleft() if self._jobs else None

    def _drain(self) -> None:
        try:
            while self._wake_r.recv(4096):
                pass
        except BlockingIOError:
            pass

    def clear(self) -> None:
        self._drain()
        self._jobs.clear()


def jobqueue_path() -> WakePath:
    """A fresh job queue: ``submit()`` wakes ``next_job()``; ``t1`` once the job is taken."""
    jobs = JobQueue()

    def wait(timeout_s: float) -> Optional[int]:
        job = jobs.next_job(timeout_s)
        t1 = now_ns()
        return None if job is None else t1

    # functools.partial, not a lambda: it adds no Python frame between t0 and the notify.
    return WakePath(reset=jobs.clear, wait_stamped=wait, notify=functools.partial(jobs.submit, "job"))


def _needs_socketpair() -> Optional[str]:
    return None if hasattr(socket, "socketpair") else "socket.socketpair does not exist here"


ARMS = [
    Arm(
        name="jobqueue-socket",
        family="fds",
        waiter=BLOCKED,
        scope=CROSS_THREAD,
        mechanism="a job queue: submit() appends the job to a deque and sends one byte on a socketpair; the worker "
                  "sleeps in a selectors selector, drains the socket and pops the job",
        t0="main thread: perf_counter_ns() immediately before JobQueue.submit() (deque append, then socket send)",
        t1="worker thread: perf_counter_ns() as the first statement after next_job() returns the job (selector woke, "
           "byte drained, job popped)",
        path=jobqueue_path,
        requires=_needs_socketpair,
    ),
]
