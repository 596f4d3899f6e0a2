"""One module per family of arms: its declaration (``FAMILY``), the primitives' moves and the table of
arms (``ARMS``); see :mod:`wakelab.core.registry`, which finds every module here.  A helper module
that is no family has a name starting with ``_``."""

from __future__ import annotations

import platform
import signal
import sys


def this_python() -> str:
    """``PyPy 3.9.16 (7.3.11) on linux`` or ``CPython 3.11.7 on linux``: names the interpreter in a skip reason."""
    implementation = sys.implementation
    text = "%s %s" % (platform.python_implementation(), platform.python_version())
    if implementation.name != "cpython":
        version = implementation.version
        text += " (%d.%d.%d)" % (version.major, version.minor, version.micro)
    return "%s on %s" % (text, sys.platform)


def no_sigtimedwait_reason() -> str:
    """Why an arm that waits in ``signal.sigtimedwait`` cannot run here (PyPy 3.9 has ``sigwait`` only)."""
    reason = "signal.sigtimedwait does not exist in %s" % this_python()
    if hasattr(signal, "sigwait"):
        reason += ("; its signal.sigwait has no timeout, and the waits here are bounded (a lost wake must not hang "
                   "the arm), so the arm is not measured with it")
    return reason
