"""The original reproduce command works from a clone with nothing installed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join("lab-evidence", "135-signal-vs-event-wakeup", "results", "run_lab.py")


def test_run_lab_script_runs_without_install(tmp_path) -> None:
    # A copy of the clone's layout: the script and src/, nothing installed.
    clone = tmp_path / "clone"
    (clone / os.path.dirname(SCRIPT)).mkdir(parents=True)
    shutil.copy(os.path.join(ROOT, SCRIPT), clone / SCRIPT)
    shutil.copytree(os.path.join(ROOT, "src"), clone / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    # -I -S: no site-packages, so an installed wakelab (or jsonschema) cannot help.
    result = subprocess.run(
        [sys.executable, "-I", "-S", SCRIPT, "-n", "20", "--install-n", "500", "--rounds", "2", "-q"],
        cwd=str(clone), env=env, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr
    results = clone / os.path.dirname(SCRIPT)
    summary = json.loads((results / "summary.json").read_text(encoding="utf-8"))
    assert summary["lab"]["id"] == "135-signal-vs-event-wakeup"
    assert [a["name"] for a in summary["arms"]] == ["event", "sigusr1-self", "signal-install"]
    assert summary["complete"] is True
    assert (results / "summary.txt").read_text(encoding="utf-8") == result.stdout
    assert summary["command"][:4] == ["wakelab", "run", "--lab", "135-signal-vs-event-wakeup"]


def test_run_lab_defaults_are_the_original_parameters() -> None:
    from wakelab.labs import LAB_135

    assert LAB_135.params.n == 200
    assert LAB_135.params.install_n == 20000
    assert LAB_135.params.rounds == 7


def test_committed_evidence_is_valid_and_consistent() -> None:
    """The committed real run validates, and its summary.txt is what `wakelab show` renders."""
    from wakelab.evidence.load import load_summary
    from wakelab.report.text import format_summary

    results = os.path.join(ROOT, os.path.dirname(SCRIPT))
    summary = load_summary(results)
    assert summary["complete"] is True
    assert summary["parameters"]["planted_delay_us"] == 0
    assert summary["parameters"]["n"] == 200
    with open(os.path.join(results, "summary.txt"), encoding="utf-8") as fh:
        assert fh.read() == format_summary(summary)
    for entry in summary["arms"]:
        with open(os.path.join(results, entry["samples_file"]), encoding="utf-8") as fh:
            raw = json.load(fh)
        if entry["kind"] == "latency":
            assert len(raw["samples_ns"]) == entry["latency"]["n"] == 200
