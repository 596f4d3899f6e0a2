#!/usr/bin/env python3
"""What the notifier still runs, holding the GIL, after its notify call returns.

Under a GIL, a woken waiter cannot take ``t1`` until the notifier releases the
GIL, so the notifier's path from the notify call's return to its next blocking
wait is inside every cross-thread sample.  In every driver that path is: return
from the timed step (after ``after()``, if the arm has one) and enter the
completion handshake's ``Event.wait``, which parks on a lock and drops the GIL.

This script times the pieces in one thread, where nothing can block:

* ``step``: the unplanted timed step of ``wakelab.core.drivers.notify_step``
  with a no-op notify, minus a bare ``perf_counter_ns()`` call -- the cost of
  the step's own frame around the notify;
* ``Event.wait(0)`` on an unset Event: the whole handshake wait, up to a
  non-blocking acquire where the real wait parks, *and* its return path; the
  part before the park is a fraction of it, so this bounds the GIL-held tail.

Prints medians of ``--repeats`` rounds of ``--n`` calls each, in ns.
"""

from __future__ import annotations

import argparse
import threading
import time

import _common  # noqa: F401  (puts src/ on sys.path)
from _common import median

from wakelab.core.drivers import notify_step
from wakelab.core.model import MeasureParams


def _per_call_ns(fn, n: int) -> float:  # type: ignore[no-untyped-def]
    clock = time.perf_counter_ns
    start = clock()
    for _ in range(n):
        fn()
    return (clock() - start) / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()

    def nothing() -> None:
        return None

    step = notify_step(MeasureParams(), nothing)
    event = threading.Event()
    clock = time.perf_counter_ns
    rounds = []
    for _ in range(args.repeats):
        bare = _per_call_ns(clock, args.n)
        noop = _per_call_ns(nothing, args.n)
        stepped = _per_call_ns(step, args.n)
        waited = _per_call_ns(lambda: event.wait(0), args.n) - _per_call_ns(nothing, args.n)
        rounds.append((bare, noop, stepped, waited))
    bare = median([r[0] for r in rounds])
    noop = median([r[1] for r in rounds])
    stepped = median([r[2] for r in rounds])
    waited = median([r[3] for r in rounds])
    print("perf_counter_ns() call:                 %7.1f ns" % bare)
    print("no-op notify call:                      %7.1f ns" % noop)
    print("timed step (t0 + no-op notify):         %7.1f ns  (frame around the notify: %.1f ns)" % (
        stepped, stepped - bare - noop))
    print("Event.wait(0) on an unset Event:        %7.1f ns  (bounds the GIL-held tail after a notify)" % waited)


if __name__ == "__main__":
    main()
