"""Finding the Python interpreters on this machine (stdlib only).

Candidates come from, in this order:

* the folders on ``PATH`` (a distribution's or deadsnakes' ``/usr/bin``,
  ``/usr/local/bin``, uv's ``~/.local/bin``): ``python3``, ``python3.N``,
  free-threaded ``python3.Nt``, and PyPy's ``pypy3`` / ``pypy3.N``;
* pyenv-style version folders (``$PYENV_ROOT/versions/*/bin``, default
  ``~/.pyenv``), ``3.14t`` among them;
* uv's managed Pythons (``$UV_PYTHON_INSTALL_DIR``, else
  ``$XDG_DATA_HOME/uv/python``, else ``~/.local/share/uv/python``: one
  ``cpython-3.15.2-linux-x86_64-gnu/bin``, or
  ``cpython-3.14.0+freethreaded-.../bin``, per install);
* conda and mamba environments: ``$CONDA_PREFIX``, the prefixes listed in
  ``~/.conda/environments.txt``, and the roots ``$MAMBA_ROOT_PREFIX``,
  ``~/miniconda3``, ``~/anaconda3``, ``~/miniforge3``, ``~/mambaforge`` and
  ``~/micromamba`` with their ``envs/*`` (each prefix's ``bin/``);
* the folders (or interpreter paths) named in ``$WAKELAB_INTERPRETERS``,
  separated by ``os.pathsep``: each folder is searched itself, in its
  ``bin/`` and in ``*/bin/`` (a folder of installation prefixes);
* wakelab's own interpreter cache (:func:`cache_dir`): the builds of
  ``wakelab interpreters build`` (see :mod:`wakelab.harness.build`) in
  ``interpreters/*/bin``, and unpacked distribution packages in
  ``unpacked/*/usr/bin`` (a prefix counts once its provisioner has written
  :data:`UNPACKED_MARKER` into it);

these documented install locations, never a list of interpreter paths.  Each
place found is an ``origin``: ``PATH``, ``pyenv``, ``uv``, ``conda``,
``WAKELAB_INTERPRETERS`` or ``cache``.  Candidates are deduplicated by their
real path; each is then asked what it is (implementation, version, whether the
build is free-threaded, whether the GIL is on as it runs here, which
``PYTHON_GIL`` can change, and what else changes a wake in it: the JIT, the
cyclic GC, multiprocessing's start method -- see
:data:`wakelab.harness.metadata.BUILD_FACTS_SOURCE`), so shims and symlinks
that point at the same interpreter appear once, and a file is labelled by
what it says it is, never by its name.  :func:`survey` keeps the candidates
that cannot be used, with the reason; :func:`discover` returns the
interpreters only; :func:`resolve_python` turns a ``--python`` value (a
path, a name on PATH, ``3.14``, ``3.14t``, ``cpython-3.15.2``, ``pypy``)
into one of them.

A probe is bounded: it runs in its own session, may take
:data:`PROBE_TIMEOUT_S` and write :data:`PROBE_CAP_BYTES`, and its whole
process group is killed when it ends, so a hanging ``python3.99`` (and
whatever it started) is not waited for long and leaves nothing behind.
"""

from __future__ import annotations

import dataclasses
import functools
import glob
import json
import os
import re
import shlex
import shutil
from typing import Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from wakelab.harness.metadata import BUILD_FACTS_SOURCE
from wakelab.harness.workers import MIN_PYTHON, WorkerError, run_bounded

# Seconds a candidate may take to say what it is, and bytes it may write.
PROBE_TIMEOUT_S = 10.0
PROBE_CAP_BYTES = 64 * 1024

# User-named folders (or interpreter paths) to search, os.pathsep-separated.
ENV_FOLDERS = "WAKELAB_INTERPRETERS"
# Where wakelab keeps what it builds: $WAKELAB_CACHE, else $XDG_CACHE_HOME/wakelab, else ~/.cache/wakelab.
ENV_CACHE = "WAKELAB_CACHE"
# Written last into a finished build's prefix: a cache folder without it is an incomplete build.
MARKER = "wakelab-build.json"
# Written last into a prefix of unpacked distribution packages (CACHE/unpacked/NAME/usr/bin/python3.N):
# a prefix without it is still being unpacked, or was left half done, and is not used.
UNPACKED_MARKER = "wakelab-unpacked.json"
# Where uv keeps the Pythons it manages: $UV_PYTHON_INSTALL_DIR, else $XDG_DATA_HOME/uv/python, else
# ~/.local/share/uv/python.
ENV_UV = "UV_PYTHON_INSTALL_DIR"
# Conda and mamba roots in the home folder, as their installers name them; each holds envs/*.
CONDA_ROOTS = ("miniconda3", "anaconda3", "miniforge3", "mambaforge", "micromamba")
# Bytes of ~/.conda/environments.txt read: a list of prefixes, one a line.
CONDA_LIST_CAP_BYTES = 1024 * 1024
# First lines of a launcher wakelab wrote (see gil_launcher): its path is kept, not the binary's.
LAUNCHER_TAG = "# wakelab-launcher"

_NAME = re.compile(r"^(python3(\.\d+t?)?|pypy3(\.\d+)?)$")
# The probe prints two lines.  First FACTS_TAG and a JSON object of build facts (metadata's
# BUILD_FACTS_SOURCE); then version, implementation, implementation version, free-threaded build
# (0/1), GIL on as it runs (0/1/-: not reported), executable.  Runs on any Python 3.6+ and PyPy, in
# one process.  An answer without the facts line is still understood: the facts are then unknown.
FACTS_TAG = "wakelab-facts "
_PROBE = BUILD_FACTS_SOURCE + (
    "import json, sys, sysconfig\n"
    "print(%r + json.dumps(build_facts()))\n"
    "g = getattr(sys, '_is_gil_enabled', None)\n"
    "i = sys.implementation\n"
    "print('%%d.%%d.%%d' %% sys.version_info[:3], i.name, '%%d.%%d.%%d' %% tuple(i.version)[:3], "
    "int(bool(sysconfig.get_config_var('Py_GIL_DISABLED'))), '-' if g is None else int(g()), sys.executable)\n"
    % FACTS_TAG
)


@dataclasses.dataclass(frozen=True)
class Interpreter:
    """One interpreter found here."""

    path: str
    version: Tuple[int, int, int]
    implementation: str
    free_threaded: bool
    # Whether the GIL is on as this interpreter runs here (PYTHON_GIL can turn it on in a
    # free-threaded build); None when it does not say (before 3.13: always on).
    gil_enabled: Optional[bool] = None
    implementation_version: str = ""
    # Where it was found: PATH, pyenv, uv, conda, WAKELAB_INTERPRETERS, cache, or given (a --python path).
    origin: str = "given"
    # What else changes a wake in this build, as it says (None: it does not say).  The JIT where
    # sys._jit exists (3.14+): built in, and on as it runs here (PYTHON_JIT can change it).
    jit_available: Optional[bool] = None
    jit_enabled: Optional[bool] = None
    # The cyclic GC: generational, incremental, free-threaded, or PyPy's own (incminimark).
    gc: Optional[str] = None
    gc_thresholds: Optional[Tuple[int, ...]] = None
    # multiprocessing's default start method: forkserver on Linux from 3.14, fork before.
    start_method: Optional[str] = None

    @property
    def gil(self) -> bool:
        """True when the GIL is on as it runs here."""
        return self.gil_enabled if self.gil_enabled is not None else not self.free_threaded

    @property
    def version_text(self) -> str:
        return "%d.%d.%d" % self.version + ("t" if self.free_threaded else "")

    @property
    def label(self) -> str:
        """Short, folder-safe name: ``cpython-3.11.7``, ``cpython-3.13.5t``, ``pypy-3.9.16``;
        ``cpython-3.13.5t-gil`` for a free-threaded build running with the GIL on (PYTHON_GIL=1)."""
        return "%s-%s%s" % (self.implementation, self.version_text, "-gil" if self.free_threaded and self.gil else "")

    @property
    def build_text(self) -> str:
        """``free-threaded`` or ``default``, and PyPy's own version."""
        build = "free-threaded" if self.free_threaded else "default"
        if self.implementation != "cpython" and self.implementation_version:
            build += ", %s %s" % (self.implementation, self.implementation_version)
        return build

    @property
    def short_name(self) -> str:
        """``3.12.1``, ``3.14.0t`` for CPython; the :attr:`label` (``pypy-3.9.18``) for others."""
        return self.version_text if self.implementation == "cpython" else self.label

    @property
    def jit_text(self) -> str:
        return format_jit(self.jit_available, self.jit_enabled)

    def facts_dict(self) -> Dict[str, object]:
        """The build facts as ``wakelab interpreters --json`` and summary.json name them (None: not said)."""
        return {
            "jit": None if self.jit_available is None else {"available": self.jit_available, "enabled": bool(self.jit_enabled)},
            "gc": self.gc,
            "gc_thresholds": None if self.gc_thresholds is None else list(self.gc_thresholds),
            "multiprocessing_start_method": self.start_method,
        }


def format_jit(available: Optional[bool], enabled: Optional[bool]) -> str:
    """``on``, ``off`` (built in, not enabled), ``none`` (not built in), or ``-`` (no sys._jit to ask)."""
    if available is None:
        return "-"
    if not available:
        return "none"
    return "on" if enabled else "off"


@dataclasses.dataclass(frozen=True)
class Candidate:
    """A path that looked like an interpreter: what it is, or why it cannot be used."""

    path: str
    origin: str
    interpreter: Optional[Interpreter]
    reason: Optional[str]  # None: usable

    @property
    def usable(self) -> bool:
        return self.reason is None

    def to_dict(self) -> Dict[str, object]:
        """The candidate as ``wakelab interpreters --json`` prints it (the interpreter's facts None where it is none)."""
        i = self.interpreter
        facts = i.facts_dict() if i else dict.fromkeys(("jit", "gc", "gc_thresholds", "multiprocessing_start_method"))
        return {
            "label": i and i.label, "path": self.path, "found_in": self.origin, "implementation": i and i.implementation,
            "version": i and i.version_text, "implementation_version": i and i.implementation_version, "build": i and i.build_text,
            "free_threaded": i and i.free_threaded, "gil_enabled": i and i.gil, **facts, "usable": self.usable, "reason": self.reason,
        }


def cache_dir(environ: Optional[Mapping[str, str]] = None) -> str:
    """wakelab's per-user cache folder (it need not exist yet)."""
    env = os.environ if environ is None else environ
    if env.get(ENV_CACHE):
        return os.path.abspath(env[ENV_CACHE])
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(os.path.abspath(base), "wakelab")


def interpreters_dir(cache: Optional[str] = None) -> str:
    return os.path.join(cache or cache_dir(), "interpreters")


def unpacked_dir(cache: Optional[str] = None) -> str:
    """Where prefixes of unpacked distribution packages live: ``CACHE/unpacked/NAME/usr/bin/python3.N``."""
    return os.path.join(cache or cache_dir(), "unpacked")


def _home(env: Mapping[str, str]) -> str:
    return env.get("HOME") or os.path.expanduser("~")


def uv_python_dir(environ: Optional[Mapping[str, str]] = None) -> str:
    """The folder of uv's managed Pythons (it need not exist)."""
    env = os.environ if environ is None else environ
    if env.get(ENV_UV):
        return os.path.abspath(os.path.expanduser(env[ENV_UV]))
    data = env.get("XDG_DATA_HOME") or os.path.join(_home(env), ".local", "share")
    return os.path.join(os.path.abspath(data), "uv", "python")


def conda_prefixes(environ: Optional[Mapping[str, str]] = None) -> List[str]:
    """Conda and mamba environments: ``$CONDA_PREFIX``, ``~/.conda/environments.txt``'s lines, and the
    usual roots with their ``envs/*``, in that order (some may not exist)."""
    env = os.environ if environ is None else environ
    home = _home(env)
    prefixes = [env["CONDA_PREFIX"]] if env.get("CONDA_PREFIX") else []
    try:
        with open(os.path.join(home, ".conda", "environments.txt"), "rb") as fh:
            listed = fh.read(CONDA_LIST_CAP_BYTES).decode("utf-8", "replace")
    except OSError:
        listed = ""
    prefixes += [line.strip() for line in listed.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    roots = ([env["MAMBA_ROOT_PREFIX"]] if env.get("MAMBA_ROOT_PREFIX") else []) + [os.path.join(home, n) for n in CONDA_ROOTS]
    for root in roots:
        prefixes.append(root)
        prefixes += sorted(glob.glob(os.path.join(glob.escape(root), "envs", "*")))
    return prefixes


def _names_in(folder: str) -> List[str]:
    """The interpreter names in ``folder``, the most specific first (``python3.13t`` before its alias ``python3``)."""
    try:
        names = sorted(os.listdir(folder), key=lambda name: (-len(name), name))
    except OSError:
        return []
    return [os.path.join(folder, name) for name in names if _NAME.match(name)]


def _candidates(path_env: Optional[str], pyenv_root: Optional[str], folders_env: Optional[str],
                cache: Optional[str], env: Mapping[str, str]) -> Iterable[Tuple[str, str]]:
    """``(path, origin)`` of every name that looks like an interpreter, in search order."""
    for folder in (path_env if path_env is not None else env.get("PATH", "")).split(os.pathsep):
        if not folder or not os.path.isdir(folder):
            continue
        if os.path.basename(os.path.normpath(folder)) == "shims":
            continue  # pyenv shims: the versions folder below lists the real ones
        for path in _names_in(folder):
            yield path, "PATH"
    root = pyenv_root if pyenv_root is not None else env.get("PYENV_ROOT") or os.path.join(_home(env), ".pyenv")
    for folder in sorted(glob.glob(os.path.join(glob.escape(root), "versions", "*", "bin"))):
        for path in _names_in(folder):
            yield path, "pyenv"
    for folder in sorted(glob.glob(os.path.join(glob.escape(uv_python_dir(env)), "*", "bin"))):
        for path in _names_in(folder):
            yield path, "uv"
    for prefix in conda_prefixes(env):
        for path in _names_in(os.path.join(prefix, "bin")):
            yield path, "conda"
    named = folders_env if folders_env is not None else env.get(ENV_FOLDERS, "")
    for entry in named.split(os.pathsep):
        if not entry:
            continue
        entry = os.path.expanduser(entry)
        if os.path.isfile(entry):
            yield entry, ENV_FOLDERS
            continue
        for folder in [entry, os.path.join(entry, "bin")] + sorted(glob.glob(os.path.join(glob.escape(entry), "*", "bin"))):
            for path in _names_in(folder):
                yield path, ENV_FOLDERS
    cache = cache or cache_dir(env)
    for prefix in sorted(glob.glob(os.path.join(glob.escape(interpreters_dir(cache)), "*"))):
        for path in _names_in(os.path.join(prefix, "bin")):
            yield path, "cache"
    for prefix in sorted(glob.glob(os.path.join(glob.escape(unpacked_dir(cache)), "*"))):
        for path in _names_in(os.path.join(prefix, "usr", "bin")):
            yield path, "cache"


def _is_launcher(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            return LAUNCHER_TAG.encode() in fh.read(512)
    except OSError:
        return False


def probe_detail(path: str, origin: str = "given") -> Tuple[Optional[Interpreter], Optional[str]]:
    """``(interpreter, None)``, or ``(None, why it is not one)``."""
    if not os.path.isfile(path):
        return None, "no such file" if not os.path.lexists(path) else "not a file"
    if not os.access(path, os.X_OK):
        return None, "not executable"
    try:
        done = run_bounded([path, "-S", "-c", _PROBE], timeout_s=PROBE_TIMEOUT_S, cap_bytes=PROBE_CAP_BYTES)
    except OSError as exc:
        return None, "does not start: %s" % (exc.strerror or exc)
    except WorkerError as exc:
        return None, str(exc)
    err = [line for line in done.stderr.decode("utf-8", "replace").splitlines() if line.strip()]
    if done.returncode != 0:
        return None, "does not run as Python 3 (exit %d%s)" % (done.returncode, ": " + err[-1].strip()[:200] if err else "")
    try:
        answer, facts = done.stdout.decode(), ""
        if answer.startswith(FACTS_TAG):
            first, _, answer = answer.partition("\n")
            facts = first[len(FACTS_TAG):]
        version, implementation, impl_version, free_threaded, gil, executable = answer.split(None, 5)
        major, minor, micro = (int(x) for x in version.split("."))
    except ValueError:
        return None, "does not answer as Python 3 does"
    if major != 3:
        return None, "is Python %d, not 3" % major
    executable = executable.strip()
    return _with_facts(Interpreter(
        path=path if _is_launcher(path) or not executable else executable,
        version=(major, minor, micro),
        implementation=implementation,
        free_threaded=free_threaded == "1",
        gil_enabled=None if gil == "-" else gil == "1",
        implementation_version=impl_version,
        origin=origin,
    ), facts), None


def _with_facts(interpreter: Interpreter, text: str) -> Interpreter:
    """``interpreter`` with the probe's build facts (JSON ``text``); what is missing or malformed stays unknown."""
    try:
        doc = json.loads(text)
    except ValueError:
        return interpreter
    if not isinstance(doc, dict):
        return interpreter
    jit = doc["jit"] if isinstance(doc.get("jit"), dict) else {}
    gc, thresholds, method = doc.get("gc"), doc.get("gc_thresholds"), doc.get("multiprocessing_start_method")
    said_jit = isinstance(jit.get("available"), bool)
    return dataclasses.replace(
        interpreter,
        jit_available=jit["available"] if said_jit else None,
        jit_enabled=bool(jit.get("enabled")) if said_jit else None,
        gc=gc if isinstance(gc, str) else None,
        gc_thresholds=tuple(thresholds) if isinstance(thresholds, list) and all(isinstance(x, int) for x in thresholds) else None,
        start_method=method if isinstance(method, str) else None,
    )


def probe(path: str) -> Optional[Interpreter]:
    """Ask ``path`` what it is; None when it does not run as Python 3."""
    return probe_detail(path)[0]


def unusable_reason(interpreter: Interpreter) -> Optional[str]:
    """Why the measuring code cannot run on ``interpreter``, or None."""
    if interpreter.version[:2] < MIN_PYTHON:
        return "Python %d.%d: the measuring code needs %d.%d or newer" % (interpreter.version[:2] + MIN_PYTHON)
    return None


def _incomplete_build(path: str, cache: Optional[str]) -> Optional[str]:
    """Why ``path`` in wakelab's cache cannot be used yet (its prefix has no marker), or None."""
    prefix = os.path.dirname(os.path.dirname(path))  # CACHE/interpreters/NAME/bin/python3.N
    if os.path.dirname(prefix) == interpreters_dir(cache) and not os.path.isfile(os.path.join(prefix, MARKER)):
        return ("incomplete build in %s (no %s: interrupted or failed); 'wakelab interpreters build' replaces it"
                % (prefix, MARKER))
    prefix = os.path.dirname(prefix)  # CACHE/unpacked/NAME/usr/bin/python3.N
    if os.path.dirname(prefix) == unpacked_dir(cache) and not os.path.isfile(os.path.join(prefix, UNPACKED_MARKER)):
        return "incomplete unpack in %s (no %s: still being unpacked, or interrupted)" % (prefix, UNPACKED_MARKER)
    return None


def survey(path_env: Optional[str] = None, pyenv_root: Optional[str] = None, folders_env: Optional[str] = None,
           cache: Optional[str] = None, environ: Optional[Mapping[str, str]] = None) -> List[Candidate]:
    """Every distinct candidate, usable or not; interpreters oldest first, then the unusable.

    ``environ`` (default: ``os.environ``) names the places (``PATH``, ``HOME``, ``PYENV_ROOT``,
    ``UV_PYTHON_INSTALL_DIR``, ``XDG_DATA_HOME``, ``CONDA_PREFIX``, ``MAMBA_ROOT_PREFIX``,
    ``WAKELAB_INTERPRETERS``, ``WAKELAB_CACHE``); the other arguments override one place each.
    """
    env = os.environ if environ is None else environ
    cache = cache or cache_dir(env)
    seen_paths = set()
    good: Dict[Tuple[object, ...], Candidate] = {}
    bad: List[Candidate] = []
    for path, origin in _candidates(path_env, pyenv_root, folders_env, cache, env):
        real = os.path.realpath(path)
        if real in seen_paths:
            continue
        seen_paths.add(real)
        broken = _incomplete_build(path, cache) if origin == "cache" else None
        if broken is not None:
            bad.append(Candidate(path, origin, None, broken))
            continue
        interpreter, why = probe_detail(path, origin)
        if interpreter is None:
            if os.access(real, os.X_OK):
                bad.append(Candidate(path, origin, None, why))
            continue
        key = (interpreter.implementation, interpreter.version, interpreter.free_threaded, interpreter.gil,
               os.path.realpath(interpreter.path))
        if key not in good:
            good[key] = Candidate(interpreter.path, origin, interpreter, unusable_reason(interpreter))
    # The same version reached through two prefixes (a venv, say) is one interpreter for the matrix.
    # Built the same way, a cached build and another of the same version are one too: the first found stays.
    unique: Dict[Tuple[object, ...], Candidate] = {}
    for cand in sorted(good.values(), key=lambda c: _sort_key(c.interpreter)):
        interp = cand.interpreter
        assert interp is not None
        unique.setdefault((interp.implementation, interp.version, interp.free_threaded, interp.gil), cand)
    return list(unique.values()) + bad


def _sort_key(interp: Optional[Interpreter]) -> Tuple[object, ...]:
    assert interp is not None
    return (interp.implementation != "cpython", interp.implementation, interp.version, interp.free_threaded, interp.path)


def discover(path_env: Optional[str] = None, pyenv_root: Optional[str] = None, folders_env: Optional[str] = None,
             cache: Optional[str] = None, environ: Optional[Mapping[str, str]] = None) -> List[Interpreter]:
    """Every distinct Python 3 interpreter found (any version: see :func:`usable`), CPython oldest first, then PyPy."""
    return [c.interpreter for c in survey(path_env, pyenv_root, folders_env, cache, environ) if c.interpreter is not None]


def usable(found: Iterable[Interpreter]) -> List[Interpreter]:
    """Those of ``found`` the measuring code can run on (what ``--python all`` measures)."""
    return [i for i in found if unusable_reason(i) is None]


def check_given(path: str) -> Interpreter:
    """The interpreter ``--python PATH`` names, or :class:`ValueError` with one line saying why not."""
    if os.path.isdir(path):
        raise ValueError("--python %s is a folder: give the path of a python executable (for example %s)"
                         % (path, os.path.join(path, "bin", "python3")))
    cache = cache_dir()
    broken = _incomplete_build(os.path.abspath(path), cache)
    if broken is not None:
        raise ValueError("--python %s: %s" % (path, broken))
    interpreter, why = probe_detail(path)
    if interpreter is None:
        raise ValueError("--python %s: not an interpreter that runs here (%s)" % (path, why))
    reason = unusable_reason(interpreter)
    if reason is not None:
        raise ValueError("--python %s is %s" % (path, reason))
    return interpreter


# --- what --python names -------------------------------------------------------------------------
#
# A --python value is, in this order: 'all' (the command's business); a path (it has a '/'); a
# command on PATH (python3.12, python3.14t, pypy3: a pyenv shim, a venv's python); or a label as
# 'wakelab interpreters' prints it, or its start: cpython-3.15.2, 3.15, 3.14t, 3.12.1, pypy,
# pypy-3.9.18, cpython-3.13.5t-gil.  A label is looked for among the interpreters found here (one
# survey for every value): a bare release takes the GIL build when there is one, a 't' the
# free-threaded build, and of several patch releases the newest, whose label says which.  A command
# on PATH that does not run (a pyenv shim whose version is not selected) is looked for the same way.

_SPEC = re.compile(r"^(?:(?P<impl>cpython|pypy)-?)?(?P<version>\d+\.\d+(?:\.\d+)?)?(?P<t>t)?(?P<gil>-gil)?$")
_COMMAND = re.compile(r"^(?P<impl>python|pypy)(?P<version>\d+(?:\.\d+)?)?(?P<t>t)?$")


@dataclasses.dataclass(frozen=True)
class PythonSpec:
    """The interpreters a --python label names."""

    implementation: str  # cpython or pypy
    version: Tuple[int, ...] = ()  # (), (3,), (3, 14) or (3, 14, 2): a prefix of the version
    # True: free-threaded builds only; None: the GIL build when there is one, else a free-threaded one.
    free_threaded: Optional[bool] = None
    # A free-threaded build run with PYTHON_GIL=1 (a label's "-gil").
    gil_forced: bool = False

    def matches(self, interp: Interpreter) -> bool:
        return (interp.implementation == self.implementation and interp.version[:len(self.version)] == self.version
                and (self.free_threaded is None or interp.free_threaded == self.free_threaded))

    @property
    def text(self) -> str:
        """``CPython 3.16``, ``free-threaded CPython 3.14``, ``PyPy``."""
        text = {"cpython": "CPython", "pypy": "PyPy"}.get(self.implementation, self.implementation)
        if self.version:
            text += " " + ".".join(str(part) for part in self.version)
        if self.free_threaded:
            text = "free-threaded " + text
        return text + (" with PYTHON_GIL=1" if self.gil_forced else "")


def parse_python_spec(value: str) -> Optional[PythonSpec]:
    """The :class:`PythonSpec` a label or a command name (``python3.12``) stands for; None for anything else."""
    match = _SPEC.match(value)
    if match is not None and (match.group("impl") or match.group("version")):
        impl, version = match.group("impl") or "cpython", match.group("version")
        threaded, forced = bool(match.group("t")), bool(match.group("gil"))
        if (threaded and (impl != "cpython" or not version)) or (forced and not threaded):
            return None
    else:
        match = _COMMAND.match(value)
        if match is None:
            return None
        impl, version = "pypy" if match.group("impl") == "pypy" else "cpython", match.group("version")
        threaded, forced = bool(match.group("t")), False
        if threaded and (impl != "cpython" or not version or "." not in version):
            return None
    return PythonSpec(impl, tuple(int(part) for part in version.split(".")) if version else (),
                      True if threaded else None, forced)


def select(spec: PythonSpec, found: Iterable[Interpreter]) -> Optional[Interpreter]:
    """The interpreter of ``found`` that ``spec`` names: the newest match, a GIL build before a free-threaded one
    unless ``spec`` asks for that."""
    matching = [i for i in found if spec.matches(i)]
    if spec.free_threaded is None:
        matching = [i for i in matching if not i.free_threaded] or matching
    return max(matching, key=lambda i: i.version) if matching else None


def resolve_python(value: str, candidates: Callable[[], Sequence[Candidate]],
                   cache: Optional[str] = None) -> Tuple[str, Interpreter]:
    """``(path to run, interpreter)`` for a ``--python`` value other than ``all``, or :class:`ValueError`
    with one line saying what was found instead.  ``candidates`` is called (once) only when the value
    is looked for among the interpreters found here: pass a cached :func:`survey`."""
    if os.sep in value or (os.altsep and os.altsep in value):
        return value, check_given(value)
    spec = parse_python_spec(value)
    if _COMMAND.match(value):
        on_path = shutil.which(value)
        if on_path is not None:
            interpreter, _ = probe_detail(on_path, "PATH")
            if interpreter is not None:  # the interpreter itself, not the shim or link that started it
                reason = unusable_reason(interpreter)
                if reason is not None:
                    raise ValueError("--python %s (%s) is %s" % (value, on_path, reason))
                return interpreter.path, interpreter
    if spec is None:
        if os.path.lexists(value):  # a file in this folder, named like no Python release
            local = os.path.join(os.curdir, value)
            return local, check_given(local)
        raise ValueError("--python %s: not a path, a command on PATH, a release (3.14, 3.14t) or a label that "
                         "'wakelab interpreters' prints (cpython-3.15.2, pypy)" % value)
    found = [c.interpreter for c in candidates() if c.interpreter is not None]
    runnable = usable(found)
    chosen = select(dataclasses.replace(spec, gil_forced=False), runnable)
    if chosen is not None and spec.gil_forced:
        return _with_the_gil_on(value, chosen, cache)
    if chosen is not None:
        return chosen.path, chosen
    too_old = select(spec, found)
    if too_old is not None:
        raise ValueError("--python %s: %s at %s is %s" % (value, too_old.label, too_old.path, unusable_reason(too_old)))
    names = ", ".join(i.short_name for i in runnable) or "none"
    raise ValueError("--python %s: no %s here; found: %s (wakelab interpreters lists them)" % (value, spec.text, names))


def choose_pythons(values: Sequence[str]) -> List[Tuple[str, str]]:
    """``[(path, label)]`` of the ``--python`` values (``all``: every usable interpreter found here), or
    :class:`ValueError` with one line; two paths to the same version are kept apart by position."""
    chosen: List[Tuple[str, str]] = []
    found = functools.lru_cache(maxsize=None)(survey)  # one survey, only when a value needs it
    for value in values:
        if value != "all":
            path, interpreter = resolve_python(value, found)
            chosen.append((path, interpreter.label))
            continue
        every = usable(c.interpreter for c in found() if c.interpreter is not None)
        if not every:
            raise ValueError("--python all found no Python %d.%d or newer on PATH, in pyenv, uv or conda folders, "
                             "$WAKELAB_INTERPRETERS or the interpreter cache (see 'wakelab interpreters')" % MIN_PYTHON)
        chosen += [(i.path, i.label) for i in every]
    if len({label for _, label in chosen}) == len(chosen):
        return chosen
    return [(path, "%s-%d" % (label, i + 1)) for i, (path, label) in enumerate(chosen)]


def _with_the_gil_on(value: str, interpreter: Interpreter, cache: Optional[str]) -> Tuple[str, Interpreter]:
    launcher = gil_launcher(interpreter, cache)
    forced = probe(launcher)
    if forced is None or not forced.gil:
        raise ValueError("--python %s: %s does not turn the GIL on with PYTHON_GIL=1 (launcher %s)"
                         % (value, interpreter.path, launcher))
    return launcher, forced


# --- the free-threading A/B ----------------------------------------------------------------------

def gil_launcher(interpreter: Interpreter, cache: Optional[str] = None) -> str:
    """A launcher in the cache that runs free-threaded ``interpreter`` with ``PYTHON_GIL=1``.

    It is a two-line ``/bin/sh`` script that sets the variable and ``exec``s
    the interpreter, so the process measured is the interpreter itself; the
    path of the launcher is what a grid cell runs, and the run records the
    GIL as on and ``PYTHON_GIL`` as ``1``.
    """
    if not interpreter.free_threaded:
        raise ValueError("%s is not a free-threaded build" % interpreter.path)
    folder = os.path.join(cache or cache_dir(), "launchers")
    os.makedirs(folder, exist_ok=True)
    real = os.path.realpath(interpreter.path)
    name = "%s-%s-gil1" % (interpreter.implementation, interpreter.version_text)
    path = os.path.join(folder, name)
    text = "#!/bin/sh\n%s: runs %s with the GIL on\nPYTHON_GIL=1\nexport PYTHON_GIL\nexec %s \"$@\"\n" % (
        LAUNCHER_TAG, real.replace("\n", " "), shlex.quote(real))
    try:
        with open(path, encoding="utf-8") as fh:
            if fh.read() == text:
                return path
    except OSError:
        pass
    tmp = "%s.tmp%d" % (path, os.getpid())
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.chmod(tmp, 0o755)
    os.replace(tmp, path)
    return path


def free_threading_pair(found: Iterable[Interpreter]) -> Tuple[Optional[Interpreter], Optional[Interpreter]]:
    """``(GIL build, free-threaded build)`` of the same CPython release, newest release first.

    Prefers a pair of the same micro version (the cache builds both from one
    source with the same flags); else the same minor version.  ``(None, x)``
    or ``(x, None)`` when one side is missing.
    """
    cpython = [i for i in found if i.implementation == "cpython" and unusable_reason(i) is None]
    threaded = sorted((i for i in cpython if i.free_threaded and not i.gil), key=lambda i: (i.origin == "cache", i.version))
    if not threaded:
        return None, None
    for ft in reversed(threaded):
        same = [i for i in cpython if not i.free_threaded and i.version == ft.version]
        if same:
            return same[0], ft
    ft = threaded[-1]
    near = sorted((i for i in cpython if not i.free_threaded and i.version[:2] == ft.version[:2]), key=lambda i: i.version)
    return (near[-1] if near else None), ft


def free_threading_pairs(found: Iterable[Interpreter]) -> List[Tuple[Interpreter, Interpreter]]:
    """Every ``(GIL build, free-threaded build)`` pair of one CPython release found, oldest release first.

    One pair per minor version that has both builds (the pair :func:`free_threading_pair` picks
    among that release's interpreters): 3.13 and 3.13t, 3.14 and 3.14t, ...
    """
    found = list(found)
    cpython = [i for i in found if i.implementation == "cpython" and unusable_reason(i) is None]
    releases = sorted({i.version[:2] for i in cpython if i.free_threaded and not i.gil})
    pairs: List[Tuple[Interpreter, Interpreter]] = []
    for release in releases:
        gil, ft = free_threading_pair(i for i in cpython if i.version[:2] == release)
        if gil is not None and ft is not None:
            pairs.append((gil, ft))
    return pairs


def free_threading_pythons(found: Optional[Iterable[Interpreter]] = None, cache: Optional[str] = None) -> List[Tuple[str, str]]:
    """``[(path, label)]`` of the free-threading lab's columns: for every CPython release whose GIL build and
    free-threaded build are both here (:func:`free_threading_pairs`), the GIL build, the free-threaded
    build, and a launcher that runs the free-threaded build with ``PYTHON_GIL=1``, release by release.

    :class:`ValueError` with one line when this machine has no such pair.
    """
    found = list(discover(cache=cache) if found is None else found)
    pairs = free_threading_pairs(found)
    if not pairs:
        gil, ft = free_threading_pair(found)
        hint = ("build both with 'wakelab interpreters build 3.13t' (about 6 minutes each on 2 cores), "
                "or name them with --python GIL_BUILD --python FREE_THREADED_BUILD")
        if ft is None:
            raise ValueError("the free-threading lab needs a free-threaded CPython (3.13t or newer) and none was found: " + hint)
        raise ValueError("the free-threading lab needs the GIL build of CPython %d.%d beside %s and none was found: %s"
                         % (ft.version[:2] + (ft.path, hint)))
    columns: List[Tuple[str, str]] = []
    for gil, ft in pairs:
        launcher = gil_launcher(ft, cache)
        forced = probe(launcher)
        if forced is None or not forced.gil:
            raise ValueError("%s does not turn the GIL on with PYTHON_GIL=1 (launcher %s)" % (ft.path, launcher))
        columns += [(gil.path, gil.label), (ft.path, ft.label), (launcher, forced.label)]
    return columns


# -- a side of an A/B (wakelab ab BASE HEAD) ------------------------------------------------

# Seconds an interpreter may take to list its sys.path (:func:`site_path`).
SITE_PROBE_TIMEOUT_S = 30.0


def side_of(spec: str) -> Tuple[Optional[str], Tuple[str, ...]]:
    """What a side's value names: ``(python, ())`` for an interpreter or a virtual environment (its python), or
    ``(None, (folder,))`` for a folder of code, put on PYTHONPATH (its ``src`` when it has one: the src layout).
    :class:`ValueError` for a folder with a pyvenv.cfg but no python."""
    if not os.path.isdir(spec):
        return spec, ()
    if not os.path.isfile(os.path.join(spec, "pyvenv.cfg")):
        src = os.path.join(spec, "src")
        return None, (os.path.abspath(src if os.path.isdir(src) else spec),)
    for relative in (("bin", "python3"), ("bin", "python"), ("Scripts", "python.exe")):
        path = os.path.join(spec, *relative)
        if os.path.isfile(path):
            return os.path.abspath(path), ()
    raise ValueError("%s has a pyvenv.cfg but no bin/python: not a usable virtual environment" % spec)


def site_path(python: str, env: Mapping[str, str]) -> Tuple[str, ...]:
    """The folders ``site`` adds to ``python``'s path (its site-packages and what their .pth files add): workers start
    with -S, so a side's installed packages reach them only through PYTHONPATH.  :class:`ValueError` when it cannot say."""
    run_env = dict({k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, **env)

    def sys_path(*flags: str) -> Optional[List[object]]:
        try:
            done = run_bounded([python, *flags, "-c", "import json, sys; print(json.dumps(sys.path))"],
                               timeout_s=SITE_PROBE_TIMEOUT_S, env=run_env)
            found = json.loads(done.stdout.decode("utf-8")) if done.returncode == 0 else None
        except (OSError, WorkerError, ValueError):
            return None
        return found if isinstance(found, list) else None

    with_site, without = sys_path(), sys_path("-S")
    if with_site is None or without is None:
        raise ValueError("%s does not say where its packages are (python -c 'import sys; print(sys.path)' failed)" % python)
    return tuple(p for p in with_site if isinstance(p, str) and p and p not in without)
