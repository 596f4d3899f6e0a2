"""Subcommands of the ``wakelab`` CLI: one module each, each with ``register(subparsers)``.

A command module adds its parser and sets ``handler`` to its ``cmd_*`` function,
which returns an exit status.  Commands print; the library underneath never does.
"""

from __future__ import annotations

# In the order ``wakelab --help`` lists them.
COMMAND_MODULES = ("run", "listing", "show")

EXIT_OK = 0
EXIT_ARM_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
