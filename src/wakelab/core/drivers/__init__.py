"""Drivers: one per way of waiting, each owning the whole wake loop (see :mod:`wakelab.core`)."""

from __future__ import annotations


class HarnessError(RuntimeError):
    """The harness itself failed (a waiter that never came up, a broken handshake ...)."""
