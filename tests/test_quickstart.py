"""The README's quick start works, and the docs name only real commands.

Every ``wakelab`` command in the README's quick start -- the one command of each question, in its
``sh`` block, and the alternatives named in its text -- is run for real, from this checkout, with
the smallest parameters that keep it meaningful (a few wakes, one pass, a throwaway history and
output folder), and must exit 0 and write what the quick start tells the reader to look at.
Arms that cannot run here are skipped by wakelab itself, with the reason; a command that needs an
interpreter this machine does not have is skipped here, with the reason.

Every command in a ``sh`` block of README.md and docs/*.md is parsed by wakelab's own argparse
parser (``wakelab.cli.build_parser``), so a renamed option or subcommand fails here.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from typing import Dict, List, Optional, Tuple

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
QUICKSTART_START = "<!-- quickstart"
QUICKSTART_END = "<!-- /quickstart -->"


def _read(*parts: str) -> str:
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as fh:
        return fh.read()


def _quickstart() -> str:
    readme = _read("README.md")
    start, end = readme.find(QUICKSTART_START), readme.find(QUICKSTART_END)
    assert 0 <= start < end, "README.md marks its quick start with %r ... %r" % (QUICKSTART_START, QUICKSTART_END)
    return readme[start:end]


def _block_commands(text: str) -> List[str]:
    """The lines of every ``sh`` / ``shell`` block, comments and blank lines left out."""
    lines = []
    for block in re.findall(r"```(?:sh|shell)\n(.*?)```", text, re.S):
        for line in block.splitlines():
            words = shlex.split(line, comments=True)
            if words:
                lines.append(" ".join(shlex.quote(w) for w in words))
    return lines


def _inline_commands(text: str) -> List[str]:
    """Inline code spans that are whole wakelab commands (outside fenced blocks)."""
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    return [span for span in re.findall(r"`(wakelab [^`]+)`", prose)]


def quickstart_questions() -> List[Tuple[str, List[str], List[str]]]:
    """(question, its block commands, the wakelab commands in its text) for each quick-start question."""
    parts = re.split(r"^\*\*(.+?\?)\*\*$", _quickstart(), flags=re.M)
    return [(question, _block_commands(body), _inline_commands(body)) for question, body in zip(parts[1::2], parts[2::2])]


# Commands of docs/contributing.md that are not wakelab's: .ci/run runs each of them.
TOOLS = (".venv/bin/ruff", ".venv/bin/mypy", ".venv/bin/python")


def _parse(words: List[str]) -> None:
    from wakelab.cli import build_parser

    build_parser().parse_args(words)


# -- every command named is a real one (fast) ----------------------------------------------------

def test_each_quickstart_question_has_one_command() -> None:
    questions = quickstart_questions()
    assert len(questions) >= 9, [q for q, _, _ in questions]
    for question, blocks, _ in questions:
        assert len(blocks) == 1, (question, blocks)
        assert blocks[0].startswith("wakelab "), (question, blocks)
    commands = " | ".join(blocks[0] for _, blocks, _ in questions)
    for needed in ("--lab catalogue", "wakelab run", "wakelab ab", "--python all", "--lab free-threading",
                   "--lab handoff", "--lab storms", "--lab realtime", "--arm-file"):
        assert needed in commands, needed


@pytest.mark.parametrize("page", ["README.md"] + sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md"))))
def test_every_command_block_parses(page: str) -> None:
    text = _read(page)
    commands = _block_commands(text)
    if page == "README.md":
        commands += _inline_commands(_quickstart())
    for line in commands:
        words = shlex.split(line)
        if os.path.basename(words[0]) == "wakelab":
            try:
                _parse(words[1:])
            except SystemExit as exc:
                pytest.fail("%s: %r does not parse (exit %s)" % (page, line, exc.code))
        elif words[0] in ("python3", "python") and words[1].endswith(".py"):
            assert os.path.isfile(os.path.join(ROOT, words[1])), (page, line)
        elif line.startswith("python3 -m venv .venv") or words[0] in TOOLS:
            continue  # setting up, and the linters: CI runs these (tests/test_readme.py holds the README's to it)
        else:
            pytest.fail("%s: a command block line that is neither wakelab, a tool CI runs nor a script of this "
                        "repository: %r" % (page, line))


def test_the_docs_pages_are_linked_from_the_readme() -> None:
    readme = _read("README.md")
    for path in glob.glob(os.path.join(ROOT, "docs", "*.md")):
        name = os.path.basename(path)
        if name != "README.md":
            assert "docs/%s" % name in readme, name
    for target in re.findall(r"\]\((docs/[^)#]+)", readme):
        assert os.path.isfile(os.path.join(ROOT, target)), target


def test_the_docs_links_lead_somewhere() -> None:
    for path in glob.glob(os.path.join(ROOT, "docs", "*.md")):
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", _read(path)):
            assert os.path.exists(os.path.join(os.path.dirname(path), target)), (path, target)


# -- every quick-start command runs (slow: real measurements) -----------------------------------

# Appended to each command that takes them: few wakes, one pass and one worker, quiet, the run
# not recorded, its folder ours.  --python all and the free-threading lab run grids of many cells:
# the same smallest run in each.
SMALL_RUN = ["-n", "20", "--repeat", "1", "--workers", "1", "--install-n", "2000", "--rounds", "3", "--no-history", "-q"]
# An A/B needs several worker slices a side for its interval to see the variation between workers
# (with one slice an identical A/A can fail the gate): the default five turns, few wakes each.
SMALL_AB = ["-n", "50", "-q"]
# Not run: it compiles CPython (about 6 minutes per build); .ci/run builds it, and
# tests/test_provision.py and test_interpreters.py test the building.
PARSED_ONLY = ("wakelab interpreters build",)


def _interpreters():
    from wakelab.harness.interpreters import discover, usable

    return usable(discover())


def _needs(words: List[str]) -> Optional[str]:
    """Why this command cannot run here (None: it can)."""
    from wakelab.harness.interpreters import free_threading_pair

    if "--lab" in words and words[words.index("--lab") + 1] == "free-threading":
        gil, ft = free_threading_pair(_interpreters())
        if gil is None or ft is None:
            return "no free-threaded CPython with its GIL build here: 'wakelab interpreters build 3.13t' makes both (.ci/run does)"
    if "--python" in words:
        release = words[words.index("--python") + 1]
        if release != "all":
            wanted = tuple(int(p) for p in release.rstrip("t").split("."))
            if not any(i.implementation == "cpython" and tuple(i.version[:2]) == wanted for i in _interpreters()):
                return "no CPython %s here (.ci/provision-pythons provides 3.14 and 3.15)" % release
    return None


def _wakelab(words: List[str], cwd: str, timeout_s: float) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "wakelab"] + words, cwd=cwd, capture_output=True, text=True,
                          timeout=timeout_s)


@pytest.fixture(scope="module")
def places(tmp_path_factory) -> Dict[str, str]:
    """What the quick start's placeholders stand for: two checkouts of a library, two runs."""
    base = tmp_path_factory.mktemp("quickstart")
    places = {}
    for side in ("BASE", "HEAD"):
        places[side] = str(base / side.lower())
        shutil.copytree(os.path.join(ROOT, "examples", "ab-library"), places[side])
    for name in ("A", "B"):
        places[name] = str(base / ("run-" + name.lower()))
        done = _wakelab(["run", "-o", places[name]] + SMALL_RUN, ROOT, 300)
        assert done.returncode == 0, done.stderr
    return places


def _substitute(words: List[str], places: Dict[str, str]) -> List[str]:
    out = []
    for word in words:
        head, sep, rest = word.partition("/")
        out.append(places[head] + sep + rest if head in places else word)
    return out


# What the quick start tells the reader to look at, by lab: text that must be in the run's
# summary.txt (a grid's: matrix.txt).
READ = {
    "catalogue": ["GUIDANCE", "vs C"],
    "135": ["VERDICT", "signal-install", "sigusr1-self"],
    "matched": ["VERDICT", "vs C"],
    "storms": ["SIGNAL STORMS", "storm-rt-sigwait", "work lost"],
    "realtime": ["WHAT REALTIME SCHEDULING BOUGHT THE WAITER", "event-fifo"],
    "handoff": ["interp-pool-submit", "thread-pool-submit", "process-pool-submit", "interp-queue"],
    "free-threading": ["WHAT REMOVING THE GIL DID"],
}
# A grid of interpreters: each arm cell by cell, over the first.
READ_GRID = ["CELLS", "p50 vs first", "p99 vs first"]
# Per lab, what keeps the smallest run meaningful: the realtime lab is about the p99 (which needs
# 100 wakes); the free-threading lab's grid (3 builds x 3 busy-thread counts x 2 placements) takes
# minutes on 2 cores, so its run keeps the builds and one busy thread on one CPU, where they differ.
LAB_RUN = {
    "realtime": ["-n", "100"],
    "free-threading": ["--cpu-threads", "1", "--placement", "same"],
}


def _lab(words: List[str]) -> str:
    return words[words.index("--lab") + 1] if "--lab" in words else "135"


def _all_quickstart_commands() -> List[str]:
    commands = []
    for _, blocks, inline in quickstart_questions():
        for command in blocks + inline:
            if command not in commands:
                commands.append(command)
    return commands


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("command", _all_quickstart_commands())
def test_quickstart_command_runs(command: str, places: Dict[str, str], tmp_path) -> None:
    words = shlex.split(command)[1:]
    if command.startswith(PARSED_ONLY):
        _parse(words)
        pytest.skip("parsed, not run: %s compiles CPython for minutes (.ci/run does it)" % command)
    why = _needs(words)
    if why:
        pytest.skip(why)
    words = _substitute(words, places)
    out = str(tmp_path / "out")
    if words[0] == "run":
        words = words + ["-o", out] + SMALL_RUN + LAB_RUN.get(_lab(words), [])
    elif words[0] == "ab":
        words = words + ["-o", out] + SMALL_AB
    done = _wakelab(words, ROOT, 1700)
    assert done.returncode == 0, (command, done.returncode, done.stderr[-3000:], done.stdout[-3000:])
    if words[0] == "compare":
        assert "event" in done.stdout and "sigusr1-self" in done.stdout, done.stdout
        return
    if words[0] == "ab":
        assert "GATE" in done.stdout and "wakeq-notify" in done.stdout, done.stdout
        return
    if words[0] != "run":
        assert done.stdout.strip(), command
        return
    grid = os.path.exists(os.path.join(out, "matrix.json"))
    shown = _read(out, "matrix.txt" if grid else "summary.txt")
    read = READ_GRID if "--python" in words and words[words.index("--python") + 1] == "all" else READ.get(_lab(words), [])
    if "--arm-file" in words:
        read = ["VERDICT"] + words[words.index("--arms") + 1].split(",")
    for text in read:
        assert text in shown, (command, text)
    summaries = glob.glob(os.path.join(out, "cells", "*", "summary.json")) if grid else [os.path.join(out, "summary.json")]
    assert summaries
    for path in summaries:
        with open(path, encoding="utf-8") as fh:
            summary = json.load(fh)
        statuses = {arm["name"]: arm["status"] for arm in summary["arms"]}
        assert set(statuses.values()) <= {"ok", "skipped"}, (path, statuses)
        assert "ok" in statuses.values(), (path, statuses)
