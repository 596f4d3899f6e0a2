"""Exceptions the library raises; only the CLI turns them into messages and exit codes."""

from __future__ import annotations


# Characters that would break a message over lines (str.splitlines breaks on all of these).
_BREAKING = {c: "\\x%02x" % c for c in list(range(0x20)) + list(range(0x7F, 0xA0))}
_BREAKING.update({0x2028: "\\u2028", 0x2029: "\\u2029"})


def one_line(text: str) -> str:
    """``text`` with line-breaking and control characters escaped, and lone surrogates replaced.

    Messages quote file names and strings from evidence files; this keeps the
    promise of one line on stderr whatever they contain.
    """
    return text.translate(_BREAKING).encode("utf-8", "backslashreplace").decode("utf-8")


class WakelabError(Exception):
    """Base class: a problem the user can fix, reported as one line."""


class UsageError(WakelabError):
    """Bad input: an invalid option value, an unknown name (exit status 2)."""


class EvidenceError(WakelabError):
    """A summary.json or samples file that is missing, unreadable, corrupt or of another schema."""


class OutputError(WakelabError):
    """The output folder cannot be created or written."""
