"""Option value parsers shared by the commands: a bad value is one clear argparse error."""

from __future__ import annotations

import argparse
import contextlib
from typing import Any, Callable, Iterator, List, Optional, Sequence, Tuple, Type

from wakelab.errors import UsageError


def whole_number(low: int, high: int) -> Callable[[str], int]:
    """A parser for a base-10 integer within ``low..high`` (beyond them a value is a typo, not a plan)."""

    def parse(text: str) -> int:
        try:
            value = int(text, 10)
        except ValueError:
            raise argparse.ArgumentTypeError("expected a whole number, got %r" % text) from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError("must be between %s and %s, got %s" % (f"{low:,}", f"{high:,}", value))
        return value

    return parse


def number_in(expected: str, within: Callable[[float], bool], bounds: str) -> Callable[[str], float]:
    """A parser for a number ``within`` its bounds: "expected EXPECTED" when it is not a number, "must be BOUNDS" beyond
    them.  ``within`` is a chain of comparisons, which NaN fails (and infinity, against a finite bound)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError("expected %s, got %r" % (expected, text)) from None
        if not within(value):
            raise argparse.ArgumentTypeError("must be %s, got %s" % (bounds, text))
        return value

    return parse


def parsed_by(module: str, function: str) -> Callable[[str], Any]:
    """A parser that hands the value to ``module.function`` (imported when a value comes); a ValueError is one argparse error."""

    def parse(text: str) -> Any:
        import importlib

        try:
            return getattr(importlib.import_module(module), function)(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


@contextlib.contextmanager
def usage_errors(*kinds: Type[Exception]) -> Iterator[None]:
    """Turn the layers' one-line errors of ``kinds`` into a :class:`~wakelab.errors.UsageError` of the same text."""
    try:
        yield
    except kinds as exc:
        raise UsageError(str(exc)) from None


def is_utf8(text: str) -> bool:
    """False for a command-line argument that was not valid UTF-8: Python hands such bytes over as lone surrogates
    (``surrogateescape``), which cannot be stored as text (JSON, SQLite, HTML) nor printed."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def not_utf8_message(text: str, why: str) -> str:
    """``not valid UTF-8 (b'd\\xff'); <why>``: names the bytes without printing them raw."""
    return "not valid UTF-8 (%s); %s" % (ascii(text.encode("utf-8", "surrogateescape")), why)


STORED_AS_TEXT = "wakelab stores it as text: give it in UTF-8"


def utf8_text(parse: Optional[Callable[[str], Any]] = None, why: str = STORED_AS_TEXT) -> Callable[[str], Any]:
    """An option parser that refuses a value that is not valid UTF-8, then applies ``parse``: argparse turns the refusal
    into one line and exit status 2, before the command does anything."""

    def check(text: str) -> Any:
        if not is_utf8(text):
            raise argparse.ArgumentTypeError(not_utf8_message(text, why))
        return text if parse is None else parse(text)

    return check


def not_empty(what: str) -> Callable[[str], str]:
    """A parser that refuses an empty value: "expected WHAT, got an empty string"."""

    def check(text: str) -> str:
        if not text:
            raise argparse.ArgumentTypeError("expected %s, got an empty string" % what)
        return text

    return check


def path_value(what: str, why: str) -> Callable[[str], str]:
    """A parser for a path option: valid UTF-8 (``why`` says where it is stored as text), and not empty."""
    return utf8_text(not_empty(what), why)


def suggest_long_options(parser: argparse.ArgumentParser) -> None:
    """Make a mistyped long option of ``parser``'s command line (``--arsm``) name the option it looks like (``--arms``):
    argparse (to 3.13; 3.14's ``suggest_on_error`` covers choices and command names only) leaves an unknown option to
    the top-level parser's "unrecognized arguments"."""
    from wakelab.core.registry import did_you_mean

    parse_known_args = parser.parse_known_args

    def parse(args: Optional[Sequence[str]] = None, namespace: Optional[argparse.Namespace] = None) -> Tuple[argparse.Namespace, List[str]]:
        parsed, extras = parse_known_args(args, namespace)
        options = [option for action in parser._actions for option in action.option_strings if option.startswith("--")]
        for extra in extras:
            if extra.startswith("--") and extra != "--":
                suggestion = did_you_mean(extra.split("=", 1)[0], options, ignore_prefix="--")
                if suggestion:
                    parser.error("unrecognized arguments: %s (%s)" % (" ".join(extras), suggestion))
        return parsed, extras

    setattr(parser, "parse_known_args", parse)  # noqa: B010 -- the instance's own, for its subparser action
