"""A library's notify path: a mailbox built on a condition variable.

Run it::

    wakelab run --arm-file examples/arms_mailbox.py
    wakelab run --arm-file examples/arms_mailbox.py --arms mailbox,queue   # beside the stdlib's queue.Queue

``Mailbox`` stands for the kind of class a library ships: a lock, a
``threading.Condition`` on it, and ``put`` / ``get`` methods that hide them.
The arm measures the library's own public calls, exactly as a user of the
library makes them: ``Mailbox.put()`` in one thread waking a thread blocked
in ``Mailbox.get(timeout)``.  Its stdlib counterpart is the built-in
``queue`` arm (``queue.Queue`` is the same design in the standard library).

Only the standard library and wakelab.api.v1 are imported, so the arm runs
on every interpreter ``--python all`` finds.
"""

from __future__ import annotations

import collections
import functools
import threading
from typing import Deque, Optional

from wakelab.api.v1 import BLOCKED, CROSS_THREAD, Arm, WakePath, now_ns


class Mailbox:
    """A tiny unbounded channel: what a library's notify path often looks like."""

    def __init__(self) -> None:
        self._items: Deque[object] = collections.deque()
        self._cond = threading.Condition(threading.Lock())

    def put(self, item: object) -> None:
        with self._cond:
            self._items.append(item)
            self._cond.notify()

    def get(self, timeout: float) -> Optional[object]:
        """The oldest item, or None if none came within ``timeout`` seconds."""
        with self._cond:
            if not self._cond.wait_for(lambda: self._items, timeout):
                return None
            return self._items.popleft()

    def clear(self) -> None:
        with self._cond:
            self._items.clear()


def mailbox_path() -> WakePath:
    """A fresh mailbox: ``put()`` wakes ``get()``; ``t1`` as soon as ``get()`` returns an item."""
    box = Mailbox()

    def wait(timeout_s: float) -> Optional[int]:
        item = box.get(timeout_s)
        t1 = now_ns()
        return None if item is None else t1

    # functools.partial, not a lambda: it adds no Python frame between t0 and the notify.
    return WakePath(reset=box.clear, wait_stamped=wait, notify=functools.partial(box.put, "job"))


ARMS = [
    Arm(
        name="mailbox",
        family="threads",
        waiter=BLOCKED,
        scope=CROSS_THREAD,
        mechanism="a library's Mailbox (deque + threading.Condition on a Lock): put() in the main thread wakes a "
                  "worker blocked in get(timeout), i.e. Condition.wait_for()",
        t0="main thread: perf_counter_ns() immediately before Mailbox.put() (which takes the lock, appends, notifies, releases)",
        t1="worker thread: perf_counter_ns() as the first statement after Mailbox.get() returns the item (lock released)",
        path=mailbox_path,
    ),
]
