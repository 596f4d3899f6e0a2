"""``wakelab list`` lists user-defined arms: ``--arm-file`` (loaded as ``wakelab run`` loads them)
and the installed packages' ``wakelab.arms`` entry points, each marked with where it came from.

Every case runs ``python -m wakelab list`` in a subprocess: loading registers arms in the process,
and entry points are found on ``PYTHONPATH``.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from typing import Any, Dict, Optional

import pytest
from test_user_arms import _install_provider

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "src")
MAILBOX = os.path.join(ROOT, "examples", "arms_mailbox.py")

ARM_FILE = '''
import threading
from wakelab.api.v1 import BLOCKED, CROSS_THREAD, Arm, WakePath

def event_path():
    event = threading.Event()
    return WakePath(reset=event.clear, wait=event.wait, notify=event.set)

ARMS = [Arm(name=%r, family="threads", waiter=BLOCKED, scope=CROSS_THREAD,
            t0="main thread: before Event.set()", t1="waiter: after Event.wait() returns", path=event_path)]
'''


def wakelab(*args: str, site: Optional[str] = None) -> "subprocess.CompletedProcess[str]":
    """``python -m wakelab ARGS`` with this source tree (and ``site``, a provider's folder) on the path."""
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join([SRC] + ([site] if site else [])))
    return subprocess.run([sys.executable, "-m", "wakelab", *args], capture_output=True, text=True, timeout=120,
                          env=environment, cwd=ROOT)


def write(tmp_path: Any, body: str, name: str = "arms.py") -> str:
    path = os.path.join(str(tmp_path), name)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(textwrap.dedent(body))
    return path


def sha256_of(path: str) -> str:
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


def listed(result: "subprocess.CompletedProcess[str]") -> Dict[str, Any]:
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    data: Dict[str, Any] = json.loads(result.stdout)
    return data


def arm_of(data: Dict[str, Any], name: str) -> Dict[str, Any]:
    found: Dict[str, Any] = next(a for a in data["arms"] if a["name"] == name)
    return found


def test_built_in_arms_are_marked_built_in_and_the_table_is_unchanged() -> None:
    data = listed(wakelab("list", "--json"))
    assert data["not_loaded"] == []
    assert all(a["user_defined"] is False and a["source"] == "built-in" for a in data["arms"])
    text = wakelab("list")
    assert text.returncode == 0 and text.stderr == ""
    header = text.stdout.splitlines()[1]
    assert header.split() == ["arm", "family", "kind", "waiter", "scope", "available", "here"]
    assert "NOT LOADED" not in text.stdout


def test_arm_file_arms_are_listed_with_the_file_and_its_sha256() -> None:
    digest = sha256_of(MAILBOX)
    data = listed(wakelab("list", "--json", "--arm-file", MAILBOX))
    mailbox = arm_of(data, "mailbox")
    assert mailbox["user_defined"] is True and mailbox["available"] is True
    assert mailbox["source"] == "arm file %s (sha256 %s)" % (MAILBOX, digest[:12])
    assert mailbox["origin"]["sha256"] == digest and mailbox["origin"]["source"] == "file"
    assert arm_of(data, "event")["source"] == "built-in"

    text = wakelab("list", "--arm-file", MAILBOX)
    assert text.returncode == 0 and text.stderr == ""
    lines = text.stdout.splitlines()
    assert lines[1].split()[:6] == ["arm", "family", "kind", "waiter", "scope", "defined"]
    row = next(line for line in lines if line.startswith("  mailbox "))
    assert "user: arms_mailbox.py sha256 %s" % digest[:8] in row
    assert next(line for line in lines if line.startswith("  event ")).split()[5] == "built-in"
    assert "user-defined: arm file %s (sha256 %s)" % (MAILBOX, digest[:12]) in text.stdout.replace("\n      ", " ")


def test_several_arm_files(tmp_path: Any) -> None:
    other = write(tmp_path, ARM_FILE % "other-event")
    data = listed(wakelab("list", "--json", "--arm-file", MAILBOX, "--arm-file", other))
    assert [a["name"] for a in data["arms"] if a["user_defined"]] == ["mailbox", "other-event"]


@pytest.mark.parametrize("case", ["missing", "syntax", "no-arms", "builtin-name", "twice", "directory"])
def test_a_bad_arm_file_is_the_same_one_line_error_as_run_gives(tmp_path: Any, case: str) -> None:
    args = {
        "missing": lambda: ["--arm-file", os.path.join(str(tmp_path), "nope.py")],
        "syntax": lambda: ["--arm-file", write(tmp_path, "def broken(:\n")],
        "no-arms": lambda: ["--arm-file", write(tmp_path, "X = 1\n")],
        "builtin-name": lambda: ["--arm-file", write(tmp_path, ARM_FILE % "event")],
        "twice": lambda: ["--arm-file", MAILBOX, "--arm-file", MAILBOX],
        "directory": lambda: ["--arm-file", str(tmp_path)],
    }[case]()
    listing = wakelab("list", *args)
    assert listing.returncode == 2 and listing.stdout == ""
    assert len(listing.stderr.splitlines()) == 1 and listing.stderr.startswith("wakelab: error: ")
    assert "Traceback" not in listing.stderr
    run = wakelab("run", *args, "-o", os.path.join(str(tmp_path), "out"), "--no-history", "-q")
    assert (run.returncode, run.stderr) == (2, listing.stderr)


def test_an_empty_arm_file_path_is_a_usage_error() -> None:
    result = wakelab("list", "--arm-file", "")
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == "wakelab list: error: argument --arm-file: expected a Python file, got an empty string (see wakelab list --help)"


def test_entry_point_arms_are_listed_with_their_distribution(tmp_path: Any) -> None:
    site = _install_provider(tmp_path)
    data = listed(wakelab("list", "--json", site=site))
    demo = arm_of(data, "demo-event")
    assert demo["user_defined"] is True and demo["available"] is True
    assert demo["source"] == "entry point demo-event = demo_arms:DEMO (wakelab-demo-arms 1.2.3)"
    assert (demo["origin"]["distribution"], demo["origin"]["version"]) == ("wakelab-demo-arms", "1.2.3")
    # The broken provider does not fail the listing: it is named, with run's one line.
    assert [f["name"] for f in data["not_loaded"]] == ["broken-arm"]
    assert data["not_loaded"][0]["error"] == (
        "entry point broken-arm = demo_arms.broken:ARM (wakelab-demo-arms 1.2.3): RuntimeError: a broken provider (broken.py line 1, in <module>)")

    text = wakelab("list", site=site)
    assert text.returncode == 0 and text.stderr == ""
    row = next(line for line in text.stdout.splitlines() if line.startswith("  demo-event "))
    assert "user: entry point (wakelab-demo-arms 1.2.3)" in row
    assert "NOT LOADED (entry points in the 'wakelab.arms' group)\n  broken-arm -- entry point broken-arm" in text.stdout


def test_an_arm_file_arm_shadows_an_entry_point_of_the_same_name(tmp_path: Any) -> None:
    """As in 'wakelab run --arms demo-event --arm-file F', the file's arm is the one; the entry point is named."""
    site = _install_provider(tmp_path)
    path = write(tmp_path, ARM_FILE % "demo-event")
    data = listed(wakelab("list", "--json", "--arm-file", path, site=site))
    assert arm_of(data, "demo-event")["origin"]["source"] == "file"
    shadowed = next(f for f in data["not_loaded"] if f["name"] == "demo-event")
    assert "is already defined by arm file %s" % path in shadowed["error"]


def test_listing_twice_in_one_process_loads_each_entry_point_once(tmp_path: Any) -> None:
    site = _install_provider(tmp_path)
    probe = (
        "import json\n"
        "from wakelab.commands.listing import list_arms\n"
        "first, second = list_arms().to_dict(), list_arms().to_dict()\n"
        "print(json.dumps([[a['name'] for a in d['arms'] if a['user_defined']] + [f['name'] for f in d['not_loaded']] "
        "for d in (first, second)]))\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([SRC, site]))
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [["demo-event", "broken-arm"], ["demo-event", "broken-arm"]]


def test_a_user_arm_s_text_is_escaped_on_the_terminal(tmp_path: Any) -> None:
    path = write(tmp_path, ARM_FILE % "odd-event", name="arms\x1b[31m.py")
    text = wakelab("list", "--arm-file", path)
    assert text.returncode == 0, text.stderr
    assert "\x1b" not in text.stdout
    assert "arms\\x1b[31m.py" in text.stdout
