"""The words a user reads about state (wakelab.evidence.words): one place, one wording everywhere."""

from __future__ import annotations

from wakelab.evidence.model import Bundle, Interpreter
from wakelab.evidence.words import NO_FIGURES, RunState, gil_word, grid_state_word, run_state, status_word
from wakelab.history import interpreter_label


def test_status_words() -> None:
    assert [status_word(s) for s in ("skipped", "failed", "interrupted", "pending", "ok", "newer")] == [
        "skipped", "FAILED", "interrupted", "not run", NO_FIGURES, "newer"]


def test_run_states() -> None:
    assert run_state(True, False) is RunState.COMPLETE and RunState.COMPLETE.good
    assert run_state(False, True).word == "INCOMPLETE (interrupted)"
    assert run_state(False, False, "2026-10-01T06:00:00Z").word == "INCOMPLETE (see caveats)"
    assert run_state(False, False, None).word == "IN PROGRESS (or stopped before the end)"
    assert [s.answer for s in RunState] == ["yes", "interrupted", "no", "in progress"]
    assert Bundle(source="", folder="", summary={"complete": False}).run_state is RunState.IN_PROGRESS
    assert (grid_state_word(True), grid_state_word(False)) == ("complete", "INCOMPLETE")


def test_gil_words() -> None:
    assert [gil_word(g) for g in (True, False, None)] == ["GIL on", "GIL off", "GIL state not reported"]


def test_one_interpreter_label_everywhere() -> None:
    assert Interpreter("PyPy", "3.9.16", implementation_version="7.3.11").label == "PyPy 3.9.16 (7.3.11)"
    assert Interpreter("CPython", "3.13.5", free_threaded_build=True).label == "CPython 3.13.5 free-threaded"
    # history's rows name the interpreter as the evidence model does (they once said 3.13.5t)
    assert interpreter_label("CPython", "3.13.5", True, True) == "CPython 3.13.5 free-threaded (GIL on)"
    assert interpreter_label("CPython", "3.13.5", True, False) == "CPython 3.13.5 free-threaded (GIL off)"
    assert interpreter_label("CPython", "3.13.5", False, True) == "CPython 3.13.5"
    assert interpreter_label(None, None, None, None) == "?"
