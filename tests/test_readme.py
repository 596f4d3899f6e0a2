"""The README tells the truth: its commands are CI's, its example output is a real run's."""

from __future__ import annotations

import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _read(*parts: str) -> str:
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as fh:
        return fh.read()


def _sh_blocks(text: str) -> list:
    return re.findall(r"```sh\n(.*?)```", text, re.S)


def test_readme_gives_the_two_commands_and_ci_runs_the_test_one() -> None:
    readme = _read("README.md")
    blocks = _sh_blocks(readme)
    lab, tests = blocks[0].strip(), blocks[1].strip()
    assert lab == "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/wakelab run"
    assert tests == "python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && .venv/bin/python -m pytest"
    ci = _read(".ci", "run")
    assert tests in ci.splitlines()


def test_readme_example_output_comes_from_the_committed_run() -> None:
    readme = _read("README.md")
    example = re.search(r"```text\n(Lab 135.*?)```", readme, re.S)
    assert example is not None, "README should show the start of the committed summary.txt"
    committed = _read("lab-evidence", "135-signal-vs-event-wakeup", "results", "summary.txt")
    assert committed.startswith(example.group(1))


def test_every_command_is_in_the_readme() -> None:
    from wakelab.commands import command_modules

    readme = _read("README.md")
    names = {"listing": "list"}
    for module in command_modules():
        assert "wakelab %s" % names.get(module, module) in readme
