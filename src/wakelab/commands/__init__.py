"""Subcommands of the ``wakelab`` CLI: one module each, each with ``register(subparsers)``.

A command module adds its parser and sets ``handler`` to its ``cmd_*`` function,
which returns an exit status.  Commands print; the library underneath never does.
"""

from __future__ import annotations

import pkgutil
from typing import List

# ``wakelab --help`` lists these first, in this order; any other command module follows.
PREFERRED_ORDER = ("run", "listing", "show", "compare", "report", "export", "history", "check")


def command_modules() -> List[str]:
    """Names of the modules in this package that define a subcommand."""
    found = [m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")]
    known = [name for name in PREFERRED_ORDER if name in found]
    return known + sorted(set(found) - set(known))

EXIT_OK = 0
EXIT_ARM_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
