"""Option value parsers shared by the commands: a bad value is one clear argparse error."""

from __future__ import annotations

import argparse
from typing import Callable


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
