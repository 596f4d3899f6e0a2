"""Exceptions the library raises; only the CLI turns them into messages and exit codes."""

from __future__ import annotations

# C0 controls, DEL and C1 controls; the line and paragraph separators; the bidirectional
# embeddings, overrides and isolates that reorder what a terminal shows (Trojan Source).  Here,
# in the module every other imports, so that messages and the terminal text
# (:func:`wakelab.formatting.escape_text`) escape the same characters the same way.
CONTROL_CODES = (
    list(range(0x20)) + list(range(0x7F, 0xA0)) + [0x2028, 0x2029]
    + list(range(0x202A, 0x202F)) + list(range(0x2066, 0x206A))
)
CONTROL_ESCAPES = {c: ("\\x%02x" % c if c < 0x100 else "\\u%04x" % c) for c in CONTROL_CODES}


def one_line(text: str) -> str:
    """``text`` with line-breaking, control and bidirectional-override characters escaped, and
    lone surrogates replaced.

    Messages quote file names, arguments and strings from evidence files; this keeps the promise
    of one line on stderr, shown as written, whatever they contain.
    """
    return text.translate(CONTROL_ESCAPES).encode("utf-8", "backslashreplace").decode("utf-8")


class WakelabError(Exception):
    """Base class: a problem the user can fix, reported as one line."""


class UsageError(WakelabError):
    """Bad input: an invalid option value, an unknown name (exit status 2)."""


class EvidenceError(WakelabError):
    """A summary.json or samples file that is missing, unreadable, corrupt or of another schema."""


class OutputError(WakelabError):
    """The output folder cannot be created or written."""
