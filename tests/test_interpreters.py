"""Interpreter discovery, labelling, the interpreter cache and its build, and bad --python values.

Fake interpreters are small shell scripts in tmp folders that answer the
discovery probe as a CPython, a free-threaded CPython (GIL on only with
PYTHON_GIL=1, as the real one), a PyPy or an old CPython would; the real ones
are exercised by tests/test_pypy.py and tests/test_free_threading.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from wakelab.harness import build as cache_build
from wakelab.harness.build import BuildError, BuildSpec, check_tools, debian_uris, given_source, parse_spec, with_gil_twin
from wakelab.harness import interpreters
from wakelab.harness.interpreters import (
    ENV_CACHE, ENV_FOLDERS, MARKER, Candidate, Interpreter, cache_dir, check_given, choose_pythons, discover, free_threading_pair,
    free_threading_pythons, gil_launcher, interpreters_dir, probe, survey, usable,
)

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")


@pytest.fixture(autouse=True)
def _only_the_fakes(request, monkeypatch, tmp_path_factory) -> None:
    """Discovery also looks in HOME (uv's and conda's Pythons) and a few variables: the tests below see
    only the fakes they make.  The real runs at the end use whatever is here."""
    if "interp" in request.fixturenames:
        return
    for name in ("UV_PYTHON_INSTALL_DIR", "XDG_DATA_HOME", "CONDA_PREFIX", "MAMBA_ROOT_PREFIX"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path_factory.mktemp("home")))


def _link(folder, name) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    os.symlink(sys.executable, folder / name)


def fake_python(path, version="3.13.5", implementation="cpython", impl_version=None, free_threaded=False, exit_code=0):
    """A script that answers the probe as that interpreter would (a free-threaded one honours PYTHON_GIL)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    gil = '"$( [ "$PYTHON_GIL" = 1 ] && echo 1 || echo 0 )"' if free_threaded else ("-" if version < "3.13" else "1")
    path.write_text(
        "#!/bin/sh\n"
        "[ %d = 0 ] || { echo 'boom: broken interpreter' >&2; exit %d; }\n"
        "echo %s %s %s %d %s \"$0\"\n" % (exit_code, exit_code, version, implementation, impl_version or version,
                                          int(free_threaded), gil)
    )
    path.chmod(0o755)
    return str(path)


def _survey(tmp_path, **kw):
    kw.setdefault("path_env", str(tmp_path / "bin"))
    kw.setdefault("pyenv_root", str(tmp_path / "no-pyenv"))
    kw.setdefault("folders_env", "")
    kw.setdefault("cache", str(tmp_path / "cache"))
    return survey(**kw)


def test_discover_finds_path_and_pyenv_interpreters_once(tmp_path) -> None:
    _link(tmp_path / "bin", "python3")
    _link(tmp_path / "bin", "python3.%d" % sys.version_info[1])
    _link(tmp_path / "pyenv" / "versions" / "x" / "bin", "python3")
    (tmp_path / "bin" / "python3-config").write_text("not a python")
    found = discover(path_env=str(tmp_path / "bin"), pyenv_root=str(tmp_path / "pyenv"), folders_env="", cache=str(tmp_path / "c"))
    assert len(found) == 1
    assert found[0].version[:2] == sys.version_info[:2]
    assert found[0].label == "cpython-%d.%d.%d" % sys.version_info[:3]


def test_probe_of_something_that_is_not_python(tmp_path) -> None:
    fake = tmp_path / "python3"
    fake.write_text("#!/bin/sh\necho nope\n")
    fake.chmod(0o755)
    assert probe(str(fake)) is None
    assert discover(path_env=str(tmp_path), pyenv_root=str(tmp_path / "none"), folders_env="", cache=str(tmp_path / "c")) == []


def test_every_kind_is_found_and_labelled(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("PYTHON_GIL", raising=False)
    fake_python(tmp_path / "bin" / "python3.13t", free_threaded=True)
    fake_python(tmp_path / "bin" / "pypy3", version="3.9.16", implementation="pypy", impl_version="7.3.11")
    fake_python(tmp_path / "bin" / "python3.8", version="3.8.18")
    fake_python(tmp_path / "bin" / "python3.12", version="3.12.1", exit_code=3)
    fake_python(tmp_path / "pyenv" / "versions" / "3.13.5" / "bin" / "python3.13", version="3.13.5")
    found = _survey(tmp_path, pyenv_root=str(tmp_path / "pyenv"))
    by_label = {c.interpreter.label: c for c in found if c.interpreter}
    assert set(by_label) == {"cpython-3.8.18", "cpython-3.13.5", "cpython-3.13.5t", "pypy-3.9.16"}
    ft = by_label["cpython-3.13.5t"].interpreter
    assert (ft.free_threaded, ft.gil, ft.build_text, ft.origin) == (True, False, "free-threaded", "PATH")
    pypy = by_label["pypy-3.9.16"].interpreter
    assert (pypy.implementation, pypy.implementation_version, pypy.build_text, pypy.gil) == ("pypy", "7.3.11", "default, pypy 7.3.11", True)
    assert by_label["cpython-3.13.5"].interpreter.origin == "pyenv"
    assert by_label["cpython-3.8.18"].reason == "Python 3.8: the measuring code needs 3.9 or newer"
    broken = [c for c in found if c.interpreter is None]
    assert [os.path.basename(c.path) for c in broken] == ["python3.12"]
    assert broken[0].reason == "does not run as Python 3 (exit 3: boom: broken interpreter)"
    # CPython oldest first, then PyPy, then what cannot be run at all; --python all takes the usable ones.
    assert [c.interpreter.label for c in found if c.interpreter] == ["cpython-3.8.18", "cpython-3.13.5", "cpython-3.13.5t", "pypy-3.9.16"]
    assert [i.label for i in usable(discover(path_env=str(tmp_path / "bin"), pyenv_root=str(tmp_path / "pyenv"),
                                             folders_env="", cache=str(tmp_path / "cache")))] == [
        "cpython-3.13.5", "cpython-3.13.5t", "pypy-3.9.16"]


def test_python_gil_1_labels_a_free_threaded_build_with_the_gil_on(tmp_path, monkeypatch) -> None:
    path = fake_python(tmp_path / "python3.13t", free_threaded=True)
    monkeypatch.setenv("PYTHON_GIL", "1")
    interp = probe(path)
    assert interp is not None and (interp.free_threaded, interp.gil, interp.label) == (True, True, "cpython-3.13.5t-gil")
    monkeypatch.setenv("PYTHON_GIL", "0")
    assert probe(path).label == "cpython-3.13.5t"
    # A GIL build is not relabelled by PYTHON_GIL: it has no other state.
    assert Interpreter("/x", (3, 13, 5), "cpython", False, gil_enabled=True).label == "cpython-3.13.5"


def test_user_named_folders_are_searched(tmp_path) -> None:
    fake_python(tmp_path / "mine" / "a" / "bin" / "python3.13t", free_threaded=True)
    fake_python(tmp_path / "mine" / "python3.11", version="3.11.9")
    single = fake_python(tmp_path / "elsewhere" / "odd-name", version="3.10.4")
    folders = os.pathsep.join([str(tmp_path / "mine"), single, str(tmp_path / "missing")])
    found = _survey(tmp_path, folders_env=folders)
    assert sorted((c.interpreter.label, c.origin) for c in found) == [
        ("cpython-3.10.4", ENV_FOLDERS), ("cpython-3.11.9", ENV_FOLDERS), ("cpython-3.13.5t", ENV_FOLDERS)]


def test_the_environment_names_the_folders_and_the_cache(tmp_path, monkeypatch) -> None:
    fake_python(tmp_path / "mine" / "python3.11", version="3.11.9")
    monkeypatch.setenv(ENV_FOLDERS, str(tmp_path / "mine"))
    monkeypatch.setenv(ENV_CACHE, str(tmp_path / "cache"))
    assert cache_dir() == str(tmp_path / "cache")
    found = discover(path_env="", pyenv_root=str(tmp_path / "none"))
    assert [(i.label, i.origin) for i in found] == [("cpython-3.11.9", ENV_FOLDERS)]
    assert cache_dir({"XDG_CACHE_HOME": "/x/y"}) == "/x/y/wakelab"


def test_the_cache_is_searched_and_an_incomplete_build_is_unusable(tmp_path) -> None:
    cache = tmp_path / "cache"
    done = cache / "interpreters" / "cpython-3.13.5t"
    fake_python(done / "bin" / "python3.13t", free_threaded=True)
    (done / MARKER).write_text("{}")
    half = cache / "interpreters" / "cpython-3.13.5"
    fake_python(half / "bin" / "python3.13", version="3.13.5")
    found = _survey(tmp_path, cache=str(cache))
    assert [(c.interpreter.label, c.origin, c.usable) for c in found if c.interpreter] == [("cpython-3.13.5t", "cache", True)]
    bad = [c for c in found if c.interpreter is None]
    assert len(bad) == 1 and "incomplete build in %s" % half in bad[0].reason and MARKER in bad[0].reason


def test_the_free_threading_pair_is_one_release(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("PYTHON_GIL", raising=False)
    gil_old = Interpreter(fake_python(tmp_path / "a" / "python3.13", version="3.13.0"), (3, 13, 0), "cpython", False)
    gil_same = Interpreter(fake_python(tmp_path / "b" / "python3.13", version="3.13.5"), (3, 13, 5), "cpython", False)
    ft = Interpreter(fake_python(tmp_path / "b" / "python3.13t", free_threaded=True), (3, 13, 5), "cpython", True, gil_enabled=False)
    assert free_threading_pair([gil_old, gil_same, ft]) == (gil_same, ft)
    assert free_threading_pair([gil_old, ft]) == (gil_old, ft)
    assert free_threading_pair([gil_old]) == (None, None)
    trio = free_threading_pythons([gil_same, ft], cache=str(tmp_path / "cache"))
    assert [label for _, label in trio] == ["cpython-3.13.5", "cpython-3.13.5t", "cpython-3.13.5t-gil"]
    launcher = trio[2][0]
    assert launcher.startswith(str(tmp_path / "cache" / "launchers"))
    # The launcher keeps its own path (what a grid cell runs) and turns the GIL on.
    forced = probe(launcher)
    assert forced is not None and forced.path == launcher and forced.gil and forced.free_threaded
    with pytest.raises(ValueError, match=r"needs a free-threaded CPython .* 'wakelab interpreters build 3.13t'"):
        free_threading_pythons([gil_same], cache=str(tmp_path / "cache"))
    with pytest.raises(ValueError, match=r"needs the GIL build of CPython 3.13 beside"):
        free_threading_pythons([ft], cache=str(tmp_path / "cache"))
    with pytest.raises(ValueError, match="not a free-threaded build"):
        gil_launcher(gil_same, cache=str(tmp_path / "cache"))


def test_a_given_path_that_cannot_be_used_says_why_in_one_line(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(ENV_CACHE, str(tmp_path / "cache"))
    not_python = tmp_path / "notpython"
    not_python.write_text("#!/bin/sh\necho hello\n")
    not_python.chmod(0o755)
    old = fake_python(tmp_path / "python3.8", version="3.8.18")
    half = tmp_path / "cache" / "interpreters" / "cpython-3.13.5t"
    half_binary = fake_python(half / "bin" / "python3.13t", free_threaded=True)
    cases = [
        (str(tmp_path / "nope"), "not an interpreter that runs here (no such file)"),
        (str(not_python), "not an interpreter that runs here (does not answer as Python 3 does)"),
        (old, "is Python 3.8: the measuring code needs 3.9 or newer"),
        (str(tmp_path), "is a folder: give the path of a python executable"),
        (half_binary, "incomplete build in %s" % half),
    ]
    for path, message in cases:
        with pytest.raises(ValueError) as caught:
            check_given(path)
        assert message in str(caught.value) and "\n" not in str(caught.value), path
    (half / MARKER).write_text("{}")
    assert check_given(half_binary).label == "cpython-3.13.5t"


def test_choose_pythons_keeps_two_paths_to_one_version_apart_and_all_needs_one(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(ENV_CACHE, str(tmp_path / "cache"))
    first, second = fake_python(tmp_path / "a" / "python3"), fake_python(tmp_path / "b" / "python3")
    assert choose_pythons([first, second]) == [(first, "cpython-3.13.5-1"), (second, "cpython-3.13.5-2")]
    assert choose_pythons([first]) == [(first, "cpython-3.13.5")]
    monkeypatch.setattr(interpreters, "survey", lambda: [Candidate(str(tmp_path / "old"), "PATH", None, "too old")])
    with pytest.raises(ValueError, match="^--python all found no Python 3.9 or newer on PATH"):
        choose_pythons(["all"])


def test_a_candidate_that_is_no_interpreter_has_every_fact_null() -> None:
    row = Candidate("/x/python3", "PATH", None, "does not run").to_dict()
    assert list(row)[:3] == ["label", "path", "found_in"] and list(row)[-2:] == ["usable", "reason"]
    assert {k for k, v in row.items() if v is not None} == {"path", "found_in", "usable", "reason"} and row["usable"] is False


def _wakelab(args, env=None, timeout=60):
    full = dict(os.environ, PYTHONPATH=SRC)
    full.update(env or {})
    return subprocess.run([sys.executable, "-m", "wakelab", *args], capture_output=True, text=True, env=full, timeout=timeout)


@pytest.mark.parametrize("kind", ["missing", "not-python", "too-old", "folder", "broken-build"])
def test_bad_python_on_the_command_line_is_one_line_and_exit_2(tmp_path, kind) -> None:
    cache = tmp_path / "cache"
    paths = {
        "missing": str(tmp_path / "nope"),
        "not-python": str(tmp_path / "hello"),
        "too-old": fake_python(tmp_path / "python3.8", version="3.8.18"),
        "folder": str(tmp_path),
        "broken-build": str(cache / "interpreters" / "cpython-3.13.5t" / "bin" / "python3.13t"),
    }
    (tmp_path / "hello").write_text("#!/bin/sh\necho hello\n")
    (tmp_path / "hello").chmod(0o755)
    fake_python(cache / "interpreters" / "cpython-3.13.5t" / "bin" / "python3.13t", free_threaded=True)
    done = _wakelab(["run", "--python", paths[kind], "--arms", "event", "--n", "5", "-o", str(tmp_path / "out"), "--no-history", "-q"],
                    env={ENV_CACHE: str(cache)})
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("wakelab: ") and paths[kind] in lines[0], done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "out" / "summary.json").exists()


def test_interpreters_command_lists_kind_build_gil_and_reasons(tmp_path) -> None:
    fake_python(tmp_path / "bin" / "python3.13t", free_threaded=True)
    fake_python(tmp_path / "bin" / "pypy3", version="3.9.16", implementation="pypy", impl_version="7.3.11")
    fake_python(tmp_path / "bin" / "python3.8", version="3.8.18")
    env = {"PATH": str(tmp_path / "bin") + os.pathsep + "/usr/bin:/bin", "PYENV_ROOT": str(tmp_path / "none"),
           ENV_FOLDERS: "", ENV_CACHE: str(tmp_path / "cache")}
    env.pop("PYTHON_GIL", None)
    done = _wakelab(["interpreters", "--json"], env=env)
    assert done.returncode == 0, done.stderr
    rows = {r["label"]: r for r in json.loads(done.stdout)}
    assert rows["cpython-3.13.5t"]["free_threaded"] is True and rows["cpython-3.13.5t"]["gil_enabled"] is False
    assert rows["pypy-3.9.16"]["implementation"] == "pypy" and rows["pypy-3.9.16"]["usable"] is True
    assert rows["cpython-3.8.18"]["usable"] is False and "3.9 or newer" in rows["cpython-3.8.18"]["reason"]
    text = _wakelab(["interpreters"], env=env).stdout
    for needle in ("implementation", "GIL", "free-threaded", "pypy 7.3.11", "no: Python 3.8", str(tmp_path / "cache")):
        assert needle in text


# -- the cache and its build ---------------------------------------------------------------------

def test_build_specs() -> None:
    assert parse_spec("3.13t") == BuildSpec("3.13", True) and parse_spec("3.13") == BuildSpec("3.13", False)
    assert parse_spec("cpython-3.14t").name == "3.14t"
    assert with_gil_twin([parse_spec("3.13t")]) == [BuildSpec("3.13", True), BuildSpec("3.13", False)]
    for bad, message in (("3.12t", "free-threaded build from 3.13 on"), ("pypy", "give a CPython release"), ("3.8", "give a CPython release")):
        with pytest.raises(BuildError, match=message):
            parse_spec(bad)


def test_no_compiler_is_one_clear_line(tmp_path) -> None:
    with pytest.raises(BuildError, match=r"^cannot build CPython: a C compiler \(cc, gcc or clang\) and make are not on PATH"):
        check_tools(path_env=str(tmp_path))
    done = _wakelab(["interpreters", "build", "3.13t"], env={"PATH": str(tmp_path), ENV_CACHE: str(tmp_path / "cache"), "CC": ""})
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "wakelab: error: cannot build CPython: a C compiler (cc, gcc or clang) and make are not on PATH (on Debian: apt-get install build-essential)"]
    assert not (tmp_path / "cache" / "interpreters").exists()


def test_debian_uris_come_from_the_machine_s_own_lists(tmp_path) -> None:
    (tmp_path / "parts").mkdir()
    (tmp_path / "sources.list").write_text("deb [arch=amd64] http://mirror.example/debian/ bookworm main\n# deb http://x/debian sid main\n")
    (tmp_path / "parts" / "debian.sources").write_text(
        "Types: deb\nURIs: http://deb.example/debian\nSuites: bookworm bookworm-updates\nComponents: main\n\n"
        "Types: deb\nURIs: http://deb.example/debian-security\nSuites: bookworm-security\n\n"
        "Types: deb\nURIs: http://off.example/debian\nSuites: bookworm\nEnabled: no\n")
    (tmp_path / "parts" / "other.list").write_text("deb https://vendor.example/apt stable main\n")
    assert debian_uris(str(tmp_path / "sources.list"), str(tmp_path / "parts")) == [
        "http://mirror.example/debian", "http://deb.example/debian"]


def test_a_bad_source_is_one_line(tmp_path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(BuildError, match="not a CPython source tree"):
        given_source(str(tmp_path / "empty"))
    with pytest.raises(BuildError, match="give a CPython source tarball"):
        given_source(str(tmp_path / "nothing.tar.xz"))


def _fake_source(folder, fail_in=None):
    """A CPython-shaped source tree whose configure and Makefile install a fake interpreter in seconds."""
    tree = folder / "Python-3.13.5"
    (tree / "Include").mkdir(parents=True)
    (tree / "Include" / "patchlevel.h").write_text('#define PY_VERSION "3.13.5"\n')
    configure = tree / "configure"
    configure.write_text(
        "#!/bin/sh\n"
        "prefix=; ft=0\n"
        "for a in \"$@\"; do case $a in --prefix=*) prefix=${a#--prefix=};; --disable-gil) ft=1;; esac; done\n"
        "%s"
        "echo checking for a fake compiler... yes\n"
        "printf 'all:\\n\\t@echo compiling\\ninstall:\\n\\tsh %s/install.sh %%s %%s\\n' \"$prefix\" \"$ft\" > Makefile\n"
        % ("echo 'configure: error: no acceptable C compiler found' >&2; exit 1\n" if fail_in == "configure" else "", tree)
    )
    configure.chmod(0o755)
    (tree / "install.sh").write_text(
        "prefix=$1; ft=$2; mkdir -p \"$prefix/bin\"\n"
        "if [ $ft = 1 ]; then name=python3.13t; g='\"$( [ \"$PYTHON_GIL\" = 1 ] && echo 1 || echo 0 )\"'; else name=python3.13; g=1; fi\n"
        "printf '#!/bin/sh\\necho 3.13.5 cpython 3.13.5 %s %s \"$0\"\\n' \"$ft\" \"$g\" > \"$prefix/bin/$name\"\n"
        "chmod 755 \"$prefix/bin/$name\"\n"
        + ("echo 'install: disk full' >&2; exit 2\n" if fail_in == "install" else "")
    )
    return str(tree)


def test_a_build_fills_the_cache_with_both_builds_and_says_what_it_does(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("PYTHON_GIL", raising=False)
    cache = str(tmp_path / "cache")
    said = []
    results = cache_build.build(with_gil_twin([parse_spec("3.13t")]), say=said.append, source_path=_fake_source(tmp_path / "src"),
                                cache=cache, jobs=1)
    assert [(s.name, built) for s, _, built in results] == [("3.13t", True), ("3.13", True)]
    assert any("configure --prefix=%s/interpreters/cpython-3.13.5t --without-ensurepip --disable-gil" % cache in s for s in said)
    assert any(s.startswith("3.13: done in") for s in said)
    found = {c.interpreter.label: c for c in survey(path_env="", pyenv_root=str(tmp_path / "n"), folders_env="", cache=cache)}
    assert set(found) == {"cpython-3.13.5", "cpython-3.13.5t"} and all(c.origin == "cache" and c.usable for c in found.values())
    with open(os.path.join(interpreters_dir(cache), "cpython-3.13.5t", MARKER), encoding="utf-8") as fh:
        marker = json.load(fh)
    assert marker["free_threaded"] is True and marker["build_seconds"] >= 0 and "--disable-gil" in marker["configure"]
    assert not os.path.exists(os.path.join(cache, "build", "cpython-3.13.5t"))  # the work folder goes
    # Only the cache was written.
    assert sorted(os.listdir(tmp_path)) == ["cache", "src"]
    again = cache_build.build([parse_spec("3.13t")], say=said.append, source_path=str(tmp_path / "src" / "Python-3.13.5"), cache=cache)
    assert [built for _, _, built in again] == [False]


@pytest.mark.parametrize("step", ["configure", "install"])
def test_a_failed_build_is_one_line_and_leaves_no_usable_interpreter(tmp_path, step) -> None:
    cache = str(tmp_path / "cache")
    with pytest.raises(BuildError) as caught:
        cache_build.build([parse_spec("3.13t")], say=lambda s: None, source_path=_fake_source(tmp_path / "src", fail_in=step),
                          cache=cache, jobs=1)
    message = str(caught.value)
    assert message.startswith("%s failed (exit" % step) and "full log: %s/logs/" % cache in message and "\n" not in message
    assert ("no acceptable C compiler" if step == "configure" else "disk full") in message
    found = survey(path_env="", pyenv_root=str(tmp_path / "n"), folders_env="", cache=cache)
    assert all(c.interpreter is None for c in found)
    if step == "install":  # the half-installed prefix is there, and reported as an incomplete build
        assert len(found) == 1 and "incomplete build" in found[0].reason


# -- real runs on every interpreter found here -----------------------------------------------------

# conftest points XDG_CACHE_HOME at a throwaway folder: the interpreter cache that .ci/run fills is
# named by WAKELAB_CACHE, else the user's default.
REAL_CACHE = os.environ.get(ENV_CACHE) or os.path.join(os.path.expanduser("~"), ".cache", "wakelab")
# Lab 135 and a few arms of each family.
FAMILY_ARMS = ("event", "sigusr1-self", "signal-install", "queue", "pause-handler", "pthread-kill-sigwait", "pipe", "eventfd",
               "call-soon-threadsafe", "pipe-process", "kill-sigwait-child", "native-pipe")


def _expected_skips(interp: Interpreter) -> dict:
    """Arms this interpreter cannot run, and a word their reason must hold."""
    skips = {}
    if interp.implementation == "pypy":
        skips.update({"pthread-kill-sigwait": "sigtimedwait does not exist in PyPy", "kill-sigwait-child": "sigtimedwait does not exist in PyPy"})
    if interp.version[:2] < (3, 10):
        skips["eventfd"] = "os.eventfd does not exist"
    return skips


def _found_here():
    try:
        return usable(discover(cache=REAL_CACHE))
    except OSError:  # pragma: no cover - a machine without a readable PATH
        return []


@pytest.mark.parametrize("interp", _found_here(), ids=lambda i: i.label)
def test_lab135_and_each_family_run_on_every_interpreter_found(interp, tmp_path) -> None:
    from wakelab.core.model import MeasureParams
    from wakelab.harness.runner import Execution, RunPlan, run_plan
    from wakelab.labs import LAB_135, custom_lab

    params = MeasureParams(n=20, warmup=2, settle_us=200, timeout_s=1.0, install_n=1000, rounds=2)
    plan = RunPlan(lab=custom_lab(LAB_135, FAMILY_ARMS), arm_names=list(FAMILY_ARMS), params=params, folder=str(tmp_path),
                   command=["test"], execution=Execution(workers=1, python=interp.path))
    summary = run_plan(plan)
    recorded = summary["interpreter"]
    assert recorded["implementation"].lower() == interp.implementation
    assert recorded["version"] == "%d.%d.%d" % interp.version
    assert bool(recorded["free_threaded_build"]) == interp.free_threaded
    assert recorded["gil_enabled"] == interp.gil
    skips = _expected_skips(interp)
    for arm in summary["arms"]:
        if arm["name"] in skips:
            assert arm["status"] == "skipped" and skips[arm["name"]] in arm["reason"], arm
        else:
            assert arm["status"] == "ok", (arm["name"], arm.get("reason"))


def test_a_side_is_a_folder_of_code_a_venv_or_an_interpreter(tmp_path) -> None:
    code, flat, venv = tmp_path / "code", tmp_path / "flat", tmp_path / "venv"
    (code / "src").mkdir(parents=True)
    flat.mkdir()
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = x\n", encoding="utf-8")
    assert interpreters.side_of(str(code)) == (None, (str(code / "src"),))
    assert interpreters.side_of(str(flat)) == (None, (str(flat),))
    assert interpreters.side_of("python3.14") == ("python3.14", ())
    with pytest.raises(ValueError, match="has a pyvenv.cfg but no bin/python: not a usable virtual environment"):
        interpreters.side_of(str(venv))
    (venv / "bin" / "python").write_text("", encoding="utf-8")
    assert interpreters.side_of(str(venv)) == (str(venv / "bin" / "python"), ())


def test_site_path_is_what_site_adds_to_the_path(tmp_path) -> None:
    added = interpreters.site_path(sys.executable, {})
    assert added and all(isinstance(p, str) for p in added)
    assert not set(added) & set(json.loads(subprocess.run([sys.executable, "-S", "-c", "import json, sys; print(json.dumps(sys.path))"],
                                                          capture_output=True, check=True).stdout))
    with pytest.raises(ValueError, match="does not say where its packages are"):
        interpreters.site_path(str(tmp_path / "nope"), {})
