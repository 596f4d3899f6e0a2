"""What a waiter re-blocked on, and who woke it: naming each further sleep of a traced wake (docs/tracing.md).

A ``futex`` whose word lies in the interpreter's own static data is *the GIL* (CPython keeps it in ``_PyRuntime``;
the worker reports those ranges); any other futex is *a lock*.  CPython's GIL wait is a timed wait (time out, ask the
holder to drop it, wait again), so the timed-out sleeps are credited to the holder that ended the run of waits on
the same thing.  A re-block's *cause* is ``ON/WHO`` (``gil/busy``, ``timer/timeout`` ...).  Not told apart: *which*
lock, and a subinterpreter's own GIL (on the heap: it reads as a lock)."""

from __future__ import annotations

import bisect
import dataclasses
from typing import Any, Dict, FrozenSet, Iterable, Optional, Sequence, Tuple

#: What a re-block waited on, in the order they are shown, as a sentence names each.
ON_PHRASES: Dict[str, str] = {"gil": "the GIL", "lock": "a lock", "fd": "an fd", "timer": "a timer", "signal": "a signal",
                              "child": "a child", "other": "something untraced"}
BLOCKED_ON: Tuple[str, ...] = tuple(ON_PHRASES)
#: Who woke (or held) it.
WHO_PHRASES: Dict[str, str] = {"notifier": "the notifier", "busy": "a busy thread", "thread": "another thread",
                               "process": "another process", "timeout": "a timeout", "unknown": "an unseen waker"}
WAKERS: Tuple[str, ...] = tuple(WHO_PHRASES)

# The system calls a traced run follows (harness.trace.SYSCALLS), by what their sleep waits on.
_SYSCALL_ON: Dict[str, str] = {
    "read": "fd", "readv": "fd", "recvfrom": "fd", "recvmsg": "fd", "select": "fd", "pselect6": "fd",
    "poll": "fd", "ppoll": "fd", "epoll_wait": "fd", "epoll_pwait": "fd", "epoll_pwait2": "fd",
    "clock_nanosleep": "timer", "nanosleep": "timer",
    "rt_sigtimedwait": "signal", "rt_sigsuspend": "signal", "pause": "signal",
    "wait4": "child", "waitid": "child",
}
# What a call returns when its wait ran out (a timeout), not when something arrived: -ETIMEDOUT, -EAGAIN, or 0.
_TIMEOUT_RETURNS: Dict[str, int] = {"futex": -110, "rt_sigtimedwait": -11, **dict.fromkeys((
    "select", "pselect6", "poll", "ppoll", "epoll_wait", "epoll_pwait", "epoll_pwait2", "clock_nanosleep", "nanosleep"), 0)}


@dataclasses.dataclass(frozen=True)
class WaiterContext:
    """What the split knows about the waiter's surroundings, to name its re-blocks; ``gil_ranges``: the address
    ranges of the interpreter's own static data in process ``waiter_pid`` (empty for a C floor)."""

    notifier_tid: Optional[int] = None
    busy_tids: FrozenSet[int] = frozenset()
    gil_ranges: Tuple[Tuple[int, int], ...] = ()
    waiter_pid: Optional[int] = None
    # (time_ns, tid): the other threads' wakes of the GIL's waiters (drop_gil signalling its
    # condition), in time order -- who let go of it (:func:`gil_releases`).
    gil_releases: Tuple[Tuple[int, int], ...] = ()

    def in_gil(self, address: int, tgid: int) -> bool:
        if self.waiter_pid and tgid and tgid != self.waiter_pid:
            return False
        return any(start <= address < end for start, end in self.gil_ranges)


def context_from(info: dict, busy_tids: Iterable[int] = ()) -> WaiterContext:
    """A :class:`WaiterContext` from a traced worker's ``info`` and its busy threads."""
    data = info.get("interpreter_data")
    ranges: Tuple[Tuple[int, int], ...] = ()
    pid: Optional[int] = None
    if isinstance(data, dict):
        raw = data.get("ranges")
        if isinstance(raw, list):
            ranges = tuple((int(r[0]), int(r[1])) for r in raw
                           if isinstance(r, (list, tuple)) and len(r) == 2 and all(isinstance(v, int) for v in r))
        if isinstance(data.get("pid"), int):
            pid = data["pid"]
    notifier = info.get("notifier_tid")
    return WaiterContext(notifier_tid=notifier if isinstance(notifier, int) else None, gil_ranges=ranges, waiter_pid=pid,
                         busy_tids=frozenset(int(t) for t in busy_tids if isinstance(t, int)))


# futex operations that wake waiters (FUTEX_WAKE, FUTEX_WAKE_OP, FUTEX_WAKE_BITSET), private flag
# and clock flag masked off.
_FUTEX_WAKES = frozenset((1, 5, 10))


def gil_releases(events: Iterable[Any], context: WaiterContext) -> Tuple[Tuple[int, int], ...]:
    """``(time_ns, tid)`` of every futex wake on the GIL among ``events``: a thread letting go of the GIL while
    another waits for it (CPython's drop_gil signalling its condition)."""
    found = [(e.time_ns, e.tid) for e in events
             if e.kind == "enter" and e.syscall == "futex" and (e.arg1 & 0x7F) in _FUTEX_WAKES
             and context.in_gil(e.arg0, e.tgid)]
    return tuple(sorted(found))


def blocked_on(syscall: str, address: int, tgid: int, context: WaiterContext) -> str:
    """What a sleep in ``syscall`` (``""``: none seen open) waited on: one of :data:`BLOCKED_ON`."""
    if syscall == "futex":
        return "gil" if context.in_gil(address, tgid) else "lock"
    return _SYSCALL_ON.get(syscall, "other")


def timed_out(syscall: str, ret: int) -> bool:
    """True when ``syscall`` returning ``ret`` says its wait ran out rather than being woken."""
    return _TIMEOUT_RETURNS.get(syscall) == ret


def waker_role(tid: int, tgid: int, waiter_tgid: int, context: WaiterContext) -> str:
    """Who raised a wake, thread ``tid`` of process ``tgid``: one of :data:`WAKERS` but ``timeout``."""
    if context.notifier_tid and tid == context.notifier_tid:
        return "notifier"
    if tid in context.busy_tids:
        return "busy"
    if tid and tgid and waiter_tgid:
        return "thread" if tgid == waiter_tgid else "process"
    return "unknown"


@dataclasses.dataclass(frozen=True)
class Reblock:
    """One further sleep of the waiter after it first ran: what it waited ``on``, who woke it (``by``) and who held
    it (empty/None: no thread)."""

    on: str
    by: str
    asleep_ns: int
    holder: str = ""
    holder_tid: Optional[int] = None
    syscall: str = ""
    address: Optional[int] = None
    ended_ns: int = 0  # when its sleep ended (CLOCK_MONOTONIC), 0: not known

    @property
    def cause(self) -> str:
        return "%s/%s" % (self.on, self.holder or self.by)


def resolve_holders(reblocks: Sequence[Reblock], context: Optional[WaiterContext] = None,
                    waiter_tgid: int = 0) -> Tuple[Reblock, ...]:
    """Each re-block with its holder: a run of sleeps on the same thing that timed out is credited to the thread whose
    wake ended the run; a GIL wait with no such wake after it, to the first thread that let go of the GIL after it."""
    out = list(reblocks)
    pending: list = []
    for i, block in enumerate(out):
        if block.by == "timeout":
            pending.append(i)
            continue
        holder = block.by if block.by != "unknown" else ""
        for j in pending:
            if out[j].on == block.on and not out[j].holder:
                out[j] = dataclasses.replace(out[j], holder=holder, holder_tid=block.holder_tid)
        pending = []
        out[i] = dataclasses.replace(block, holder=holder)
    releases = context.gil_releases if context is not None else ()
    times = [t for t, _ in releases]
    for i, block in enumerate(out):
        if block.by != "timeout" or block.on != "gil" or block.holder or not block.ended_ns:
            continue
        at = bisect.bisect_left(times, block.ended_ns)
        if context is not None and at < len(releases):
            tid = releases[at][1]
            out[i] = dataclasses.replace(block, holder=waker_role(tid, waiter_tgid, waiter_tgid, context), holder_tid=tid)
    return tuple(out)


def cause_phrase(cause: str) -> str:
    """``gil/busy`` as "re-blocked on the GIL a busy thread held" (a sentence's part)."""
    on, _, who = cause.partition("/")
    what = ON_PHRASES.get(on, on)
    if who == "timeout":
        return "re-blocked on %s until a timeout" % what
    whom = WHO_PHRASES.get(who, who)
    if on in ("gil", "lock"):
        return "re-blocked on %s %s held" % (what, whom)
    return "re-blocked on %s until %s woke it" % (what, whom)


def cause_order(causes: Iterable[str]) -> list:
    """Causes by what was waited on (:data:`BLOCKED_ON`), then by who (:data:`WAKERS`)."""
    def key(cause: str) -> Tuple[int, int, str]:
        on, _, who = cause.partition("/")
        return (BLOCKED_ON.index(on) if on in BLOCKED_ON else len(BLOCKED_ON),
                WAKERS.index(who) if who in WAKERS else len(WAKERS), cause)

    return sorted(set(causes), key=key)
