"""Finding the Python interpreters on this machine (stdlib only).

Candidates come from, in this order:

* the folders on ``PATH``: ``python3``, ``python3.N``, free-threaded
  ``python3.Nt``, and PyPy's ``pypy3`` / ``pypy3.N``;
* pyenv-style version folders (``$PYENV_ROOT/versions/*/bin``, default
  ``~/.pyenv``);
* the folders (or interpreter paths) named in ``$WAKELAB_INTERPRETERS``,
  separated by ``os.pathsep``: each folder is searched itself, in its
  ``bin/`` and in ``*/bin/`` (a folder of installation prefixes);
* wakelab's own interpreter cache (:func:`cache_dir`), filled by
  ``wakelab interpreters build`` (see :mod:`wakelab.harness.build`).

never a hard-coded list of paths.  Candidates are deduplicated by their real
path; each is then asked what it is (implementation, version, whether the
build is free-threaded, and whether the GIL is on as it runs here, which
``PYTHON_GIL`` can change), so shims and symlinks that point at the same
interpreter appear once.  :func:`survey` keeps the candidates that cannot be
used, with the reason; :func:`discover` returns the interpreters only.

A probe is bounded: it runs in its own session, may take
:data:`PROBE_TIMEOUT_S` and write :data:`PROBE_CAP_BYTES`, and its whole
process group is killed when it ends, so a hanging ``python3.99`` (and
whatever it started) is not waited for long and leaves nothing behind.
"""

from __future__ import annotations

import dataclasses
import glob
import os
import re
import shlex
from typing import Dict, Iterable, List, Optional, Tuple

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
# First lines of a launcher wakelab wrote (see gil_launcher): its path is kept, not the binary's.
LAUNCHER_TAG = "# wakelab-launcher"

_NAME = re.compile(r"^(python3(\.\d+t?)?|pypy3(\.\d+)?)$")
# Prints one line: version, implementation, implementation version, free-threaded build (0/1),
# GIL on as it runs (0/1/-: not reported), executable.  Runs on any Python 3.
_PROBE = (
    "import sys, sysconfig; "
    "g = getattr(sys, '_is_gil_enabled', None); "
    "i = sys.implementation; "
    "print('%d.%d.%d' % sys.version_info[:3], i.name, '%d.%d.%d' % tuple(i.version)[:3], "
    "int(bool(sysconfig.get_config_var('Py_GIL_DISABLED'))), '-' if g is None else int(g()), sys.executable)"
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
    # Where it was found: PATH, pyenv, WAKELAB_INTERPRETERS, cache, or given (a --python path).
    origin: str = "given"

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
    def gil_text(self) -> str:
        if self.free_threaded:
            return "on (PYTHON_GIL=1)" if self.gil else "off"
        return "on"


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


def cache_dir(environ: Optional[Dict[str, str]] = None) -> str:
    """wakelab's per-user cache folder (it need not exist yet)."""
    env = os.environ if environ is None else environ
    if env.get(ENV_CACHE):
        return os.path.abspath(env[ENV_CACHE])
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(os.path.abspath(base), "wakelab")


def interpreters_dir(cache: Optional[str] = None) -> str:
    return os.path.join(cache or cache_dir(), "interpreters")


def _names_in(folder: str) -> List[str]:
    """The interpreter names in ``folder``, the most specific first (``python3.13t`` before its alias ``python3``)."""
    try:
        names = sorted(os.listdir(folder), key=lambda name: (-len(name), name))
    except OSError:
        return []
    return [os.path.join(folder, name) for name in names if _NAME.match(name)]


def _candidates(path_env: Optional[str], pyenv_root: Optional[str], folders_env: Optional[str],
                cache: Optional[str]) -> Iterable[Tuple[str, str]]:
    """``(path, origin)`` of every name that looks like an interpreter, in search order."""
    for folder in (path_env if path_env is not None else os.environ.get("PATH", "")).split(os.pathsep):
        if not folder or not os.path.isdir(folder):
            continue
        if os.path.basename(os.path.normpath(folder)) == "shims":
            continue  # pyenv shims: the versions folder below lists the real ones
        for path in _names_in(folder):
            yield path, "PATH"
    root = pyenv_root if pyenv_root is not None else os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    for folder in sorted(glob.glob(os.path.join(root, "versions", "*", "bin"))):
        for path in _names_in(folder):
            yield path, "pyenv"
    named = folders_env if folders_env is not None else os.environ.get(ENV_FOLDERS, "")
    for entry in named.split(os.pathsep):
        if not entry:
            continue
        entry = os.path.expanduser(entry)
        if os.path.isfile(entry):
            yield entry, ENV_FOLDERS
            continue
        for folder in [entry, os.path.join(entry, "bin")] + sorted(glob.glob(os.path.join(entry, "*", "bin"))):
            for path in _names_in(folder):
                yield path, ENV_FOLDERS
    for prefix in sorted(glob.glob(os.path.join(interpreters_dir(cache), "*"))):
        for path in _names_in(os.path.join(prefix, "bin")):
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
        version, implementation, impl_version, free_threaded, gil, executable = done.stdout.decode().split(None, 5)
        major, minor, micro = (int(x) for x in version.split("."))
    except ValueError:
        return None, "does not answer as Python 3 does"
    if major != 3:
        return None, "is Python %d, not 3" % major
    executable = executable.strip()
    return Interpreter(
        path=path if _is_launcher(path) or not executable else executable,
        version=(major, minor, micro),
        implementation=implementation,
        free_threaded=free_threaded == "1",
        gil_enabled=None if gil == "-" else gil == "1",
        implementation_version=impl_version,
        origin=origin,
    ), None


def probe(path: str) -> Optional[Interpreter]:
    """Ask ``path`` what it is; None when it does not run as Python 3."""
    return probe_detail(path)[0]


def unusable_reason(interpreter: Interpreter) -> Optional[str]:
    """Why the measuring code cannot run on ``interpreter``, or None."""
    if interpreter.version[:2] < MIN_PYTHON:
        return "Python %d.%d: the measuring code needs %d.%d or newer" % (interpreter.version[:2] + MIN_PYTHON)
    return None


def _incomplete_build(path: str, cache: Optional[str]) -> Optional[str]:
    prefix = os.path.dirname(os.path.dirname(path))
    if os.path.dirname(prefix) != interpreters_dir(cache) or os.path.isfile(os.path.join(prefix, MARKER)):
        return None
    return ("incomplete build in %s (no %s: interrupted or failed); 'wakelab interpreters build' replaces it"
            % (prefix, MARKER))


def survey(path_env: Optional[str] = None, pyenv_root: Optional[str] = None, folders_env: Optional[str] = None,
           cache: Optional[str] = None) -> List[Candidate]:
    """Every distinct candidate, usable or not; interpreters oldest first, then the unusable."""
    seen_paths = set()
    good: Dict[Tuple[object, ...], Candidate] = {}
    bad: List[Candidate] = []
    for path, origin in _candidates(path_env, pyenv_root, folders_env, cache):
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
             cache: Optional[str] = None) -> List[Interpreter]:
    """Every distinct Python 3 interpreter found (any version: see :func:`usable`), CPython oldest first, then PyPy."""
    return [c.interpreter for c in survey(path_env, pyenv_root, folders_env, cache) if c.interpreter is not None]


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


def free_threading_pythons(found: Optional[Iterable[Interpreter]] = None, cache: Optional[str] = None) -> List[Tuple[str, str]]:
    """``[(path, label)]`` of the free-threading lab's three columns: the GIL build, the free-threaded
    build, and a launcher that runs the free-threaded build with ``PYTHON_GIL=1``.

    :class:`ValueError` with one line when this machine has no such pair.
    """
    gil, ft = free_threading_pair(discover(cache=cache) if found is None else found)
    hint = ("build both with 'wakelab interpreters build 3.13t' (about 6 minutes each on 2 cores), "
            "or name them with --python GIL_BUILD --python FREE_THREADED_BUILD")
    if ft is None:
        raise ValueError("the free-threading lab needs a free-threaded CPython (3.13t or newer) and none was found: " + hint)
    if gil is None:
        raise ValueError("the free-threading lab needs the GIL build of CPython %d.%d beside %s and none was found: %s"
                         % (ft.version[:2] + (ft.path, hint)))
    launcher = gil_launcher(ft, cache)
    forced = probe(launcher)
    if forced is None or not forced.gil:
        raise ValueError("%s does not turn the GIL on with PYTHON_GIL=1 (launcher %s)" % (ft.path, launcher))
    return [(gil.path, gil.label), (ft.path, ft.label), (launcher, forced.label)]
