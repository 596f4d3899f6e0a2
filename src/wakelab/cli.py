"""The ``wakelab`` command: parse, dispatch to a command's ``cmd_*``, choose the exit code.

Only this module and ``wakelab.commands`` print or exit; the library raises.
Exit status: 0 the command did its work (a run may still have lost wakes or
skipped arms: see ``complete`` in summary.json), 1 an arm failed, 2 bad input
(one line on stderr), 130 interrupted by Ctrl-C, 143 by SIGTERM, 129 by
SIGHUP (a run keeps the partial evidence: ``interrupted: true``,
``complete: false``).

Signals
-------
While a command runs, SIGTERM and SIGHUP end it the way Ctrl-C does: their
handler raises :class:`Terminated`, a ``KeyboardInterrupt`` that carries the
signal's number, so every ``finally`` and every Ctrl-C path runs for them too
(the runner kills its workers, marks the arm it was measuring interrupted and
writes the evidence so far), and the exit status then names the signal.  A
second one while that is under way ends the process at once, as the signal
would have.  A signal that was ignored when wakelab started (``nohup``), or
that already had a handler, is left alone; the handlers are restored when the
command returns.

A Ctrl-C before the command's own handling is in place prints one line too,
never a traceback: this module imports next to nothing when it loads, and
:func:`main` does everything else (argparse, the command modules) inside its
``KeyboardInterrupt`` handler; ``python -m wakelab`` guards the import of this
module.  What is left is the interpreter's own start-up, before any of
wakelab runs.  A Ctrl-C that lands in a weakref callback (importlib runs
some while it imports) is swallowed by the interpreter ("Exception ignored");
wakelab's SIGINT handler also notes every one (:data:`wakelab.commands.INTERRUPTS`),
and the command raises a lost one again before its work starts.
"""

from __future__ import annotations

import os
import sys

# Nothing else is imported at load time, not even wakelab's own modules or signal (it loads
# enum): each import here would widen the window in which a Ctrl-C gives a traceback (see the
# module docstring).  Type names only below; type checkers take the branch.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from types import FrameType
    from typing import Any, Callable, Dict, List, NoReturn, Optional, Sequence

# Signals that end a command like Ctrl-C (see the module docstring), by name: not every
# platform has SIGHUP.
TERMINATING_SIGNALS = ("SIGTERM", "SIGHUP")
SIGINT = 2  # the same on every platform Python runs on


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP during a command; ``signum`` says which.

    A ``KeyboardInterrupt``, so that it passes every ``except Exception`` and
    takes the same way out as Ctrl-C; the runner reads ``signum`` to say which
    signal interrupted the run.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signal_name(signum))
        self.signum = signum


def signal_name(signum: int) -> str:
    import signal

    try:
        return signal.Signals(signum).name
    except ValueError:
        return "signal %d" % signum


def install_terminating_handlers(received: List[int]) -> Dict[int, object]:
    """Make SIGTERM and SIGHUP raise :class:`Terminated`; the handlers they had, to restore.

    ``received`` collects the signals that came.  Only a signal at its default
    disposition is taken over, and only from the main thread (elsewhere
    nothing is installed).
    """
    import signal

    def handler(signum: int, frame: Optional[FrameType]) -> None:
        if received:  # the first one's clean ending is under way: stop now, as the signal would
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        received.append(signum)
        raise Terminated(signum)

    previous: Dict[int, object] = {}
    for name in TERMINATING_SIGNALS:
        signum = getattr(signal, name, None)
        if signum is None or signal.getsignal(signum) is not signal.SIG_DFL:
            continue
        try:
            previous[signum] = signal.signal(signum, handler)
        except ValueError:  # not the main thread: signals are not ours to handle
            break
    return previous


def install_interrupt_latch() -> Dict[int, object]:
    """Make SIGINT raise ``KeyboardInterrupt`` as Python's own handler does, and also note it in
    :data:`wakelab.commands.INTERRUPTS`, so that a Ctrl-C swallowed on the way (see there) is
    raised again before the command's work; the handler it had, to restore.  Only Python's
    default handler is taken over, and only from the main thread."""
    import signal

    from wakelab.commands import CHECK_PENDING, INTERRUPTS

    del INTERRUPTS[:]
    CHECK_PENDING[:] = [True]

    def handler(signum: int, frame: Optional[FrameType]) -> None:
        INTERRUPTS.append(signum)
        raise KeyboardInterrupt

    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        return {}
    try:
        return {signal.SIGINT: signal.signal(signal.SIGINT, handler)}
    except ValueError:  # not the main thread
        return {}


def _quiet_latched_interrupt(hook: Callable[[Any], object]) -> Callable[[Any], None]:
    """``hook`` but for a Ctrl-C the latch noted and the interpreter swallowed (see :data:`wakelab.commands.INTERRUPTS`)
    while the command has yet to look for one: it will raise it, so the interpreter's "Exception ignored" traceback is
    not printed beside wakelab's one line.  Swallowed after that look, it is reported as before."""
    from wakelab.commands import CHECK_PENDING, INTERRUPTS

    def quiet(unraisable: Any) -> None:
        if not (INTERRUPTS and CHECK_PENDING[0] and isinstance(unraisable.exc_value, KeyboardInterrupt)):
            hook(unraisable)

    return quiet


def _raise_if_still_pending() -> None:
    """The Ctrl-C the interpreter swallowed and :func:`_quiet_latched_interrupt` kept quiet, when the command ended
    before it looked for it: raised, so that it is never lost."""
    from wakelab.commands import CHECK_PENDING, INTERRUPTS

    if INTERRUPTS and CHECK_PENDING[0]:
        raise KeyboardInterrupt


def restore_handlers(previous: Dict[int, object]) -> None:
    import signal

    for signum, old in previous.items():
        signal.signal(signum, old)  # type: ignore[arg-type]


def build_parser() -> argparse.ArgumentParser:
    import argparse
    import importlib

    from wakelab import __version__
    from wakelab.commands import EXIT_USAGE, command_modules

    class _Parser(argparse.ArgumentParser):
        """argparse, but a bad command line gives one line on stderr, not usage plus error."""

        def error(self, message: str) -> NoReturn:
            from wakelab.formatting import escape_text  # argparse echoes arguments: never raw to a terminal

            self.exit(EXIT_USAGE, "%s: error: %s (see %s --help)\n" % (self.prog, escape_text(message), self.prog))

    parser = _Parser(prog="wakelab", description="How long does it take to wake a waiter in Python, on this machine and interpreter? "
                                                 "Measures per-wake latency (percentiles, not an average) and writes the evidence.",
                     epilog="Exit status: 0 done, 1 an arm failed, 2 bad input, 130 interrupted (Ctrl-C), 143 SIGTERM, 129 SIGHUP "
                            "(partial evidence kept).")
    parser.add_argument("--version", action="version", version="wakelab " + __version__)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name in command_modules():
        importlib.import_module("wakelab.commands." + name).register(sub)
    return parser


def _dispatch(argv: List[str]) -> int:
    from wakelab.commands import EXIT_OK, EXIT_USAGE, raise_if_interrupted
    from wakelab.errors import WakelabError, one_line

    args = build_parser().parse_args(argv)
    args.argv = argv
    raise_if_interrupted(last=not getattr(args, "looks_again", False))  # a Ctrl-C lost while the command modules were imported
    try:
        return int(args.handler(args))
    except WakelabError as exc:
        sys.stderr.write("wakelab: error: %s\n" % one_line(str(exc)))
        return EXIT_USAGE
    except BrokenPipeError:
        # Survive `| head`: stop quietly, and keep Python from complaining at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the wakelab command line ``argv`` (default ``sys.argv[1:]``); the exit status."""
    received: List[int] = []
    try:
        previous = install_terminating_handlers(received)
        hook = sys.unraisablehook
        try:
            previous.update(install_interrupt_latch())
            sys.unraisablehook = _quiet_latched_interrupt(hook)
            try:
                status = _dispatch(list(sys.argv[1:] if argv is None else argv))
            except KeyboardInterrupt:
                raise
            except BaseException:  # --help, a usage error, an error: a swallowed Ctrl-C not yet looked for is raised
                _raise_if_still_pending()
                raise
            _raise_if_still_pending()
        finally:
            restore_handlers(previous)
            sys.unraisablehook = hook
    except (KeyboardInterrupt, RuntimeError) as caught:
        # A Ctrl-C landing while a class is created (``import platform`` makes one with a cached_property) reaches
        # Python 3.11 and older as the RuntimeError "Error calling __set_name__", the KeyboardInterrupt its cause.
        exc = caught.__cause__ if isinstance(caught, RuntimeError) else caught
        if not isinstance(exc, KeyboardInterrupt):
            raise
        signum = int(getattr(exc, "signum", SIGINT))
        sys.stderr.write("wakelab: interrupted%s\n" % ("" if signum == SIGINT else " by " + signal_name(signum)))
        return 128 + signum  # exit_status_for_signal, which may not be imported yet
    from wakelab.commands import EXIT_INTERRUPTED, exit_status_for_signal

    if received and status == EXIT_INTERRUPTED:
        # The command caught the Terminated and ended cleanly (run: "interrupted; the evidence
        # so far ..."); its status says Ctrl-C, the signal was another.
        return exit_status_for_signal(received[0])
    return status


def console_main() -> None:
    """The ``wakelab`` program (the console script and ``python -m wakelab``): :func:`main`, then exit.

    A run ended by a signal exits with its status (130, 143, 129) at once, its output flushed: left
    to the interpreter's own shutdown, a Ctrl-C caught early in start-up could still end the process
    by SIGINT itself (exit -2) after its one line.
    """
    status = main()
    if status > 128:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(status)
    sys.exit(status)


if __name__ == "__main__":
    console_main()
