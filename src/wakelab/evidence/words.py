"""The words a user reads about the state of the evidence, in one place.

Every renderer -- summary.txt and the short form, the HTML report, Markdown, compare, the history listing, matrix.txt --
names an arm's status, a run's state and the GIL with these, so that one state never reads two ways.  Imports nothing
from wakelab.
"""

from __future__ import annotations

import enum
from typing import Optional

_STATUS_WORDS = {"skipped": "skipped", "failed": "FAILED", "interrupted": "interrupted", "pending": "not run"}
#: An arm that ended ``ok`` but holds no figures of its kind (a hand-edited bundle, a soak that counted nothing).
NO_FIGURES = "no figures"


def status_word(status: object) -> str:
    """The word for the status of an arm without figures (an unknown status, a newer bundle's, as it is)."""
    text = str(status)
    return NO_FIGURES if text == "ok" else _STATUS_WORDS.get(text, text)


FREE_THREADED = "free-threaded"
_GIL_WORDS = {True: "GIL on", False: "GIL off", None: "GIL state not reported"}


def gil_word(gil_enabled: Optional[bool]) -> str:
    return _GIL_WORDS.get(gil_enabled, str(gil_enabled)) if isinstance(gil_enabled, (bool, type(None))) else str(gil_enabled)


class RunState(enum.Enum):
    """How far a run got: its heading word (summary.txt's first line, the short form, the HTML report's badge), its
    answer in a "complete" column (Markdown, the history listing) and its reason when a reader is warned (compare)."""

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
    """The state of a run from summary.json's ``complete``, ``interrupted`` and ``finished_utc``."""
    if complete:
        return RunState.COMPLETE
    if interrupted:
        return RunState.INTERRUPTED
    return RunState.CUT_SHORT if finished else RunState.IN_PROGRESS


def grid_state_word(complete: object) -> str:
    """matrix.json's ``complete``: every cell a complete run."""
    return "complete" if complete else "INCOMPLETE"


#: A cell of a grid that never wrote evidence.
CELL_NOT_RUN = "not run"
