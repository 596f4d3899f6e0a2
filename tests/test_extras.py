"""Optional dependencies (:mod:`wakelab.extras`): pyproject's extras, and one line when one is missing.

A command whose extra is not installed must say so in one line naming the install command and
exit 2; the commands a plain ``pip install .`` serves must run with every extra missing.  A
missing library is simulated in a fresh interpreter by setting its ``sys.modules`` entry to
None (``import numpy`` then raises ImportError, and ``importlib.util.find_spec`` finds nothing).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from typing import List, Sequence, Tuple

import pytest

from wakelab import extras

TESTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS)
SRC = os.path.join(ROOT, "src")
LAB135 = os.path.join(ROOT, "lab-evidence", "135-signal-vs-event-wakeup", "results")
EVERY_EXTRA_MODULE = sorted({m for modules in extras.EXTRAS.values() for m in modules} | {"matplotlib"})


def _pyproject() -> dict:
    tomllib = pytest.importorskip("tomllib", reason="reading pyproject.toml needs Python 3.11's tomllib")
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as fh:
        return tomllib.load(fh)  # type: ignore[no-any-return]


def _names(requirements: Sequence[str]) -> List[str]:
    return [re.split(r"[\s<>=!~;\[]", r, maxsplit=1)[0].lower() for r in requirements]


def test_pyproject_extras_are_the_ones_the_commands_name() -> None:
    project = _pyproject()["project"]
    optional = project["optional-dependencies"]
    for extra, modules in extras.EXTRAS.items():
        assert _names(optional[extra]) == list(modules), extra
    assert optional["all"] == ["wakelab[%s]" % ",".join(extras.EXTRAS)]
    assert "wakelab[all]" in optional["test"]  # the README's test command sets every command up
    # A plain install: the validating loader and the progress display; nothing an extra brings.
    assert _names(project["dependencies"]) == ["jsonschema", "rich"]


def _run_without(modules: Sequence[str], args: Sequence[str], cwd: str) -> Tuple[int, str, str]:
    hide = "".join("sys.modules[%r] = None; " % m for m in modules)
    code = "import sys; %sfrom wakelab.cli import main; sys.exit(main(sys.argv[1:]))" % hide
    env = dict(os.environ, PYTHONPATH=SRC)
    result = subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=300)
    return result.returncode, result.stdout, result.stderr


@pytest.fixture
def lab135(tmp_path) -> str:
    folder = str(tmp_path / "lab135")
    shutil.copytree(LAB135, folder, ignore=shutil.ignore_patterns("run_lab.py", "__pycache__"))
    return folder


@pytest.mark.parametrize("hidden, args, extra, needed_by", [
    (("plotly",), ("report", "lab135", "-o", "r.html"), "report", "wakelab report needs plotly, which is"),
    (("numpy",), ("compare", "lab135", "lab135"), "compare", "wakelab compare needs numpy, which is"),
    (("scipy",), ("compare", "lab135", "lab135"), "compare", "wakelab compare needs scipy, which is"),
    (("numpy", "scipy"), ("compare", "lab135", "lab135"), "compare", "wakelab compare needs numpy and scipy, which are"),
    (("pyperf",), ("export", "-f", "pyperf", "-o", "out/", "lab135"), "pyperf", "--format pyperf needs the pyperf package, which is"),
], ids=["report", "compare-numpy", "compare-scipy", "compare-both", "export-pyperf"])
def test_a_missing_extra_is_one_line_naming_the_install_command(lab135: str, hidden, args, extra, needed_by) -> None:
    cwd = os.path.dirname(lab135)
    status, out, err = _run_without(hidden, args, cwd)
    assert (status, out) == (2, "")
    assert err == "wakelab: error: %s not installed: pip install 'wakelab[%s]' (in a clone: pip install -e '.[%s]')\n" % (
        needed_by, extra, extra)
    assert sorted(os.listdir(cwd)) == ["lab135"]  # nothing written


@pytest.mark.parametrize("args", [
    ("show", "lab135"),
    ("show", "--hist", "lab135"),
    ("export", "-f", "csv", "-o", "-", "lab135"),
    ("export", "-f", "samples-csv", "-o", "-", "lab135"),
    ("export", "-f", "markdown", "-o", "-", "lab135"),
    ("export", "-f", "json", "-o", "-", "lab135"),
    ("history", "add", "--history", "h.sqlite3", "lab135"),
    ("list",),
], ids=lambda a: "-".join(a[:3]))
def test_a_plain_install_serves_the_other_commands(lab135: str, args) -> None:
    status, out, err = _run_without(EVERY_EXTRA_MODULE, args, os.path.dirname(lab135))
    assert status == 0, err
    assert out or err


def test_a_plain_install_runs_the_lab(tmp_path) -> None:
    """The README's lab command after a plain ``pip install -e .``: a small Lab 135, its text and JSON evidence."""
    args = ("run", "--n", "20", "--warmup", "2", "--repeat", "1", "--workers", "1", "--install-n", "500", "--rounds", "2",
            "-o", "run", "--no-history", "-q")
    status, out, err = _run_without(EVERY_EXTRA_MODULE, args, str(tmp_path))
    assert status == 0, err
    assert out.startswith("Lab 135: signal vs threading.Event wakeup\n")
    assert sorted(os.listdir(tmp_path / "run")) == ["samples", "summary.json", "summary.txt"]


def test_a_plain_install_runs_a_soak(tmp_path) -> None:
    status, _, err = _run_without(EVERY_EXTRA_MODULE, ("run", "--arms", "event", "--duration", "1s", "-o", "soak", "--no-history", "-q"),
                                  str(tmp_path))
    assert status == 0, err


def test_require_names_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "scipy", None)
    assert extras.missing("compare") == ["scipy"]
    with pytest.raises(extras.ExtraMissing, match=r"^wakelab compare needs scipy, which is not installed: pip install "):
        extras.require("compare", "wakelab compare")
    monkeypatch.setitem(sys.modules, "numpy", None)
    with pytest.raises(extras.ExtraMissing, match=r"needs numpy and scipy, which are not installed"):
        extras.require("compare", "wakelab compare")
