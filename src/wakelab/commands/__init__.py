"""Subcommands of the ``wakelab`` CLI: one module each, each with ``register(subparsers)``.

A command module adds its parser and sets ``handler`` to its ``cmd_*`` function,
which returns an exit status.  Commands print; the library underneath never does.
"""

from __future__ import annotations

TYPE_CHECKING = False  # type checkers take the branch; typing costs the CLI's start-up a few ms
if TYPE_CHECKING:
    from typing import List

# ``wakelab --help`` lists these first, in this order; any other command module follows.
PREFERRED_ORDER = ("run", "listing", "show", "compare", "ab", "report", "export", "history", "check")


def command_modules() -> List[str]:
    """Names of the modules in this package that define a subcommand."""
    import pkgutil  # here, not above: the CLI imports this package before it can handle Ctrl-C

    found = [m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")]
    known = [name for name in PREFERRED_ORDER if name in found]
    return known + sorted(set(found) - set(known))


EXIT_OK = 0
EXIT_ARM_FAILED = 1
EXIT_USAGE = 2
# Ended by a signal, the partial evidence kept: 128 + the signal's number, as a shell reports a
# process the signal killed (exit_status_for_signal: 143 for SIGTERM, 129 for SIGHUP).
EXIT_INTERRUPTED = 130  # SIGINT (2): Ctrl-C


# Ctrl-Cs that reached wakelab's SIGINT handler (wakelab.cli.main installs it for a command).
# Python raises KeyboardInterrupt wherever the main thread is; where that is a weakref callback
# (importlib runs some while it imports), the interpreter prints "Exception ignored" and the
# Ctrl-C is lost.  So the command looks here too, before it starts its real work.
INTERRUPTS: "List[int]" = []
# Whether the command's last look at INTERRUPTS is still to come: until then a swallowed Ctrl-C is certain to be raised
# again, and wakelab.cli keeps the interpreter's "Exception ignored" report of it quiet.  A command that looks again
# once its own imports are done (run, ab) says so with ``set_defaults(looks_again=True)``.
CHECK_PENDING = [True]


def raise_if_interrupted(last: bool = True) -> None:
    """Raise the ``KeyboardInterrupt`` of a Ctrl-C that came and was swallowed (see :data:`INTERRUPTS`); ``last``: the
    command looks no more."""
    if last:
        CHECK_PENDING[:] = [False]
    if INTERRUPTS:
        raise KeyboardInterrupt


def exit_status_for_signal(signum: int) -> int:
    """The exit status of a command ended by signal ``signum`` (130, 143, 129)."""
    return 128 + int(signum)
