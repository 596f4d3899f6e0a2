"""Shared helpers for the bench scripts: make the package importable from a clone."""

from __future__ import annotations

import os
import statistics
import sys
from typing import Sequence

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "src")
if SRC not in sys.path:
    sys.path.insert(0, SRC)


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def verdict(ok: bool) -> str:
    return "meets target" if ok else "MISSES target"
