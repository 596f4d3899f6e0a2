"""Small fixes with a test each: the listing imports no optional async library, every family has
its colour in the interactive report, and the interpreter's own version is recorded (PyPy 7.3.x)."""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import types
from typing import Any

import pytest

from wakelab.core.families import asynclibs
from wakelab.core.registry import FAMILIES
from wakelab.evidence.model import Interpreter as EvidenceInterpreter
from wakelab.harness import metadata
from wakelab.report import interactive

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "src")
ASYNC_LIBRARIES = ("uvloop", "trio", "anyio", "gevent")


# ---------------------------------------------------------------- wakelab list stays light


def test_listing_imports_no_optional_async_library() -> None:
    """In a fresh process (other tests' imports must not leak in): listing leaves uvloop, trio,
    anyio and gevent unimported and lists an installed one as available; measuring still imports it."""
    probe = (
        "import json, sys, importlib.util\n"
        "from wakelab.commands.listing import list_arms\n"
        "from wakelab.core.registry import get_arm\n"
        "libraries = %r\n"
        "data = list_arms().to_dict()\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in libraries)\n"
        "available = {a['name']: a['available'] for a in data['arms'] if a['family'] == 'asynclibs'}\n"
        "installed = {m: importlib.util.find_spec(m) is not None for m in libraries}\n"
        "reason = get_arm('trio-token-event').unavailable_reason()\n"  # what a worker checks before measuring
        "print(json.dumps([loaded, available, installed, reason, 'trio' in sys.modules]))\n"
    ) % (ASYNC_LIBRARIES,)
    env = dict(os.environ, PYTHONPATH=SRC)
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stderr
    loaded, available, installed, reason, trio_imported = json.loads(result.stdout)
    assert loaded == []
    assert available == {
        "uvloop-call-soon-threadsafe": installed["uvloop"],
        "trio-token-event": installed["trio"],
        "anyio-asyncio-run-sync": installed["anyio"],
        "anyio-trio-run-sync": installed["anyio"] and installed["trio"],
        "gevent-async-watcher": installed["gevent"],
    }
    if installed["trio"]:
        assert reason is None and trio_imported is True  # the full check imports: outside the timed window


def test_every_async_library_arm_has_a_check_that_imports_nothing() -> None:
    assert sorted(asynclibs.LISTING_CHECKS) == sorted(arm.name for arm in asynclibs.ARMS)


def test_the_listing_checks_name_what_is_missing() -> None:
    assert asynclibs.uninstalled_reason("json") is None
    reason = asynclibs.uninstalled_reason("json", "wakelab_no_such_library")
    assert reason is not None and reason.startswith("wakelab_no_such_library is not installed in this interpreter (")


def test_the_gevent_listing_check_sees_an_active_monkey_patching(monkeypatch: Any) -> None:
    if asynclibs.uninstalled_reason("gevent") is not None:
        pytest.skip("gevent is not installed here")
    # Only a process that imported gevent.monkey can be patched: the check reads it there, imports nothing.
    monkeypatch.setitem(sys.modules, "gevent.monkey", types.SimpleNamespace(is_anything_patched=lambda: True))
    reason = asynclibs.listed_gevent_reason()
    assert reason is not None and reason.startswith("gevent's monkey-patching is active")
    monkeypatch.setitem(sys.modules, "gevent.monkey", types.SimpleNamespace(is_anything_patched=lambda: False))
    assert asynclibs.listed_gevent_reason() is None


# ---------------------------------------------------------------- the interactive report's colours


def test_every_family_has_a_colour_of_its_own() -> None:
    assert set(interactive.FAMILY_COLORS) == set(FAMILIES)  # a renamed family fails here
    colours = [interactive.family_color(family) for family in FAMILIES]
    assert interactive.OTHER_FAMILY_COLOR not in colours
    assert len(set(colours)) == len(colours)


# ---------------------------------------------------------------- the implementation's own version


@pytest.mark.parametrize("version, text", [
    ((7, 3, 11, "final", 0), "7.3.11"),
    ((7, 3, 12, "candidate", 1), "7.3.12rc1"),
    ((3, 14, 0, "alpha", 7), "3.14.0a7"),
    ((3, 13, 0, "beta", 2), "3.13.0b2"),
    ((24, 2, 0), "24.2.0"),
])
def test_format_implementation_version(version: Any, text: str) -> None:
    assert metadata.format_implementation_version(version) == text


def test_cpython_records_the_python_version_as_its_own() -> None:
    if sys.implementation.name != "cpython":
        pytest.skip("CPython only")
    info = metadata.interpreter_info()
    assert info["implementation_version"] == info["version"] == platform.python_version()
    if "+" not in platform.python_version():  # a development build's "+" is in the version string only
        assert metadata.format_implementation_version(sys.implementation.version) == platform.python_version()


def test_another_implementation_records_its_own_version(monkeypatch: Any) -> None:
    pypy = types.SimpleNamespace(name="pypy", version=(7, 3, 11, "final", 0), cache_tag="pypy39")
    monkeypatch.setattr(sys, "implementation", pypy)
    assert metadata.implementation_version() == "7.3.11"


def test_pypy_for_real() -> None:
    """The measuring side runs on PyPy 3.9 from this source tree: its evidence names PyPy's own version."""
    pypy = shutil.which("pypy3")
    if pypy is None:
        pytest.skip("no pypy3 here")
    probe = (
        "import json, sys; sys.path.insert(0, %r)\n"
        "from wakelab.harness.metadata import interpreter_info\n"
        "print(json.dumps([interpreter_info(), list(sys.pypy_version_info[:3])]))\n"
    ) % SRC
    result = subprocess.run([pypy, "-S", "-c", probe], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    info, own = json.loads(result.stdout)
    assert info["implementation"] == "PyPy"
    assert info["implementation_version"] == "%d.%d.%d" % tuple(own)
    assert info["implementation_version"] != info["version"]


# The evidence model and the text summary show it.

PYPY_INTERPRETER = {"implementation": "PyPy", "version": "3.9.16", "implementation_version": "7.3.11",
                    "build": "7.3.11+dfsg-2+deb12u3, Dec 30 2024", "compiler": "", "switch_interval_s": 0.005,
                    "free_threaded_build": False, "gil_enabled": True}


def test_the_evidence_model_names_pypy_s_own_version() -> None:
    assert EvidenceInterpreter.from_dict(PYPY_INTERPRETER).label == "PyPy 3.9.16 (7.3.11)"
    cpython = {"implementation": "CPython", "version": "3.13.5", "implementation_version": "3.13.5"}
    assert EvidenceInterpreter.from_dict(cpython).label == "CPython 3.13.5"
    older = {"implementation": "PyPy", "version": "3.9.16"}  # evidence from before it was recorded
    assert EvidenceInterpreter.from_dict(older).label == "PyPy 3.9.16"


def test_the_text_summary_names_pypy_s_own_version(lab135_summary: Any) -> None:
    from wakelab.evidence.load import validate_summary
    from wakelab.report.text import format_brief, format_summary

    lab135_summary["interpreter"] = dict(PYPY_INTERPRETER, executable="/usr/bin/pypy3", debug_build=False)
    validate_summary(lab135_summary)
    text = format_summary(lab135_summary)
    assert "· PyPy 3.9.16 (7.3.11) ·" in text.splitlines()[1]
    assert "Interpreter: PyPy 3.9.16 (PyPy 7.3.11; 7.3.11+dfsg-2+deb12u3, Dec 30 2024; ), GIL on" in text.replace("\n    ", " ")
    assert "PyPy 3.9.16 (7.3.11) ·" in format_brief(lab135_summary)
