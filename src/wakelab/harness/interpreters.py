"""Finding the Python interpreters on this machine (stdlib only).

Looks in the folders on ``PATH`` for ``python3`` and ``python3.N`` (and
free-threaded ``python3.Nt``), and in pyenv-style version folders
(``$PYENV_ROOT/versions/*/bin``, default ``~/.pyenv``) -- never at a
hard-coded list of paths.  Candidates are deduplicated by their real path;
each is then asked for its version, so shims and symlinks that point at the
same interpreter appear once.

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
from typing import Dict, Iterable, List, Optional, Tuple

from wakelab.harness.workers import WorkerError, run_bounded

# Seconds a candidate may take to say what it is, and bytes it may write.
PROBE_TIMEOUT_S = 10.0
PROBE_CAP_BYTES = 64 * 1024

_NAME = re.compile(r"^python3(\.\d+t?)?$")
_PROBE = (
    "import sys, sysconfig; "
    "print('%d.%d.%d' % sys.version_info[:3], sys.implementation.name, "
    "int(bool(sysconfig.get_config_var('Py_GIL_DISABLED'))), sys.executable)"
)


@dataclasses.dataclass(frozen=True)
class Interpreter:
    """One interpreter found here."""

    path: str
    version: Tuple[int, int, int]
    implementation: str
    free_threaded: bool

    @property
    def version_text(self) -> str:
        return "%d.%d.%d" % self.version + ("t" if self.free_threaded else "")

    @property
    def label(self) -> str:
        """Short, folder-safe name: ``cpython-3.11.7`` or ``cpython-3.13.0t``."""
        return "%s-%s" % (self.implementation, self.version_text)


def _candidates(path_env: Optional[str], pyenv_root: Optional[str]) -> Iterable[str]:
    for folder in (path_env if path_env is not None else os.environ.get("PATH", "")).split(os.pathsep):
        if not folder or not os.path.isdir(folder):
            continue
        if os.path.basename(os.path.normpath(folder)) == "shims":
            continue  # pyenv shims: the versions folder below lists the real ones
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        for name in names:
            if _NAME.match(name):
                yield os.path.join(folder, name)
    root = pyenv_root if pyenv_root is not None else os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    for path in sorted(glob.glob(os.path.join(root, "versions", "*", "bin", "python3*"))):
        if _NAME.match(os.path.basename(path)):
            yield path


def probe(path: str) -> Optional[Interpreter]:
    """Ask ``path`` what it is; None when it does not run as Python 3."""
    try:
        done = run_bounded([path, "-S", "-c", _PROBE], timeout_s=PROBE_TIMEOUT_S, cap_bytes=PROBE_CAP_BYTES)
        if done.returncode != 0:
            return None
        version, implementation, free_threaded, executable = done.stdout.decode().split(None, 3)
        major, minor, micro = (int(x) for x in version.split("."))
    except (OSError, WorkerError, ValueError):
        return None
    return Interpreter(
        path=executable.strip() or path,
        version=(major, minor, micro),
        implementation=implementation,
        free_threaded=free_threaded == "1",
    )


def discover(path_env: Optional[str] = None, pyenv_root: Optional[str] = None) -> List[Interpreter]:
    """Every distinct Python 3 interpreter on PATH and in pyenv folders, oldest first."""
    seen_paths = set()
    found: Dict[Tuple[object, ...], Interpreter] = {}
    for candidate in _candidates(path_env, pyenv_root):
        real = os.path.realpath(candidate)
        if real in seen_paths or not os.access(real, os.X_OK):
            continue
        seen_paths.add(real)
        interpreter = probe(candidate)
        if interpreter is None:
            continue
        key = (interpreter.implementation, interpreter.version, interpreter.free_threaded, os.path.realpath(interpreter.path))
        found.setdefault(key, interpreter)
    # The same version reached through two prefixes (a venv, say) is one interpreter for the matrix.
    unique: Dict[Tuple[object, ...], Interpreter] = {}
    for interpreter in sorted(found.values(), key=lambda i: (i.version, i.free_threaded, i.path)):
        unique.setdefault((interpreter.implementation, interpreter.version, interpreter.free_threaded), interpreter)
    return list(unique.values())
