"""Option value parsers shared by the commands: a bad value is one clear argparse error."""

from __future__ import annotations

import argparse
from typing import Callable, List, Optional, Sequence, Tuple


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


def suggest_long_options(parser: argparse.ArgumentParser) -> None:
    """Make a mistyped long option of ``parser``'s command line name the option it looks like.

    argparse (to 3.13; 3.14's ``suggest_on_error`` covers choices and command names only) leaves
    an unknown option to the top-level parser's "unrecognized arguments".  Where one of them is
    close to an option of ``parser`` (``--arsm`` for ``--arms``), ``parser`` reports it instead,
    with the suggestion.  Abbreviations that argparse accepts (``--arm``) never get here.
    """
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
