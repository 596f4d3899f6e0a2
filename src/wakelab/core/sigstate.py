"""Save and restore the process's signal state around an arm.

Whatever an arm changes -- handlers, the calling thread's signal mask, the
wakeup fd -- is put back in ``finally``, also when the arm raises or the user
presses Ctrl-C.  Tests compare :func:`snapshot` before and after every arm.
"""

from __future__ import annotations

import contextlib
import dataclasses
import signal
import threading
from typing import Any, Dict, FrozenSet, Iterable, Iterator, Optional


def _is_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@dataclasses.dataclass(frozen=True)
class SignalState:
    """Handlers of the watched signals, the thread's mask and the wakeup fd."""

    handlers: Dict[int, Any]
    mask: FrozenSet[int]
    wakeup_fd: Optional[int]


def _current_mask() -> FrozenSet[int]:
    return frozenset(int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, []))


def _current_wakeup_fd() -> Optional[int]:
    if not _is_main_thread():
        return None
    old = signal.set_wakeup_fd(-1)
    signal.set_wakeup_fd(old)
    return old


def snapshot(signums: Iterable[int]) -> SignalState:
    """The current state of ``signums``' handlers, the mask and wakeup fd."""
    return SignalState(
        handlers={int(s): signal.getsignal(s) for s in signums},
        mask=_current_mask(),
        wakeup_fd=_current_wakeup_fd(),
    )


def restore(state: SignalState) -> None:
    """Put back everything :func:`snapshot` recorded."""
    if _is_main_thread():
        for signum, handler in state.handlers.items():
            # None means "installed from outside Python": nothing we can set.
            if handler is not None and signal.getsignal(signum) is not handler:
                signal.signal(signum, handler)
        if state.wakeup_fd is not None:
            signal.set_wakeup_fd(state.wakeup_fd)
    signal.pthread_sigmask(signal.SIG_SETMASK, state.mask)


@contextlib.contextmanager
def preserved_signal_state(signums: Iterable[int]) -> Iterator[SignalState]:
    """Context manager: snapshot on entry, restore on exit (always)."""
    state = snapshot(list(signums))
    try:
        yield state
    finally:
        restore(state)
