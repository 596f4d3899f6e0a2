"""The measuring core's shape: one wake loop per way of waiting, t0 only in drivers.

A family module holds its primitives and its table of arms; the loop (handshake, settle,
``t0``, planted delay, notify, ``t1``, lost wakes) lives in ``wakelab.core.drivers``.  These
checks read the source, so a copy of the loop creeping back into a family fails here.
"""

from __future__ import annotations

import ast
import importlib
import pathlib

import pytest

from wakelab.core.model import LATENCY
from wakelab.core.registry import FAMILY_TABLE, all_arms

CORE = pathlib.Path(__file__).resolve().parent.parent / "src" / "wakelab" / "core"
FAMILY_FILES = sorted((CORE / "families").glob("*.py"))
DRIVERS = {p.stem for p in (CORE / "drivers").glob("*.py") if not p.stem.startswith("_")} - {"child_side"}  # the child half of the child driver


@pytest.mark.parametrize("path", FAMILY_FILES, ids=lambda p: p.stem)
def test_families_leave_the_timed_window_to_the_drivers(path: pathlib.Path) -> None:
    """No family plants delays, sleeps a settle, or builds its own timed step."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
    forbidden = {"plant_delay", "spin_until", "planted_delay_ns", "planted_delay_us", "planted_after_us",
                 "settle_s", "settle_us", "notify_step", "LatencyCollector"}
    assert not (names | imported) & forbidden, "%s uses %s" % (path.name, sorted((names | imported) & forbidden))


def test_every_latency_arm_runs_on_a_driver() -> None:
    for arm in all_arms():
        if arm.kind == LATENCY:
            assert arm.driver in DRIVERS, "%s has driver %r" % (arm.name, arm.driver)
            module = importlib.import_module("wakelab.core.drivers." + arm.driver)
            assert isinstance(getattr(module, "OPEN_LOOP", None), bool)


def test_open_loop_is_the_drivers_property() -> None:
    for arm in all_arms():
        if arm.driver:
            module = importlib.import_module("wakelab.core.drivers." + arm.driver)
            assert arm.open_loop is module.OPEN_LOOP


def test_model_no_longer_offers_a_planted_delay_helper() -> None:
    from wakelab.core import model

    assert not hasattr(model, "plant_delay") and not hasattr(model, "spin_until")


def test_one_family_list() -> None:
    from wakelab.core.model import FAMILIES
    from wakelab.harness import worker
    from wakelab.report.text import FAMILY_TITLES

    assert tuple(f for f, _, _ in FAMILY_TABLE) == FAMILIES
    assert set(FAMILY_TITLES) == set(FAMILIES)
    assert all("wakelab.core.families." + m in worker._preload() for _, m, _ in FAMILY_TABLE)
