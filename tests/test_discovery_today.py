"""Today's Pythons: uv, conda and mamba, PATH's python3.Nt, wakelab's unpacked cache; --python by label
or release; and what else changes a wake in a build (JIT, GC, multiprocessing's start method).

Fake interpreters are small shell scripts, as in tests/test_interpreters.py, that answer the
discovery probe as the interpreter they pretend to be -- whatever their file is called, so that a
label is seen to come from the answer, never from the name.  Every survey here is given its whole
environment (HOME, PATH, the cache ...) so the Pythons of whoever runs the tests stay out of it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import pytest

from wakelab.commands.run import _pythons
from wakelab.evidence.load import load_summary
from wakelab.harness import metadata
from wakelab.harness.interpreters import (
    FACTS_TAG, UNPACKED_MARKER, Candidate, Interpreter, conda_prefixes, parse_python_spec, probe, resolve_python,
    survey, uv_python_dir,
)
from wakelab.labs import LAB_135

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
PLACES = ("UV_PYTHON_INSTALL_DIR", "XDG_DATA_HOME", "CONDA_PREFIX", "MAMBA_ROOT_PREFIX", "PYENV_ROOT",
          "WAKELAB_INTERPRETERS", "PYTHON_GIL", "PYTHON_JIT")


def fake_python(path, version="3.13.5", implementation="cpython", free_threaded=False, impl_version=None, facts=None):
    """A script that answers the probe as that interpreter would: the facts line (when ``facts`` is
    given), then the classic line (a free-threaded one honours PYTHON_GIL)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    gil = '"$( [ "$PYTHON_GIL" = 1 ] && echo 1 || echo 0 )"' if free_threaded else "1"
    facts_line = "echo '%s%s'\n" % (FACTS_TAG, json.dumps(facts)) if facts is not None else ""
    path.write_text("#!/bin/sh\n%secho %s %s %s %d %s \"$0\"\n" % (
        facts_line, version, implementation, impl_version or version, int(free_threaded), gil))
    path.chmod(0o755)
    return str(path)


@pytest.fixture
def env(tmp_path, monkeypatch):
    """A whole environment with nothing in it: HOME, PATH and the cache in tmp_path."""
    for name in PLACES:
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "home").mkdir()
    (tmp_path / "bin").mkdir()
    return {"HOME": str(tmp_path / "home"), "PATH": str(tmp_path / "bin"), "WAKELAB_CACHE": str(tmp_path / "cache")}


def _by_label(found):
    return {c.interpreter.label: c for c in found if c.interpreter is not None}


def test_uv_path_conda_and_the_cache_are_each_found_once_and_labelled_by_what_they_say(tmp_path, env) -> None:
    home = tmp_path / "home"
    uv = home / ".local" / "share" / "uv" / "python"
    gil315 = fake_python(uv / "cpython-3.15.2-linux-x86_64-gnu" / "bin" / "python3.15", "3.15.2")
    os.symlink(gil315, uv / "cpython-3.15.2-linux-x86_64-gnu" / "bin" / "python3")
    os.symlink(uv / "cpython-3.15.2-linux-x86_64-gnu", uv / "cpython-3.15-linux-x86_64-gnu")  # uv's minor-version link
    fake_python(uv / "cpython-3.14.0+freethreaded-linux-x86_64-gnu" / "bin" / "python3.14t", "3.14.0", free_threaded=True)
    (uv / ".lock").write_text("")
    # PATH: a free-threaded python3.14t, and a file whose name says 3.15 but which says it is 3.14.
    fake_python(tmp_path / "bin" / "python3.14t", "3.14.2", free_threaded=True)
    fake_python(tmp_path / "bin" / "python3.15", "3.14.3")
    # conda and mamba: the active environment, one listed in ~/.conda/environments.txt, a root's envs/*.
    fake_python(tmp_path / "active" / "bin" / "python3.12", "3.12.4")
    fake_python(tmp_path / "elsewhere" / "listed" / "bin" / "python3", "3.11.9")
    (home / ".conda").mkdir()
    (home / ".conda" / "environments.txt").write_text("%s\n\n# a comment\n" % (tmp_path / "elsewhere" / "listed"))
    fake_python(home / "miniforge3" / "envs" / "ft" / "bin" / "python3.13t", "3.13.5", free_threaded=True)
    fake_python(home / "micromamba" / "envs" / "pp" / "bin" / "pypy3.10", "3.10.14", "pypy", impl_version="7.3.17")
    # wakelab's cache: a finished unpack (marker) and one still being unpacked (none).
    done = tmp_path / "cache" / "unpacked" / "cpython-3.14"
    fake_python(done / "usr" / "bin" / "python3.14", "3.14.2")
    (done / UNPACKED_MARKER).write_text("{}")
    half = tmp_path / "cache" / "unpacked" / "cpython-3.15"
    fake_python(half / "usr" / "bin" / "python3.15", "3.15.2")

    found = survey(environ=dict(env, CONDA_PREFIX=str(tmp_path / "active")))
    labels = [(c.interpreter.label, c.origin) for c in found if c.interpreter]
    assert labels == [
        ("cpython-3.11.9", "conda"), ("cpython-3.12.4", "conda"), ("cpython-3.13.5t", "conda"), ("cpython-3.14.0t", "uv"),
        ("cpython-3.14.2", "cache"), ("cpython-3.14.2t", "PATH"), ("cpython-3.14.3", "PATH"), ("cpython-3.15.2", "uv"),
        ("pypy-3.10.14", "conda"),
    ]
    by_label = _by_label(found)
    assert os.path.basename(by_label["cpython-3.14.3"].path) == "python3.15"  # labelled by its answer, not its name
    assert os.path.realpath(by_label["cpython-3.15.2"].path) == gil315  # three names for it, one interpreter
    assert all(c.usable for c in by_label.values())
    bad = [c for c in found if c.interpreter is None]
    assert len(bad) == 1 and bad[0].origin == "cache" and bad[0].reason == (
        "incomplete unpack in %s (no %s: still being unpacked, or interrupted)" % (half, UNPACKED_MARKER))
    (half / UNPACKED_MARKER).write_text("{}")
    assert [c.usable for c in survey(environ=env) if c.path.startswith(str(half))] == [True]


def test_where_uv_and_conda_keep_their_pythons(tmp_path) -> None:
    assert uv_python_dir({"HOME": "/h"}) == "/h/.local/share/uv/python"
    assert uv_python_dir({"HOME": "/h", "XDG_DATA_HOME": "/d"}) == "/d/uv/python"
    assert uv_python_dir({"HOME": "/h", "XDG_DATA_HOME": "/d", "UV_PYTHON_INSTALL_DIR": "/u"}) == "/u"
    (tmp_path / "miniconda3" / "envs" / "a").mkdir(parents=True)
    (tmp_path / "mm" / "envs" / "b").mkdir(parents=True)
    prefixes = conda_prefixes({"HOME": str(tmp_path), "CONDA_PREFIX": "/active", "MAMBA_ROOT_PREFIX": str(tmp_path / "mm")})
    assert prefixes[:4] == ["/active", str(tmp_path / "mm"), str(tmp_path / "mm" / "envs" / "b"), str(tmp_path / "miniconda3")]
    assert str(tmp_path / "miniconda3" / "envs" / "a") in prefixes and str(tmp_path / "mambaforge") in prefixes


def test_pyenv_free_threaded_versions_are_found(tmp_path, env) -> None:
    fake_python(tmp_path / "pyenv" / "versions" / "3.14t" / "bin" / "python3.14t", "3.14.2", free_threaded=True)
    found = survey(environ=dict(env, PYENV_ROOT=str(tmp_path / "pyenv")))
    assert [(c.interpreter.label, c.origin) for c in found] == [("cpython-3.14.2t", "pyenv")]


# -- what else changes a wake in the build ---------------------------------------------------------

def test_the_probe_reports_jit_gc_and_start_method_and_an_old_answer_still_reads(tmp_path, env) -> None:
    facts = {"jit": {"available": True, "enabled": False}, "gc": "incremental", "gc_thresholds": [2000, 10, 0],
             "multiprocessing_start_method": "forkserver"}
    new = probe(fake_python(tmp_path / "a" / "python3.14", "3.14.0", facts=facts))
    assert new is not None and new.label == "cpython-3.14.0"
    assert (new.jit_available, new.jit_enabled, new.jit_text, new.gc, new.gc_thresholds, new.start_method) == (
        True, False, "off", "incremental", (2000, 10, 0), "forkserver")
    assert new.facts_dict() == facts
    old = probe(fake_python(tmp_path / "b" / "python3.13", "3.13.5"))
    assert old is not None and (old.jit_available, old.jit_text, old.gc, old.start_method) == (None, "-", None, None)
    odd = probe(fake_python(tmp_path / "c" / "python3.13", "3.13.5", facts=["not", "a", "dict"]))
    assert odd is not None and odd.label == "cpython-3.13.5" and odd.gc is None


def test_the_real_probe_says_what_this_interpreter_records_in_a_run() -> None:
    here = probe(sys.executable)
    assert here is not None
    recorded = metadata.interpreter_info()
    assert here.facts_dict() == {key: recorded.get(key) for key in ("jit", "gc", "gc_thresholds", "multiprocessing_start_method")}
    assert here.start_method == __import__("multiprocessing").get_all_start_methods()[0]
    assert here.gc in ("generational", "incremental", "free-threaded", None if sys.implementation.name != "cpython" else "x")
    assert ("jit" in recorded) == hasattr(sys, "_jit")


def test_build_facts_read_the_gc_from_the_interpreter_not_its_version(monkeypatch) -> None:
    """3.14's incremental collector says 0 for a third generation it does not have; a 3.14 or 3.15 with the
    generational collector back (3.15.2) says a real threshold, and is not called incremental."""
    import gc

    if sys.implementation.name != "cpython" or metadata.sysconfig.get_config_var("Py_GIL_DISABLED"):
        pytest.skip("a CPython GIL build")
    monkeypatch.setattr(sys, "version_info", (3, 14, 0, "final", 0))
    monkeypatch.setattr(gc, "get_threshold", lambda: (2000, 10, 0))
    assert metadata.build_facts()["gc"] == "incremental"
    monkeypatch.setattr(gc, "get_threshold", lambda: (2000, 10, 10))
    assert metadata.build_facts()["gc"] == "generational"


def test_interpreters_command_shows_the_build_facts(tmp_path, env) -> None:
    fake_python(tmp_path / "bin" / "python3.15", "3.15.2", facts={
        "jit": {"available": True, "enabled": True}, "gc": "generational", "gc_thresholds": [2000, 10, 10],
        "multiprocessing_start_method": "forkserver"})
    fake_python(tmp_path / "bin" / "python3.12", "3.12.1")
    full = dict(os.environ, PYTHONPATH=SRC, **env)
    done = subprocess.run([sys.executable, "-m", "wakelab", "interpreters", "--json"], capture_output=True, text=True,
                          env=full, timeout=60)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    rows = {r["label"]: r for r in json.loads(done.stdout)}
    assert rows["cpython-3.15.2"]["jit"] == {"available": True, "enabled": True}
    assert (rows["cpython-3.15.2"]["gc"], rows["cpython-3.15.2"]["multiprocessing_start_method"]) == ("generational", "forkserver")
    assert rows["cpython-3.12.1"]["jit"] is None and rows["cpython-3.12.1"]["gc"] is None
    text = subprocess.run([sys.executable, "-m", "wakelab", "interpreters"], capture_output=True, text=True, env=full,
                          timeout=60).stdout
    header, first, second = text.splitlines()[:3]
    assert header.split()[:8] == ["interpreter", "implementation", "version", "build", "GIL", "JIT", "GC", "mp"]
    assert first.split()[:8] == ["cpython-3.12.1", "cpython", "3.12.1", "default", "on", "-", "-", "-"]
    assert second.split()[:8] == ["cpython-3.15.2", "cpython", "3.15.2", "default", "on", "on", "generational", "forkserver"]


# -- --python by label or release ------------------------------------------------------------------

def _found(*interps):
    return lambda: [Candidate(i.path, i.origin, i, None) for i in interps]


def _interp(version, free_threaded=False, implementation="cpython", path=None):
    numbers = tuple(int(x) for x in version.split("."))
    return Interpreter(path or "/x/%s-%s%s" % (implementation, version, "t" if free_threaded else ""), numbers,
                       implementation, free_threaded, gil_enabled=not free_threaded)


# What "here" has for the --python tests: two 3.12 patch releases, 3.14 twice (a GIL build, and a newer
# free-threaded one), a PyPy, and a CPython too old to measure with.
HERE = [_interp("3.11.7"), _interp("3.12.1"), _interp("3.12.3"), _interp("3.14.2"), _interp("3.14.3", True), _interp("3.15.2"),
        _interp("3.9.18", implementation="pypy"), _interp("3.8.18")]


@pytest.mark.parametrize("value, label", [
    ("cpython-3.15.2", "cpython-3.15.2"),
    ("3.15", "cpython-3.15.2"),
    ("3.14", "cpython-3.14.2"),  # the GIL build, though a newer free-threaded 3.14 is here too
    ("3.14t", "cpython-3.14.3t"),
    ("cpython-3.14.3t", "cpython-3.14.3t"),
    ("3.12", "cpython-3.12.3"),  # the newest of two patch releases, and the label says which
    ("3.12.1", "cpython-3.12.1"),
    ("cpython", "cpython-3.15.2"),
    ("pypy", "pypy-3.9.18"),
    ("pypy-3.9.18", "pypy-3.9.18"),
    ("pypy3.9", "pypy-3.9.18"),  # not on PATH: looked for among those found
])
def test_python_by_label_or_release(value, label, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    path, interp = resolve_python(value, _found(*HERE))
    assert (interp.label, path) == (label, interp.path)


def test_a_bare_release_takes_a_free_threaded_build_when_it_is_the_only_one(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert resolve_python("3.14", _found(_interp("3.14.0", True)))[1].label == "cpython-3.14.0t"


@pytest.mark.parametrize("value, message", [
    ("3.99", "--python 3.99: no CPython 3.99 here; found: 3.11.7, 3.12.1, 3.12.3, 3.14.2, 3.14.3t, 3.15.2, pypy-3.9.18 "
             "(wakelab interpreters lists them)"),
    ("3.13t", "--python 3.13t: no free-threaded CPython 3.13 here; found: 3.11.7"),
    ("3.12t", "--python 3.12t: no free-threaded CPython 3.12 here; found: 3.11.7"),  # though a 3.12 GIL build is
    ("pypy-3.10", "--python pypy-3.10: no PyPy 3.10 here; found: 3.11.7"),
    ("3.8", "--python 3.8: cpython-3.8.18 at /x/cpython-3.8.18 is Python 3.8: the measuring code needs 3.9 or newer"),
    ("3.14tt", "--python 3.14tt: not a path, a command on PATH, a release (3.14, 3.14t) or a label"),
    ("pypy-3.9t", "--python pypy-3.9t: not a path"),
])
def test_a_python_that_is_not_here_is_one_line_naming_what_is(value, message, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError) as caught:
        resolve_python(value, _found(*HERE))
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value)


def test_a_command_on_path_is_the_interpreter_it_starts(tmp_path, monkeypatch) -> None:
    real = fake_python(tmp_path / "versions" / "3.12.1" / "bin" / "python3.12", "3.12.1")
    shim = tmp_path / "shims" / "python3.12"  # a shim that execs the real one, as pyenv's do
    shim.parent.mkdir()
    shim.write_text("#!/bin/sh\nexec %s \"$@\"\n" % real)
    shim.chmod(0o755)
    broken = tmp_path / "shims" / "python3.14"  # a shim whose version is not selected
    broken.write_text("#!/bin/sh\necho 'pyenv: python3.14: command not found' >&2; exit 127\n")
    broken.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path / "shims"))
    path, interp = resolve_python("python3.12", _found())
    assert (path, interp.label) == (real, "cpython-3.12.1")
    # The shim that does not run: its release is looked for among those found.
    assert resolve_python("python3.14", _found(*HERE))[1].label == "cpython-3.14.2"
    with pytest.raises(ValueError, match=r"^--python python3.13: no CPython 3.13 here; found: 3.11.7"):
        resolve_python("python3.13", _found(*HERE))


def test_a_label_with_the_gil_forced_on_runs_the_launcher(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("PYTHON_GIL", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    ft = probe(fake_python(tmp_path / "b" / "python3.13t", "3.13.5", free_threaded=True))
    assert ft is not None
    path, interp = resolve_python("cpython-3.13.5t-gil", _found(ft), cache=str(tmp_path / "cache"))
    assert path.startswith(str(tmp_path / "cache" / "launchers")) and interp.label == "cpython-3.13.5t-gil"


def test_specs() -> None:
    assert parse_python_spec("3.14t").text == "free-threaded CPython 3.14"
    assert parse_python_spec("python3").version == (3,)
    for nonsense in ("t", "-gil", "3.14-gil", "pypy3.9t", "python3t", "cpythont", "3", "jython"):
        assert parse_python_spec(nonsense) is None, nonsense


def test_python_all_takes_the_new_places(tmp_path, env, monkeypatch) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    uv = tmp_path / "home" / ".local" / "share" / "uv" / "python"
    fake_python(uv / "cpython-3.15.2-linux-x86_64-gnu" / "bin" / "python3.15", "3.15.2")
    done = tmp_path / "cache" / "unpacked" / "cpython-3.14"
    fake_python(done / "usr" / "bin" / "python3.14", "3.14.2")
    (done / UNPACKED_MARKER).write_text("{}")
    fake_python(tmp_path / "cache" / "unpacked" / "cpython-3.15" / "usr" / "bin" / "python3.15", "3.15.1")  # no marker
    every = _pythons(argparse.Namespace(python=["all"], in_process=False), LAB_135)
    assert [label for _, label in every] == ["cpython-3.14.2", "cpython-3.15.2"]
    # One survey serves every value; the same interpreter named twice is kept apart by position.
    twice = _pythons(argparse.Namespace(python=["3.15", "cpython-3.15.2"], in_process=False), LAB_135)
    assert [label for _, label in twice] == ["cpython-3.15.2-1", "cpython-3.15.2-2"] and twice[0][0] == every[1][0]


def _wakelab(args, env, timeout=120):
    full = {k: v for k, v in os.environ.items() if k not in PLACES}
    full.update(env, PYTHONPATH=SRC)
    return subprocess.run([sys.executable, "-m", "wakelab", *args], capture_output=True, text=True, env=full, timeout=timeout)


def test_an_unknown_release_on_the_command_line_is_one_line_and_exit_2(tmp_path, env) -> None:
    fake_python(tmp_path / "bin" / "python3.12", "3.12.1")
    fake_python(tmp_path / "bin" / "python3.14t", "3.14.0", free_threaded=True)
    done = _wakelab(["run", "--python", "3.99", "--arms", "event", "--n", "5", "-o", str(tmp_path / "out"), "--no-history", "-q"], env)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "wakelab: error: --python 3.99: no CPython 3.99 here; found: 3.12.1, 3.14.0t (wakelab interpreters lists them)"]
    assert not (tmp_path / "out" / "summary.json").exists()


@pytest.mark.slow
def test_a_run_by_label_measures_with_the_uv_python_and_records_its_build(tmp_path, env) -> None:
    """A real interpreter in a uv-style folder, asked for by its label: the run measures with it, and
    summary.json's interpreter record carries the build facts the listing shows."""
    bin_dir = tmp_path / "home" / ".local" / "share" / "uv" / "python" / "cpython-x-linux-x86_64-gnu" / "bin"
    bin_dir.mkdir(parents=True)
    os.symlink(sys.executable, bin_dir / ("python3.%d" % sys.version_info[1]))
    label = "%s-%d.%d.%d" % ((sys.implementation.name,) + tuple(sys.version_info[:3]))
    if sys.implementation.name != "cpython" or metadata.sysconfig.get_config_var("Py_GIL_DISABLED"):
        pytest.skip("a CPython GIL build runs the tests")
    out = tmp_path / "out"
    done = _wakelab(["run", "--python", label, "--arms", "event", "--n", "5", "-o", str(out), "--no-history", "-q"], env, timeout=300)
    assert done.returncode == 0, done.stderr
    recorded = load_summary(str(out))["interpreter"]  # validated against the schema, which names the new fields
    assert recorded["executable"].startswith(str(bin_dir))
    here = probe(sys.executable)
    assert here is not None
    assert (recorded["gc"], recorded["multiprocessing_start_method"]) == (here.gc, here.start_method)
