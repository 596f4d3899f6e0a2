"""The measuring core's shape: one wake loop per way of waiting, t0 only in drivers.

A family module holds its primitives and its table of arms; the loop (handshake, settle,
``t0``, planted delay, notify, ``t1``, lost wakes) lives in ``wakelab.core.drivers``.  These
checks read the source, so a copy of the loop creeping back into a family fails here.
"""

from __future__ import annotations

import ast
import importlib
import pathlib
import subprocess
import sys

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
    from wakelab.api import v1
    from wakelab.core.registry import FAMILIES, FAMILY_COLORS, FAMILY_MODULES, families
    from wakelab.harness import worker
    from wakelab.core.registry import FAMILY_TITLES

    assert tuple(f for f, _, _ in FAMILY_TABLE) == FAMILIES == tuple(f.id for f in families())
    assert set(FAMILY_TITLES) == set(FAMILIES) == set(FAMILY_COLORS) == set(FAMILY_MODULES)
    assert all("wakelab.core.families." + m in worker._preload() for _, m, _ in FAMILY_TABLE)
    assert [f.order for f in families()] == sorted(f.order for f in families())
    assert v1.FAMILIES == tuple(f.id for f in families() if f.user_arms)


@pytest.mark.parametrize("path", [p for p in FAMILY_FILES if not p.stem.startswith("_")], ids=lambda p: p.stem)
def test_a_family_is_one_module(path: pathlib.Path) -> None:
    """Every module of the package declares its family and only its own arms; the registry found it."""
    from wakelab.core.model import Family
    from wakelab.core.registry import families, family_module_names

    module = importlib.import_module("wakelab.core.families." + path.stem)
    assert isinstance(module.FAMILY, Family)
    assert module.FAMILY in families()
    assert module.__name__ in family_module_names()
    assert module.ARMS and all(arm.family == module.FAMILY.id for arm in module.ARMS)


def test_a_worker_imports_only_its_arms_family() -> None:
    probe = ("import sys; sys.path.insert(0, %r)\n"
             "from wakelab.core.registry import find_arm\n"
             "find_arm('event', 'threads')\n"
             "print(sorted(m for m in sys.modules if m.startswith('wakelab.core.families.')))\n") % str(CORE.parent.parent)
    result = subprocess.run([sys.executable, "-S", "-c", probe], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "['wakelab.core.families.threads']"


THROWAWAY = '''
from wakelab.core.drivers import WakePath
from wakelab.core.drivers import thread as driver
import threading

from wakelab.core.model import BLOCKED, CROSS_THREAD, LATENCY, Arm, Family

FAMILY = Family(id="throwaway", title="Throwaway", color="#000001", order=55)


def measure(params):
    event = threading.Event()
    return driver.measure(params, WakePath(reset=event.clear, wait=event.wait, notify=event.set), "wakelab-throwaway")


ARMS = [Arm(name="throwaway-event", family="throwaway", driver="thread", kind=LATENCY, mechanism="Event again",
            waiter=BLOCKED, scope=CROSS_THREAD, t0="before set()", t1="after wait()", measure=measure)]
'''


def test_adding_a_family_is_adding_a_module(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from wakelab.core import families as package
    from wakelab.core import registry

    (tmp_path / "throwaway.py").write_text(THROWAWAY, encoding="utf-8")
    monkeypatch.setattr(package, "__path__", list(package.__path__) + [str(tmp_path)])
    monkeypatch.setattr(registry, "_REGISTRY", {})
    registry._family_modules.cache_clear()
    try:
        before = sum(1 for family in registry.families() if family.order < 55)
        assert registry.FAMILIES.index("throwaway") == before  # placed by its declared order
        assert registry.FAMILY_TITLES["throwaway"] == "Throwaway" and registry.FAMILY_COLORS["throwaway"] == "#000001"
        assert registry.get_arm("throwaway-event").family == "throwaway"
        assert registry.find_arm("throwaway-event", "throwaway").name == "throwaway-event"
        orders = [registry.get_family(registry.get_arm(name).family).order for name in registry.arm_names()]
        assert orders == sorted(orders)  # its arm listed among the families in report order
    finally:
        registry._family_modules.cache_clear()
        sys.modules.pop("wakelab.core.families.throwaway", None)
