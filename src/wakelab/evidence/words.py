"""The words a user reads about the state of the evidence, in one place.

Every renderer -- summary.txt and the short form, the HTML report, Markdown, compare, the history listing, matrix.txt --
names an arm's status, a run's state and the GIL with these, so that one state never reads two ways.  The interpreter's
label is :attr:`wakelab.evidence.model.Interpreter.label`, built from :func:`gil_word` and :data:`FREE_THREADED`.

Stdlib only; imports nothing from wakelab.
"""

from __future__ import annotations

import enum
from typing import Optional

# -- an arm's status (summary.json's arms[].status) ------------------------------------------------

#: The word for each status of an arm that has no figures to show.
STATUS_WORDS = {"ok": "ok", "skipped": "skipped", "failed": "FAILED", "interrupted": "interrupted", "pending": "not run"}
#: An arm that ended ``ok`` but holds no figures of its kind (a hand-edited bundle, a soak that counted nothing).
NO_FIGURES = "no figures"


def status_word(status: object) -> str:
    """The word for an arm's status where its figures would be: ``skipped``, ``FAILED``, ``not run`` ...

    Called for arms without figures, so ``ok`` reads :data:`NO_FIGURES`; an unknown status (a newer bundle) is shown as
    it is.
    """
    text = str(status)
    return NO_FIGURES if text == "ok" else STATUS_WORDS.get(text, text)


# -- the GIL and the build --------------------------------------------------------------------------

FREE_THREADED = "free-threaded"
_GIL_WORDS = {True: "GIL on", False: "GIL off", None: "GIL state not reported"}


def gil_word(gil_enabled: Optional[bool]) -> str:
    """``GIL on``, ``GIL off``, or ``GIL state not reported`` (an interpreter that does not say)."""
    return _GIL_WORDS.get(gil_enabled, str(gil_enabled)) if isinstance(gil_enabled, (bool, type(None))) else str(gil_enabled)


# -- a run's state ------------------------------------------------------------------------------------


class RunState(enum.Enum):
    """How far a run got, from summary.json's ``complete``, ``interrupted`` and ``finished_utc``.

    Each state has its heading word (summary.txt's first line, the short form, the HTML report's badge), its answer in a
    "complete" column (Markdown, the history listing) and its reason when a reader is warned about it (compare).
    """

    COMPLETE = ("complete", "yes", "")
    INTERRUPTED = ("INCOMPLETE (interrupted)", "interrupted", "interrupted")
    CUT_SHORT = ("INCOMPLETE (see caveats)", "no", "see its caveats")
    IN_PROGRESS = ("IN PROGRESS (or stopped before the end)", "in progress", "in progress, or stopped before the end")

    def __init__(self, word: str, answer: str, reason: str) -> None:
        self.word = word
        self.answer = answer
        self.reason = reason

    @property
    def good(self) -> bool:
        return self is RunState.COMPLETE


def run_state(complete: object, interrupted: object, finished: object = True) -> RunState:
    """The state of a run that says it is ``complete``, was ``interrupted``, and has ``finished`` (its ``finished_utc``)."""
    if complete:
        return RunState.COMPLETE
    if interrupted:
        return RunState.INTERRUPTED
    if finished:
        return RunState.CUT_SHORT
    return RunState.IN_PROGRESS


#: A grid's state (matrix.json's ``complete``: every cell a complete run).
GRID_COMPLETE, GRID_INCOMPLETE = "complete", "INCOMPLETE"


def grid_state_word(complete: object) -> str:
    return GRID_COMPLETE if complete else GRID_INCOMPLETE


#: A cell of a grid that never wrote evidence.
CELL_NOT_RUN = "not run"

__all__ = [
    "CELL_NOT_RUN", "FREE_THREADED", "GRID_COMPLETE", "GRID_INCOMPLETE", "NO_FIGURES", "RunState", "STATUS_WORDS",
    "gil_word", "grid_state_word", "run_state", "status_word",
]
