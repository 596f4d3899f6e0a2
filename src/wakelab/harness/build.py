"""Building CPython into wakelab's interpreter cache (stdlib only).

``wakelab interpreters build 3.13t`` builds a free-threaded CPython -- and,
for a fair A/B, the default (GIL) build of the same source with the same
flags -- into ``CACHE/interpreters/cpython-<version>[t]/`` (``CACHE`` is
:func:`wakelab.harness.interpreters.cache_dir`, under the XDG cache folder).

The source is Debian's own source package for that release, fetched with
``apt-get source --download-only`` through a *private* source list kept in
``CACHE/apt/`` (same URIs as the machine's own Debian sources, the suite that
carries the release): no file of the system's apt configuration is edited,
and nothing is installed.  ``--source`` names a CPython source tarball or
folder instead.  Only the upstream tarball is used (Debian's patches are
not applied), configured as ``./configure --prefix=PREFIX --without-ensurepip
[--disable-gil]``: no PGO or LTO, so both builds are made alike.

A finished interpreter folder holds :data:`MARKER` (what was built, from
what, how long it took), written last: a folder without it is an
interrupted or broken build, which discovery reports as unusable and the
next build replaces.  Every step runs in its own session with a time bound,
its output goes to a log in the cache, and a step that fails ends the build
with one line that names the step, its last line of output and the log.
"""

from __future__ import annotations

import dataclasses
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from wakelab.evidence import bundle
from wakelab.harness.interpreters import MARKER, cache_dir, interpreters_dir, probe

# The Debian release whose source package carries each CPython release (``python3.N``).
DEBIAN_SUITES: Dict[str, str] = {"3.11": "bookworm", "3.13": "trixie", "3.14": "forky"}
# Bounds on each step (seconds): a step that outlives its bound is killed with its process group.
STEP_TIMEOUT_S = {"apt-update": 600.0, "apt-source": 900.0, "configure": 900.0, "make": 3 * 3600.0, "install": 1800.0}
HEARTBEAT_S = 30.0
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
APT_SOURCES = "/etc/apt/sources.list"
APT_SOURCE_PARTS = "/etc/apt/sources.list.d"

_SPEC = re.compile(r"^(?:cpython-?)?3\.(\d+)(t?)$")
_ORIG = re.compile(r"^python3\.\d+_(3\.\d+\.\d+)\.orig\.tar\.(?:xz|gz|bz2)$")
_TARBALL = re.compile(r"^(?:Python-|python3\.\d+_)(3\.\d+\.\d+)(?:\.orig)?\.(?:tar\.xz|tar\.gz|tgz|tar\.bz2)$")

_MAKE_ERROR = re.compile(r"^(g?make)(\[\d+\])?: \*\*\* ")

Say = Callable[[str], None]


class BuildError(Exception):
    """A build that cannot start or did not finish: one line, for ``wakelab: ...``."""


@dataclasses.dataclass(frozen=True)
class BuildSpec:
    """What to build: a CPython release (``3.13``), free-threaded or the default GIL build."""

    release: str
    free_threaded: bool

    @property
    def name(self) -> str:
        return self.release + ("t" if self.free_threaded else "")


def parse_spec(text: str) -> BuildSpec:
    """``3.13t`` (free-threaded) or ``3.13`` (default GIL build); :class:`BuildError` otherwise."""
    match = _SPEC.match(text.strip().lower())
    if not match or int(match.group(1)) < 9:
        raise BuildError("cannot build %r: give a CPython release such as 3.13t (free-threaded) or 3.13 (with the GIL)" % text)
    spec = BuildSpec("3.%d" % int(match.group(1)), bool(match.group(2)))
    if spec.free_threaded and int(match.group(1)) < 13:
        raise BuildError("cannot build %s: CPython has a free-threaded build from 3.13 on" % text)
    return spec


def with_gil_twin(specs: Sequence[BuildSpec]) -> List[BuildSpec]:
    """``specs`` plus, for each free-threaded one, the GIL build of the same release (the A/B's other side)."""
    out: List[BuildSpec] = []
    for spec in specs:
        for item in (spec, BuildSpec(spec.release, False)) if spec.free_threaded else (spec,):
            if item not in out:
                out.append(item)
    return out


@dataclasses.dataclass(frozen=True)
class Source:
    """A CPython source tarball (or folder), its version and where it came from."""

    path: str
    version: str
    origin: str


# --- tools -------------------------------------------------------------------------------------

def check_tools(path_env: Optional[str] = None) -> None:
    """A C compiler and make must be on PATH: :class:`BuildError` names what is missing."""
    missing = []
    if not any(shutil.which(cc, path=path_env) for cc in (os.environ.get("CC") or "cc", "gcc", "clang")):
        missing.append("a C compiler (cc, gcc or clang)")
    if not shutil.which("make", path=path_env):
        missing.append("make")
    if missing:
        raise BuildError("cannot build CPython: %s %s not on PATH (on Debian: apt-get install build-essential)"
                         % (" and ".join(missing), "is" if len(missing) == 1 else "are"))


# --- the source --------------------------------------------------------------------------------

def debian_uris(sources: str = APT_SOURCES, parts: str = APT_SOURCE_PARTS) -> List[str]:
    """The URIs of the machine's own Debian archive entries (not security, not third-party)."""
    uris: List[str] = []

    def keep(uri: str, suites: Sequence[str]) -> None:
        uri = uri.rstrip("/")
        if uri.endswith("/debian") and any(not s.endswith("-security") for s in suites) and uri not in uris:
            uris.append(uri)

    files = [sources] if os.path.isfile(sources) else []
    files += sorted(glob.glob(os.path.join(parts, "*.list")) + glob.glob(os.path.join(parts, "*.sources")))
    for path in files:
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
        except OSError:
            continue
        if path.endswith(".sources"):
            for stanza in re.split(r"\n\s*\n", text):
                fields = {}
                for line in stanza.splitlines():
                    if ":" in line and not line.lstrip().startswith("#"):
                        key, _, value = line.partition(":")
                        fields[key.strip().lower()] = value.split()
                if fields.get("enabled", ["yes"])[0].lower() == "no":
                    continue
                for uri in fields.get("uris", []):
                    keep(uri, fields.get("suites", []))
        else:
            for line in text.splitlines():
                words = re.sub(r"\[[^]]*\]", " ", line.split("#", 1)[0]).split()
                if len(words) >= 3 and words[0] in ("deb", "deb-src"):
                    keep(words[1], [words[2]])
    return uris


def _apt_options(apt_dir: str) -> List[str]:
    """apt-get options that read only the private source list in ``apt_dir`` and keep its state there."""
    return [
        "-o", "Dir::Etc::SourceList=" + os.path.join(apt_dir, "sources.list"),
        "-o", "Dir::Etc::SourceParts=" + os.path.join(apt_dir, "sources.list.d"),
        "-o", "Dir::State::Lists=" + os.path.join(apt_dir, "lists"),
        "-o", "Dir::Cache=" + os.path.join(apt_dir, "cache"),
        "-o", "Debug::NoLocking=1",
    ]


def _find_orig(folder: str) -> Optional[Source]:
    for path in sorted(glob.glob(os.path.join(folder, "python3.*_*.orig.tar.*")), reverse=True):
        match = _ORIG.match(os.path.basename(path))
        if match:
            return Source(path, match.group(1), "Debian source package " + os.path.basename(path))
    return None


def fetch_debian_source(release: str, cache: str, say: Say, suite: Optional[str] = None) -> Source:
    """Debian's source package of ``python<release>`` in ``cache/sources/``, downloaded once."""
    suite = suite or DEBIAN_SUITES.get(release)
    if suite is None:
        raise BuildError("no Debian release is known to carry CPython %s: give one with --suite, or a tarball with --source" % release)
    folder = os.path.join(cache, "sources", "python%s-%s" % (release, suite))
    found = _find_orig(folder)
    if found is not None:
        say("source: %s (already downloaded)" % found.path)
        return found
    if not shutil.which("apt-get"):
        raise BuildError("cannot fetch the CPython %s source: no apt-get here (give a source tarball with --source)" % release)
    uris = debian_uris()
    if not uris:
        raise BuildError("cannot fetch the CPython %s source: no Debian archive in %s (give a source tarball with --source)"
                         % (release, APT_SOURCE_PARTS))
    apt_dir = os.path.join(cache, "apt")
    for sub in ("lists/partial", "cache/archives/partial", "sources.list.d"):
        os.makedirs(os.path.join(apt_dir, sub), exist_ok=True)
    signed = " [signed-by=%s]" % KEYRING if os.path.isfile(KEYRING) else ""
    lines = ["deb-src%s %s %s main" % (signed, uri, suite) for uri in uris]
    bundle.atomic_write_text(os.path.join(apt_dir, "sources.list"), "\n".join(lines) + "\n")
    say("source: fetching Debian %s's python%s source package with apt-get, through a private source list "
        "(%s; the system's apt files are not changed)" % (suite, release, os.path.join(apt_dir, "sources.list")))
    log = os.path.join(cache, "logs", "apt-%s.log" % suite)
    os.makedirs(os.path.dirname(log), exist_ok=True)
    options = _apt_options(apt_dir)
    run_step("apt-update", ["apt-get", *options, "update"], cwd=apt_dir, log=log, say=say)
    partial = folder + ".partial"
    shutil.rmtree(partial, ignore_errors=True)
    os.makedirs(partial)
    try:
        run_step("apt-source", ["apt-get", *options, "source", "--download-only", "python" + release], cwd=partial, log=log, say=say)
    except BuildError:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    if _find_orig(partial) is None:
        shutil.rmtree(partial, ignore_errors=True)
        raise BuildError("apt-get source python%s gave no upstream tarball (see %s)" % (release, log))
    shutil.rmtree(folder, ignore_errors=True)
    os.replace(partial, folder)
    found = _find_orig(folder)
    assert found is not None
    say("source: %s" % found.path)
    return found


def given_source(path: str) -> Source:
    """A CPython source named with ``--source``: a tarball, a folder holding one, or an unpacked tree."""
    path = os.path.abspath(path)
    if os.path.isdir(path):
        found = _find_orig(path)
        if found is not None:
            return found
        version = _tree_version(path)
        if version is None:
            raise BuildError("--source %s: not a CPython source tree (no configure and Include/patchlevel.h) "
                             "and holds no python3.N_*.orig.tar.* tarball" % path)
        return Source(path, version, "source tree " + path)
    match = _TARBALL.match(os.path.basename(path))
    if not os.path.isfile(path) or not match:
        raise BuildError("--source %s: give a CPython source tarball (Python-3.N.M.tar.xz or python3.N_3.N.M.orig.tar.xz) or folder" % path)
    return Source(path, match.group(1), "tarball " + path)


def _tree_version(folder: str) -> Optional[str]:
    try:
        with open(os.path.join(folder, "Include", "patchlevel.h"), encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError:
        return None
    match = re.search(r'#define\s+PY_VERSION\s+"(3\.\d+\.\d+)', text)
    if not match or not os.path.isfile(os.path.join(folder, "configure")):
        return None
    return match.group(1)


def unpack(source: Source, into: str) -> str:
    """The source tree of ``source``, unpacked under ``into`` if it is a tarball."""
    if os.path.isdir(source.path):
        return source.path
    shutil.rmtree(into, ignore_errors=True)
    os.makedirs(into)
    try:
        with tarfile.open(source.path) as tar:
            if hasattr(tarfile, "data_filter"):
                tar.extractall(into, filter="data")
            else:  # pragma: no cover - Python without extraction filters
                tar.extractall(into)
    except (OSError, tarfile.TarError) as exc:
        raise BuildError("cannot unpack %s: %s" % (source.path, exc)) from None
    trees = [os.path.join(into, name) for name in sorted(os.listdir(into)) if _tree_version(os.path.join(into, name))]
    if not trees:
        raise BuildError("%s holds no CPython source tree" % source.path)
    return trees[0]


# --- steps -------------------------------------------------------------------------------------

def _last_line(log: str) -> str:
    try:
        with open(log, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - 8192))
            lines = [x.strip() for x in fh.read().decode("utf-8", "replace").splitlines() if x.strip()]
    except OSError:
        return ""
    # make's own "make: *** [...] Error 2" says only that something failed: the line before says what.
    lines = [x for x in lines if not _MAKE_ERROR.match(x)] or lines
    return lines[-1][:300] if lines else ""


def run_step(step: str, argv: Sequence[str], *, cwd: str, log: str, say: Say,
             timeout_s: Optional[float] = None, env: Optional[Dict[str, str]] = None,
             progress: Optional[Callable[[], str]] = None) -> float:
    """Run one step to completion, its output appended to ``log``; the seconds it took.

    The step runs in its own session; on timeout, failure or Ctrl-C its whole
    process group is killed and reaped before this returns or raises.
    """
    bound = timeout_s if timeout_s is not None else STEP_TIMEOUT_S.get(step, 3600.0)
    started = time.monotonic()
    with open(log, "ab") as out:
        out.write(("\n$ %s\n" % " ".join(argv)).encode("utf-8", "replace"))
        out.flush()
        try:
            proc = subprocess.Popen(list(argv), cwd=cwd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                    env=env, start_new_session=True)
        except OSError as exc:
            raise BuildError("%s: cannot run %s: %s" % (step, argv[0], exc.strerror or exc)) from None
        try:
            next_beat = started + HEARTBEAT_S
            while True:
                try:
                    code = proc.wait(timeout=1.0)
                    break
                except subprocess.TimeoutExpired:
                    pass
                now = time.monotonic()
                if now - started > bound:
                    raise BuildError("%s: no end within %.0f s (killed; log: %s)" % (step, bound, log))
                if now >= next_beat:
                    next_beat = now + HEARTBEAT_S
                    say("  %s: %.0f s%s" % (step, now - started, (", " + progress()) if progress else ""))
        finally:
            if proc.returncode is None:
                try:
                    os.killpg(proc.pid, 9)
                except (ProcessLookupError, PermissionError):
                    pass
                proc.wait()
    if code != 0:
        last = _last_line(log)
        raise BuildError("%s failed (exit %d)%s; full log: %s" % (step, code, (": " + last) if last else "", log))
    return time.monotonic() - started


# --- the build ---------------------------------------------------------------------------------

def prefix_for(version: str, free_threaded: bool, cache: str) -> str:
    return os.path.join(interpreters_dir(cache), "cpython-%s%s" % (version, "t" if free_threaded else ""))


def _objects(folder: str) -> Callable[[], str]:
    def count() -> str:
        n = 0
        for _, _, names in os.walk(folder):
            n += sum(1 for name in names if name.endswith(".o"))
        return "%d objects compiled" % n
    return count


def read_marker(prefix: str) -> Optional[Dict[str, object]]:
    try:
        with open(os.path.join(prefix, MARKER), encoding="utf-8") as fh:
            doc = json.load(fh)
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def build_one(spec: BuildSpec, source: Source, cache: str, say: Say, jobs: int, rebuild: bool = False) -> Tuple[str, bool]:
    """Build ``spec`` from ``source`` into the cache; ``(interpreter path, built now)``."""
    prefix = prefix_for(source.version, spec.free_threaded, cache)
    binary = os.path.join(prefix, "bin", "python%s%s" % (spec.release, "t" if spec.free_threaded else ""))
    marker = read_marker(prefix)
    if marker is not None and not rebuild and os.access(binary, os.X_OK):
        say("%s: cpython %s%s is in the cache already (%s; --rebuild builds it again)"
            % (spec.name, source.version, "t" if spec.free_threaded else "", prefix))
        return binary, False
    if os.path.lexists(prefix):
        say("%s: removing the %s build folder %s" % (spec.name, "old" if marker else "incomplete", prefix))
        shutil.rmtree(prefix)
    work = os.path.join(cache, "build", "cpython-%s%s" % (source.version, "t" if spec.free_threaded else ""))
    log = os.path.join(cache, "logs", "build-cpython-%s%s.log" % (source.version, "t" if spec.free_threaded else ""))
    os.makedirs(os.path.dirname(log), exist_ok=True)
    with open(log, "w", encoding="utf-8") as fh:
        fh.write("wakelab: building %s from %s\n" % (spec.name, source.origin))
    started_utc = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    started = time.monotonic()
    say("%s: unpacking %s" % (spec.name, source.path))
    tree = unpack(source, os.path.join(work, "src"))
    configure = [os.path.join(tree, "configure"), "--prefix=" + prefix, "--without-ensurepip"]
    if spec.free_threaded:
        configure.append("--disable-gil")
    env = dict(os.environ)
    for var in ("PYTHONHOME", "PYTHONPATH", "PYTHONSTARTUP", "PYTHON_GIL", "MAKEFLAGS"):
        env.pop(var, None)
    objdir = os.path.join(work, "obj")
    os.makedirs(objdir, exist_ok=True)
    say("%s: configure %s (log: %s)" % (spec.name, " ".join(configure[1:]), log))
    times = {"configure": run_step("configure", configure, cwd=objdir, log=log, say=say, env=env)}
    say("%s: make -j%d (about 6 minutes on 2 free cores)" % (spec.name, jobs))
    times["make"] = run_step("make", ["make", "-j%d" % jobs], cwd=objdir, log=log, say=say, env=env, progress=_objects(objdir))
    say("%s: make install into %s" % (spec.name, prefix))
    times["install"] = run_step("install", ["make", "install"], cwd=objdir, log=log, say=say, env=env)
    built = probe(binary)
    if built is None:
        raise BuildError("%s: the built %s does not run (log: %s)" % (spec.name, binary, log))
    if built.free_threaded != spec.free_threaded or "%d.%d" % built.version[:2] != spec.release:
        raise BuildError("%s: the built %s is %s, not what was asked (log: %s)" % (spec.name, binary, built.version_text, log))
    seconds = time.monotonic() - started
    doc = {
        "schema": "wakelab.interpreter-build",
        "schema_version": 1,
        "spec": spec.name,
        "version": source.version,
        "free_threaded": spec.free_threaded,
        "source": source.origin,
        "configure": configure[1:],
        "jobs": jobs,
        "started_utc": started_utc,
        "build_seconds": round(seconds, 1),
        "step_seconds": {k: round(v, 1) for k, v in times.items()},
        "interpreter": binary,
        "built_by": sys.executable,
    }
    bundle.atomic_write_text(os.path.join(prefix, MARKER), json.dumps(doc, indent=2) + "\n")
    shutil.rmtree(work, ignore_errors=True)
    say("%s: done in %.0f s: %s" % (spec.name, seconds, binary))
    return binary, True


def build(specs: Sequence[BuildSpec], *, say: Say, source_path: Optional[str] = None, suite: Optional[str] = None,
          jobs: Optional[int] = None, rebuild: bool = False, cache: Optional[str] = None) -> List[Tuple[BuildSpec, str, bool]]:
    """Build every spec (one source per release) into the cache; ``[(spec, interpreter, built now)]``."""
    cache = cache or cache_dir()
    check_tools()
    releases = sorted({s.release for s in specs})
    if source_path is not None and len(releases) > 1:
        raise BuildError("--source is one CPython release; build one release at a time with it")
    try:
        os.makedirs(cache, exist_ok=True)
        lock = bundle.FolderLock(cache).acquire()
    except bundle.FolderBusy:
        raise BuildError("the interpreter cache %s is in use by another build" % cache) from None
    except OSError as exc:
        raise BuildError("cannot use the interpreter cache %s: %s" % (cache, exc.strerror or exc)) from None
    try:
        say("cache: %s" % cache)
        results = []
        for release in releases:
            source = given_source(source_path) if source_path else fetch_debian_source(release, cache, say, suite)
            if not source.version.startswith(release + "."):
                raise BuildError("the source %s is CPython %s, not %s" % (source.path, source.version, release))
            for spec in [s for s in specs if s.release == release]:
                path, built = build_one(spec, source, cache, say, jobs or os.cpu_count() or 1, rebuild)
                results.append((spec, path, built))
        return results
    except OSError as exc:
        raise BuildError("build failed: %s" % exc) from None
    finally:
        lock.release()
