"""Exceptions the library raises; only the CLI turns them into messages and exit codes."""

from __future__ import annotations


class WakelabError(Exception):
    """Base class: a problem the user can fix, reported as one line."""


class UsageError(WakelabError):
    """Bad input: an invalid option value, an unknown name (exit status 2)."""


class EvidenceError(WakelabError):
    """A summary.json or samples file that is missing, unreadable, corrupt or of another schema."""


class OutputError(WakelabError):
    """The output folder cannot be created or written."""
