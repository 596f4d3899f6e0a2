"""``wakelab ab BASE HEAD``: two environments taking turns in one run, one gate.

Real runs, few wakes, through ``python -m wakelab`` in a subprocess.  Nothing here depends on the
machine's speed: a regression is planted 2 ms large (about a hundred times a wake here), and the
pass case gates at a 1000% limit, which no A/A can exceed.  What is asserted: exit codes, the
names of the sides in every output, the gate's shape, and what each side's evidence records.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from typing import Any, Dict, List, Optional

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "src")
LIBRARY = os.path.join(ROOT, "examples", "ab-library")
ARMS = os.path.join("benchmarks", "wakelab_arms.py")
# Few wakes, quick turns: two sides, two turns each, one worker a turn.
QUICK = ["-n", "24", "--repeat", "2", "--workers", "2", "--settle-us", "200", "-q"]
BIG_SPIN_US = 2000  # a plant no A/A noise comes near

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="measures real wakes in worker processes (Linux)")


def ab(*argv: str, cwd: Optional[str] = None, timeout: float = 240) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=SRC)
    return subprocess.run([sys.executable, "-m", "wakelab", "ab", *argv], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def checkout(tmp: Any, name: str, spin_us: int = 0) -> str:
    """A copy of the example library, its notify spinning ``spin_us`` µs more."""
    folder = os.path.join(str(tmp), name)
    shutil.copytree(LIBRARY, folder)
    if spin_us:
        path = os.path.join(folder, "src", "wakeq", "__init__.py")
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        assert "NOTIFY_SPIN_US = 0\n" in text
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text.replace("NOTIFY_SPIN_US = 0\n", "NOTIFY_SPIN_US = %d\n" % spin_us))
    return folder


def load(path: str) -> Dict[str, Any]:
    with open(path, encoding="utf-8") as fh:
        doc: Dict[str, Any] = json.load(fh)
    return doc


@pytest.fixture(scope="module")
def regression(tmp_path_factory) -> Dict[str, Any]:
    """base against a head whose notify spins 2 ms more: named sides, --json and --markdown."""
    tmp = tmp_path_factory.mktemp("ab-regression")
    base, head = checkout(tmp, "base"), checkout(tmp, "head", BIG_SPIN_US)
    out, md = os.path.join(str(tmp), "bundle"), os.path.join(str(tmp), "summary.md")
    result = ab(base, head, "--arm-file", os.path.join(head, ARMS), "--name", "base=main", "--name", "head=pr-42",
                "-o", out, "--json", "--markdown", md, *QUICK)
    return {"result": result, "folder": out, "markdown": md, "base": base, "head": head, "tmp": str(tmp)}


def test_a_slower_head_fails_the_gate_and_is_named_everywhere(regression) -> None:
    result = regression["result"]
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    doc = json.loads(result.stdout)
    assert doc["schema"] == "wakelab.ab" and doc["exit_status"] == 1
    assert (doc["base"], doc["head"]) == ("main", "pr-42")
    gate = doc["gate"]
    assert gate["result"] == "regression" and gate["errors"] == []
    assert [r["arm"] for r in gate["regressions"]][:1] == ["wakeq-notify"]
    assert all(r["run"] == "pr-42" for r in gate["regressions"])
    [p50] = [row for row in gate["rows"] if row["at"] == "p50"]
    assert p50["verdict"] == "slower" and p50["failed"] is True and p50["gated"] is True
    assert p50["ci_low"] > 1.0 and p50["min_detectable_effect_pct"] is not None
    assert doc["comparison"]["baseline"] == "main" and doc["comparison"]["other"] == "pr-42"
    sides = {s["role"]: s for s in doc["sides"]}
    assert sides["base"]["pythonpath"] == [os.path.join(regression["base"], "src")]
    assert sides["head"]["pythonpath"] == [os.path.join(regression["head"], "src")]

    with open(regression["markdown"], encoding="utf-8") as fh:
        markdown = fh.read()
    assert markdown.startswith("## wakelab A/B: pr-42 against main")
    assert "regression" in markdown.splitlines()[0]
    assert "| wakeq-notify | p50 |" in markdown and "**FAIL**" in markdown

    # The bundle: a grid of two cells named after the sides, each measured in its own checkout.
    matrix = load(os.path.join(regression["folder"], "matrix.json"))
    assert [c["label"] for c in matrix["cells"]] == ["main", "pr-42"]
    assert [c["dimensions"]["side"] for c in matrix["cells"]] == ["main", "pr-42"]
    for name, folder in (("main", regression["base"]), ("pr-42", regression["head"])):
        summary = load(os.path.join(regression["folder"], "cells", name, "summary.json"))
        assert summary["execution"]["pythonpath"][0] == os.path.join(folder, "src")
        assert summary["complete"] is True
        assert "observed" in summary


def test_the_text_output_names_the_sides_and_the_gate(regression) -> None:
    again = ab(regression["base"], regression["head"], "--arm-file", os.path.join(regression["head"], ARMS),
               "--name", "base=main", "--name", "head=pr-42", "-o", os.path.join(regression["tmp"], "again"), *QUICK)
    assert again.returncode == 1, again.stderr
    text = again.stdout
    assert text.startswith("wakelab ab: pr-42 against main")
    assert "pr-42 AGAINST main" in text
    assert "GATE (--fail-on-regression 10, --metric p50,p99, --min-effect 5): REGRESSION" in text
    assert "FAIL: wakeq-notify in pr-42 is slower than in main" in text


def test_identical_checkouts_pass(tmp_path) -> None:
    base, same = checkout(tmp_path, "base"), checkout(tmp_path, "same")
    result = ab(base, same, "--arm-file", os.path.join(same, ARMS), "--fail-on-regression", "1000",
                "-o", str(tmp_path / "bundle"), "--markdown", "-", *QUICK)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("## wakelab A/B: head against base")
    assert "pass" in result.stdout.splitlines()[0]
    assert "**FAIL**" not in result.stdout


def test_each_side_may_bring_its_own_arm_file_and_environment(tmp_path) -> None:
    """Base and head declare the same arm in their own files; head's file reads a variable that only
    head's workers are given, and spins then: each side's workers load their own file."""
    body = '''
import os, threading, time
from wakelab.api.v1 import BLOCKED, CROSS_THREAD, Arm, WakePath

def path():
    event = threading.Event()
    spin_ns = int(os.environ.get("AB_TEST_SPIN_US", "0")) * 1000 if %s else 0
    def notify():
        end = time.perf_counter_ns() + spin_ns
        while time.perf_counter_ns() < end:
            pass
        event.set()
    return WakePath(reset=event.clear, wait=event.wait, notify=notify)

ARMS = [Arm(name="own-file", family="threads", waiter=BLOCKED, scope=CROSS_THREAD,
            t0="main thread: before notify()", t1="waiter: after wait()", path=path)]
'''
    base_file, head_file = tmp_path / "base_arms.py", tmp_path / "head_arms.py"
    base_file.write_text(body % "False", encoding="utf-8")
    head_file.write_text(body % "True", encoding="utf-8")
    folder = str(tmp_path / "bundle")
    result = ab(sys.executable, sys.executable, "--arm-file", "base:%s" % base_file, "--arm-file", "head:%s" % head_file,
                "--env", "AB_TEST_SPIN_US=%d" % BIG_SPIN_US, "--env", "base:AB_TEST_SPIN_US=0", "-o", folder, *QUICK)
    assert result.returncode == 1, result.stderr + result.stdout
    for side, path, spin in (("base", base_file, "0"), ("head", head_file, str(BIG_SPIN_US))):
        summary = load(os.path.join(folder, "cells", side, "summary.json"))
        [arm] = summary["arms"]
        assert arm["origin"]["path"] == str(path)
        assert summary["execution"]["env"] == {"AB_TEST_SPIN_US": spin}


def test_a_planted_delay_on_one_side_is_found(tmp_path) -> None:
    result = ab(".", ".", "--arms", "event", "--planted-delay-us", "head:%d" % BIG_SPIN_US, "-o", str(tmp_path / "b"),
                "--json", *QUICK, cwd=str(tmp_path))
    assert result.returncode == 1, result.stderr
    doc = json.loads(result.stdout)
    assert doc["gate"]["result"] == "regression"
    assert [s["planted_delay_us"] for s in doc["sides"]] == [None, BIG_SPIN_US]


def test_an_arm_that_fails_on_one_side_is_an_error_not_a_pass(tmp_path) -> None:
    base, head = checkout(tmp_path, "base"), checkout(tmp_path, "head")
    with open(os.path.join(head, "src", "wakeq", "__init__.py"), "a", encoding="utf-8") as fh:
        fh.write("\ndef _broken(self):\n    raise RuntimeError('head broke notify')\n\nSignal.notify = _broken\n")
    result = ab(base, head, "--arm-file", os.path.join(base, ARMS), "-o", str(tmp_path / "bundle"), *QUICK)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "the gate cannot answer: wakeq-notify was not compared" in result.stderr
    assert "head broke notify" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("argv, message", [
    (["--name", "base=has space"], "--name base=has space: a name is 1 to 64"),
    (["--name", "base=x", "--name", "head=x"], "the two sides need different names"),
    (["--name", "left=x"], "expected base=NAME or head=NAME"),
    (["--planted-delay-us", "5"], "--planted-delay-us 5: expected SIDE:VALUE"),
    (["--env", "head:NO_EQUALS"], "expected [SIDE:]NAME=VALUE"),
    (["--env", "PYTHONPATH=/x"], "--path [SIDE:]DIR"),
    (["--arms", "no-such-arm"], "unknown arm 'no-such-arm'"),
    (["--fail-on-regression", "-3"], "--fail-on-regression"),
])
def test_bad_command_lines_give_one_line_and_status_2(tmp_path, argv: List[str], message: str) -> None:
    result = ab(".", ".", *argv, "-o", str(tmp_path / "never"), cwd=str(tmp_path))
    assert result.returncode == 2
    assert message in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr
    assert not os.path.exists(tmp_path / "never" / "matrix.json")


def test_an_arm_on_one_side_only_is_refused(tmp_path) -> None:
    base = checkout(tmp_path, "base")
    result = ab(base, base, "--arm-file", "head:%s" % os.path.join(base, ARMS), "-o", str(tmp_path / "never"))
    assert result.returncode == 2
    assert "arm wakeq-notify is declared on side head only" in result.stderr


def test_a_virtual_environment_is_its_python(tmp_path) -> None:
    """A folder with pyvenv.cfg is a venv: its bin/python runs that side (here a link to this one)."""
    import argparse

    from wakelab.cli import build_parser
    from wakelab.commands.ab import resolve_sides

    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = %s\n" % os.path.dirname(sys.executable), encoding="utf-8")
    os.symlink(sys.executable, str(venv / "bin" / "python3"))
    code = tmp_path / "code"
    (code / "src").mkdir(parents=True)
    args: argparse.Namespace = build_parser().parse_args(["ab", str(venv), str(code), "--env", "head:X=1"])
    base, head = resolve_sides(args)
    assert base.python == str(venv / "bin" / "python3") and base.pythonpath == ()
    assert head.python is None and head.pythonpath == (str(code / "src"),)
    assert base.env == () and head.env == (("X", "1"),)


def test_markdown_escapes_evidence_text_as_the_exporters_do() -> None:
    """Evidence text in ab's Markdown reads as the text it is (the exporter's escape): an entity is not decoded, ``~~`` strikes
    nothing through (both did before), and a tag is shown as text."""
    import argparse
    import types

    from wakelab.commands.ab import Side, format_markdown

    sides = [Side(role, name, name, None, None, (), (), ()) for role, name in (("base", "main"), ("head", "pr~1"))]
    gate = types.SimpleNamespace(result="error", regressions=[], errors=["<b>bad</b> #1 ~x", "&lt;i&gt; ~~struck~~"], rows=[], limit_pct=5.0,
                                 metrics=["p50"], min_effect_pct=1.0)
    text = format_markdown(sides, gate, "out", argparse.Namespace(argv=["ab"]))
    assert text.splitlines()[0] == "## wakelab A/B: pr\\~1 against main — ⚠️ error"
    assert "- error: &lt;b&gt;bad&lt;/b&gt; \\#1 \\~x" in text.splitlines()
    assert "- error: &amp;lt;i&amp;gt; \\~\\~struck\\~\\~" in text.splitlines()
