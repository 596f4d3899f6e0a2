"""The A/B workflow in examples/, checked as written, and run: its own scripts, on two checkouts.

As tests/test_fleet.py does for the fleet workflow: the YAML parses into the shape the README
describes (check out head, base and wakelab; install wakelab from its checkout; one ``wakelab ab``
of the two checkouts that writes the Markdown summary to $GITHUB_STEP_SUMMARY; the report and the
upload whatever happened), every ``wakelab`` command in it and in examples/README.md parses with
wakelab's own argparse, and then the job's steps after the install run for real, in a folder laid
out as the checkouts lay it out, with ``wakelab`` on PATH running this checkout: once with a head
whose notify spins 2 ms more (the step fails, the summary names it), once with an identical head
at a limit no A/A reaches (it passes).  The fleet workflow must install wakelab the same way: from
a checkout of its repository, never from a package index.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from typing import Any, Dict, List

import pytest

from test_fleet import environment, parse, shell_commands, steps, uses

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "examples")
WORKFLOW = os.path.join(EXAMPLES, "github-actions-ab.yml")
FLEET = os.path.join(EXAMPLES, "github-actions-fleet.yml")
README = os.path.join(EXAMPLES, "README.md")
LIBRARY = os.path.join(EXAMPLES, "ab-library")
PR_NUMBER = "42"


def load(path: str) -> Dict[str, Any]:
    yaml = pytest.importorskip("yaml", reason="parsing the example workflows needs PyYAML (pip install pyyaml)")
    with open(path, encoding="utf-8") as fh:
        doc = yaml.safe_load(fh)
    assert isinstance(doc, dict)
    return doc


def expand(script: str) -> str:
    """A step's script as the runner would hand it to bash for pull request #42."""
    script = re.sub(r"\$\{\{\s*github\.event\.pull_request\.number\s*\}\}", PR_NUMBER, script)
    assert "${{" not in script, script  # every expression this test does not know would be a guess
    return script


def installs_from_checkout(doc: Dict[str, Any], job: Dict[str, Any]) -> None:
    """The job checks wakelab's repository out and pip-installs that folder, and nothing from an index."""
    [checkout] = [s for s in uses(job, "actions/checkout") if "WAKELAB_REPOSITORY" in str(s["with"].get("repository"))]
    folder = checkout["with"]["path"]
    assert "/" in doc["env"]["WAKELAB_REPOSITORY"]
    installs = [argv for s in steps(job) for argv in shell_commands(s.get("run", "")) if "install" in argv]
    assert installs
    for argv in installs:
        targets = [a for a in argv[argv.index("install") + 1:] if not a.startswith("-")]
        assert targets and all(t.startswith("./%s" % folder) for t in targets), argv
    position = steps(job).index(checkout)
    assert all(steps(job).index(s) > position for s in steps(job) if "pip install" in s.get("run", ""))


def test_the_ab_workflow_checks_out_both_sides_gates_and_uploads(capsys) -> None:
    doc = load(WORKFLOW)
    triggers = doc.get("on", doc.get(True))
    assert "pull_request" in triggers
    [job] = doc["jobs"].values()
    checkouts = uses(job, "actions/checkout")
    paths = {s["with"]["path"]: s["with"] for s in checkouts}
    assert set(paths) == {"head", "base", "wakelab"}
    assert paths["base"]["ref"] == "${{ github.event.pull_request.base.sha }}"
    assert "ref" not in paths["head"]  # the pull request as it would merge
    installs_from_checkout(doc, job)

    [ab_step] = [s for s in steps(job) if "wakelab ab" in s.get("run", "")]
    script = ab_step["run"]
    for name, value in doc["env"].items():  # the workflow's own settings, as the shell expands them
        script = script.replace("$%s" % name, str(value))
    [argv] = [a for a in shell_commands(script) if a[:2] == ["wakelab", "ab"]]
    args = parse(argv[1:], capsys)
    assert args.handler.__name__ == "cmd_ab"
    assert (args.base, args.head) == ("base", "head")
    assert args.markdown == "$GITHUB_STEP_SUMMARY" and args.rigorous
    assert args.fail_on_regression == 10 and args.metric == ("p50", "p99")
    assert args.arm_file == ["head/benchmarks/wakelab_arms.py"]
    assert "if" not in ab_step  # a failed gate fails the job
    output = args.output

    [report_step] = [s for s in steps(job) if "wakelab report" in s.get("run", "")]
    assert report_step["if"] == "always()"
    [report] = [a for a in shell_commands(report_step["run"]) if a[:2] == ["wakelab", "report"]]
    assert report[-1] == output
    [upload] = uses(job, "actions/upload-artifact")
    assert upload["if"] == "always()"
    uploaded = upload["with"]["path"].split()
    assert output + "/" in uploaded and report[report.index("-o") + 1] in uploaded


def test_the_fleet_workflow_installs_wakelab_from_its_repository() -> None:
    doc = load(FLEET)
    for job in doc["jobs"].values():
        installs_from_checkout(doc, job)


def test_the_readme_ab_commands_parse(capsys) -> None:
    with open(README, encoding="utf-8") as fh:
        text = fh.read()
    blocks = re.findall(r"```shell\n(.*?)```", text, flags=re.S)
    commands = [argv[1:] for block in blocks for argv in shell_commands(block) if argv[0] == "wakelab"]
    assert [argv[0] for argv in commands].count("ab") >= 2
    for argv in commands:
        assert parse(argv, capsys).handler.__name__ in ("cmd_ab", "cmd_report")


# ----------------------------------------------------------------------------------------------
# The job's own steps, run


def lay_out(tmp: str, head_spin_us: int) -> None:
    """The folder the job's steps run in, after its checkouts: base/ and head/ of the library."""
    for side, spin in (("base", 0), ("head", head_spin_us)):
        folder = os.path.join(tmp, side)
        shutil.copytree(LIBRARY, folder)
        if spin:
            path = os.path.join(folder, "src", "wakeq", "__init__.py")
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text.replace("NOTIFY_SPIN_US = 0\n", "NOTIFY_SPIN_US = %d\n" % spin))


def run_job(tmp_path: Any, head_spin_us: int, limit_pct: str, metric: str = "p50,p99") -> List[subprocess.CompletedProcess]:
    """Every step after the install, in order, as the runner runs them (a failed step stops the rest,
    but for the ones marked ``if: always()``)."""
    doc = load(WORKFLOW)
    [job] = doc["jobs"].values()
    tmp = str(tmp_path)
    lay_out(tmp, head_spin_us)
    env = environment(tmp)
    env.update({k: str(v) for k, v in doc["env"].items()})
    env.update(AB_LIMIT_PCT=limit_pct, AB_METRIC=metric, GITHUB_STEP_SUMMARY=os.path.join(tmp, "step-summary.md"))
    results: List[subprocess.CompletedProcess] = []
    failed = False
    for step in steps(job):
        script = step.get("run")
        if script is None or "pip install" in script:
            continue  # actions, and the install this test stands in for (the shim on PATH)
        if failed and step.get("if") != "always()":
            continue
        result = subprocess.run(["bash", "-eu", "-o", "pipefail", "-c", expand(script)], cwd=tmp, env=env,
                                capture_output=True, text=True, timeout=600)
        results.append(result)
        failed = failed or result.returncode != 0
    return results


@pytest.mark.skipif(sys.platform != "linux", reason="measures real wakes (Linux)")
def test_the_jobs_steps_fail_a_slower_head_and_report_it(tmp_path) -> None:
    ab_run, report = run_job(tmp_path, head_spin_us=2000, limit_pct="10")
    assert ab_run.returncode == 1, ab_run.stderr
    assert "FAIL: wakeq-notify in pr-%s is slower than in base" % PR_NUMBER in ab_run.stdout
    with open(tmp_path / "step-summary.md", encoding="utf-8") as fh:
        summary = fh.read()
    assert summary.startswith("## wakelab A/B: pr-%s against base" % PR_NUMBER) and "regression" in summary
    assert report.returncode == 0, report.stderr
    page = (tmp_path / "ab-report.html").read_text(encoding="utf-8")
    assert "pr-%s" % PR_NUMBER in page and "wakeq-notify" in page
    assert os.path.isfile(tmp_path / "ab-bundle" / "cells" / ("pr-%s" % PR_NUMBER) / "summary.json")


@pytest.mark.skipif(sys.platform != "linux", reason="measures real wakes (Linux)")
def test_the_jobs_steps_pass_an_identical_head(tmp_path) -> None:
    # At p50 and a limit no A/A reaches (a p99 of a few hundred wakes on a shared machine can).
    ab_run, report = run_job(tmp_path, head_spin_us=0, limit_pct="1000", metric="p50")
    assert ab_run.returncode == 0, ab_run.stderr
    with open(tmp_path / "step-summary.md", encoding="utf-8") as fh:
        assert "pass" in fh.readline()
    assert report.returncode == 0 and (tmp_path / "ab-report.html").is_file()
