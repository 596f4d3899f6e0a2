"""A fleet: the CI-matrix example in examples/, and bundles from several machines in one history.

The workflow is checked twice: its YAML parses into the shape the README describes (a matrix
over runner types and Python versions, one artifact per cell, a final job that downloads them,
imports them and builds one report), and every ``wakelab`` command in it and in
examples/README.md parses with wakelab's own argparse.  Then a real fleet: bundles measured on
this machine, their hostnames rewritten to stand for other machines, laid out as
actions/download-artifact lays them out, and the final job's own commands run on them.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from typing import Any, Dict, Iterator, List, Tuple

import pytest

from wakelab import history
from wakelab.cli import build_parser
from wakelab.evidence.bundle import atomic_write_text, dumps

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "src")
EXAMPLES = os.path.join(ROOT, "examples")
WORKFLOW = os.path.join(EXAMPLES, "github-actions-fleet.yml")
README = os.path.join(EXAMPLES, "README.md")


def load_workflow() -> Dict[str, Any]:
    yaml = pytest.importorskip("yaml", reason="parsing the example workflow needs PyYAML (pip install pyyaml)")
    with open(WORKFLOW, encoding="utf-8") as fh:
        doc = yaml.safe_load(fh)
    assert isinstance(doc, dict)
    return doc


def steps(job: Dict[str, Any]) -> List[Dict[str, Any]]:
    return list(job["steps"])


def uses(job: Dict[str, Any], action: str) -> List[Dict[str, Any]]:
    return [s for s in steps(job) if str(s.get("uses", "")).split("@")[0] == action]


def shell_commands(script: str) -> Iterator[List[str]]:
    """Each command line of a ``run:`` script, split as a shell would (``${{ }}`` expressions as X)."""
    text = re.sub(r"\$\{\{[^}]*\}\}", "X", script).replace("\\\n", " ")
    for line in text.splitlines():
        argv = shlex.split(line, comments=True)
        if argv:
            yield argv


def wakelab_commands(doc: Dict[str, Any]) -> List[Tuple[str, List[str]]]:
    found = []
    for name, job in doc["jobs"].items():
        for step in steps(job):
            for argv in shell_commands(step.get("run", "")):
                if argv[0] == "wakelab":
                    found.append((name, argv[1:]))
    return found


def readme_commands() -> List[List[str]]:
    with open(README, encoding="utf-8") as fh:
        text = fh.read()
    blocks = re.findall(r"```sh\n(.*?)```", text, flags=re.S)
    return [argv[1:] for block in blocks for argv in shell_commands(block) if argv[0] == "wakelab"]


def parse(argv: List[str], capsys) -> Any:
    try:
        return build_parser().parse_args(argv)
    except SystemExit as exc:
        raise AssertionError("wakelab %s: %s" % (" ".join(argv), capsys.readouterr().err.strip())) from exc


# ----------------------------------------------------------------------------------------------
# The example workflow


def test_the_workflow_is_a_matrix_that_uploads_bundles_and_a_job_that_imports_and_reports() -> None:
    doc = load_workflow()
    triggers = doc.get("on", doc.get(True))  # YAML 1.1 reads a bare `on` as true
    assert "workflow_dispatch" in triggers
    measure, fleet = doc["jobs"]["measure"], doc["jobs"]["fleet"]

    matrix = measure["strategy"]["matrix"]
    assert len(matrix["runner"]) >= 2 and len(matrix["python"]) >= 2
    assert all(isinstance(v, str) for v in matrix["python"])  # "3.10" must not become 3.1
    assert measure["runs-on"] == "${{ matrix.runner }}"
    assert measure["strategy"]["fail-fast"] is False
    [setup] = uses(measure, "actions/setup-python")
    assert setup["with"]["python-version"] == "${{ matrix.python }}"

    [run] = [argv for name, argv in wakelab_commands(doc) if name == "measure" and argv[0] == "run"]
    output = run[run.index("-o") + 1]
    [upload] = uses(measure, "actions/upload-artifact")
    assert upload["if"] == "always()"
    assert upload["with"]["path"].rstrip("/") == output
    name = upload["with"]["name"]
    assert "${{ matrix.runner }}" in name and "${{ matrix.python }}" in name  # one artifact per cell

    assert fleet["needs"] == "measure"
    [download] = uses(fleet, "actions/download-artifact")
    prefix = download["with"]["pattern"].rstrip("*")
    assert name.startswith(prefix)
    folder = download["with"]["path"]
    commands = [argv for job, argv in wakelab_commands(doc) if job == "fleet"]
    imports = [argv for argv in commands if argv[:2] == ["history", "import"]]
    reports = [argv for argv in commands if argv[0] == "report"]
    assert imports and reports
    assert folder + "/*" in imports[0] and folder + "/*" in reports[0]
    # The report the last job uploads is the one it built, and its artifact is not taken for a bundle.
    [final] = uses(fleet, "actions/upload-artifact")
    assert reports[0][reports[0].index("-o") + 1] in final["with"]["path"]
    assert not final["with"]["name"].startswith(prefix)


def test_every_wakelab_command_in_the_examples_parses(capsys) -> None:
    doc = load_workflow()
    handlers = {"run": "cmd_run", "report": "cmd_report", "history": "cmd_history"}
    commands = [argv for _job, argv in wakelab_commands(doc)] + readme_commands()
    assert len(commands) >= 6
    for argv in commands:
        args = parse(argv, capsys)
        expected = "cmd_history_record" if argv[:2] == ["history", "import"] else handlers[argv[0]]
        assert args.handler.__name__ == expected, argv
    seen = {tuple(argv[:2]) for argv in commands}
    assert ("history", "import") in seen and ("report", "-o") in seen


# ----------------------------------------------------------------------------------------------
# A real fleet, made on this machine

MACHINES = (  # (artifact name, the hostname it stands for)
    ("wakelab-ubuntu-22.04-py3.11", "fleet-jammy"),
    ("wakelab-ubuntu-24.04-py3.12", "fleet-noble"),
    ("wakelab-ubuntu-24.04-arm-py3.13", "fleet-arm"),
)


def environment(tmp: str) -> Dict[str, str]:
    """PATH with a ``wakelab`` that runs this checkout, and a history of the test's own."""
    bin_dir = os.path.join(tmp, "bin")
    os.makedirs(bin_dir, exist_ok=True)
    shim = os.path.join(bin_dir, "wakelab")
    with open(shim, "w", encoding="utf-8") as fh:
        fh.write('#!/bin/sh\nexec %s -m wakelab "$@"\n' % shlex.quote(sys.executable))
    os.chmod(shim, 0o755)
    env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""), PYTHONPATH=SRC,
               WAKELAB_HISTORY=os.path.join(tmp, "default-history.sqlite3"), MPLCONFIGDIR=os.path.join(tmp, "mpl"))
    return env


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> Dict[str, Any]:
    """Three real bundles under bundles/<artifact>/, each with the hostname of another machine,
    and what the workflow's final job printed when its commands ran on them."""
    tmp = str(tmp_path_factory.mktemp("fleet"))
    env = environment(tmp)
    folders = []
    for artifact, host in MACHINES:
        folder = os.path.join(tmp, "bundles", artifact)
        result = subprocess.run(["wakelab", "run", "--arms", "event,pipe", "--n", "200", "--no-history", "-q", "-o", folder],
                                env=env, capture_output=True, text=True, timeout=240)
        assert result.returncode == 0, result.stderr
        path = os.path.join(folder, "summary.json")
        with open(path, encoding="utf-8") as fh:
            summary = json.load(fh)
        summary["machine"]["hostname"] = host
        atomic_write_text(path, dumps(summary))  # as the bundle writes it
        folders.append(folder)
    found = {"tmp": tmp, "env": env, "folders": folders}
    doc = load_workflow()
    scripts = [s["run"] for s in steps(doc["jobs"]["fleet"]) if "wakelab" in s.get("run", "") and "pip install" not in s["run"]]
    results = [run_shell(script, found) for script in scripts]  # as the job runs them, in its working directory
    found.update(scripts=scripts, results=results, db=os.path.join(tmp, "fleet-history.sqlite3"))
    return found


def run_shell(script: str, fleet: Dict[str, Any]) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-eu", "-o", "pipefail", "-c", script], cwd=fleet["tmp"], env=fleet["env"],
                          capture_output=True, text=True, timeout=300)


def test_the_final_jobs_commands_import_the_fleet_and_group_it_by_machine(fleet) -> None:
    for script, result in zip(fleet["scripts"], fleet["results"]):
        assert result.returncode == 0, (script, result.stderr)
        assert "Traceback" not in result.stderr and "error" not in result.stderr, script
    outputs = [result.stdout for result in fleet["results"]]
    db = fleet["db"]

    imported = outputs[0].splitlines()
    assert imported[-2] == "imported 3 runs from 3 machines"
    runs = history.list_runs(db)
    assert sorted(r.facts.hostname for r in runs) == sorted(host for _artifact, host in MACHINES)
    assert all(r.imported_utc and r.facts.imported_from in fleet["folders"] for r in runs)

    # Grouped by hostname: one section per machine, each with its run.
    result = run_shell("wakelab history --history fleet-history.sqlite3 --arm event --by-host", fleet)
    assert result.returncode == 0
    sections = [line for line in result.stdout.splitlines() if line.startswith("host ")]
    assert [line.split(":")[0] for line in sections] == ["host " + h for h in sorted(h for _a, h in MACHINES)]
    assert all(line.endswith("; 1 run") for line in sections)
    # Grouped by machine: one kind of machine here, under three hostnames (list, then the event trend).
    machines = [line for line in outputs[1].splitlines() if line.startswith("machine ")]
    assert len(machines) == 2 and all(m.endswith("3 runs on hosts fleet-arm, fleet-jammy, fleet-noble") for m in machines)

    # Importing again adds nothing.
    with open(db, "rb") as fh:
        before = fh.read()
    result = run_shell(fleet["scripts"][0], fleet)
    assert result.stdout.splitlines()[-2] == "imported 3 runs (3 already recorded) from 3 machines"
    with open(db, "rb") as fh:
        assert fh.read() == before
    assert len(history.list_runs(db)) == 3


def test_the_fleet_report_is_one_page_that_names_each_host(fleet) -> None:
    [report] = [r for s, r in zip(fleet["scripts"], fleet["results"]) if s.startswith("wakelab report")]
    assert report.returncode == 0
    with open(os.path.join(fleet["tmp"], "fleet-report.html"), encoding="utf-8") as fh:
        page = fh.read()
    for _artifact, host in MACHINES:
        assert host in page
