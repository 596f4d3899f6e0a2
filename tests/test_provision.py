"""The real CPython 3.14 and 3.15 that .ci/provision-pythons unpacks from Debian unstable's binary packages.

.ci/run provisions them into $WAKELAB_CACHE/unpacked/cpython-3.1x/ before the tests; where that could
not be done (no Debian mirror, no network) the interpreter tests skip with the reason.  The script's
argument errors are tested without touching the network.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, ".ci", "provision-pythons")
MARKER = "wakelab-unpacked.json"


def _starting_environ(name: str) -> str:
    """``name`` as this process was started with it: conftest points XDG_CACHE_HOME at a throwaway folder
    for the suite, and the cache that .ci/run (or a developer) filled is the one of the caller's environment."""
    try:
        with open("/proc/self/environ", "rb") as fh:
            for entry in fh.read().split(b"\0"):
                key, _, value = entry.partition(b"=")
                if key.decode(errors="replace") == name:
                    return os.fsdecode(value)
        return ""
    except OSError:  # pragma: no cover - no /proc
        return os.environ.get(name, "")


def real_cache() -> str:
    """$WAKELAB_CACHE, else $XDG_CACHE_HOME/wakelab, else ~/.cache/wakelab (the script's and wakelab's rule)."""
    if os.environ.get("WAKELAB_CACHE"):
        return os.path.abspath(os.environ["WAKELAB_CACHE"])
    base = _starting_environ("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(os.path.abspath(base), "wakelab")


PROBE = (
    "import concurrent.interpreters, json, multiprocessing, sys\n"
    "interp = concurrent.interpreters.create()\n"
    "interp.close()\n"
    "print(json.dumps({'version': '%d.%d.%d' % sys.version_info[:3], 'start_method': multiprocessing.get_start_method()}))\n"
)


@pytest.mark.parametrize("version", ["3.14", "3.15"])
def test_the_provisioned_interpreter_runs(version: str) -> None:
    prefix = os.path.join(real_cache(), "unpacked", "cpython-" + version)
    if not os.path.isfile(os.path.join(prefix, MARKER)):
        pytest.skip("no provisioned CPython %s in %s (.ci/provision-pythons %s puts it there)" % (version, prefix, version))
    with open(os.path.join(prefix, MARKER), encoding="utf-8") as fh:
        marker = json.load(fh)
    binary = os.path.join(prefix, "usr", "bin", "python" + version)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "LD_")) and k != "VIRTUAL_ENV"}
    done = subprocess.run([binary, "-I", "-c", PROBE], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["version"].startswith(version + ".")
    assert report["version"] == marker["version"]
    assert report["start_method"] == "forkserver"


@pytest.mark.parametrize("argv", [["3.99"], ["3.15", "2.7"], ["--rebuild"], ["3.14t"]])
def test_an_unknown_version_is_one_line_and_a_failure(argv, tmp_path) -> None:
    cache = tmp_path / "cache"
    env = dict(os.environ, WAKELAB_CACHE=str(cache))
    done = subprocess.run([sys.executable, SCRIPT, *argv], capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode != 0
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and "unknown version" in lines[0] and argv[-1] in lines[0], done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert not cache.exists()  # nothing was set up, nothing fetched


def test_the_script_is_executable_and_says_how_to_call_it() -> None:
    assert os.access(SCRIPT, os.X_OK)
    done = subprocess.run([sys.executable, SCRIPT, "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "provision-pythons [3.14] [3.15]" in done.stdout and done.stderr == ""
