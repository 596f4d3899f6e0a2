"""User-defined arms: load them from arm files and ``wakelab.arms`` entry points.

Measuring side: standard library only, Python 3.9+ and PyPy.

The user declares an arm with :mod:`wakelab.api.v1` (its primitive's moves,
name, family, waiter state, scope, ``t0`` and ``t1``); this module turns each
declaration into a core :class:`~wakelab.core.model.Arm` run by the thread
driver (:mod:`wakelab.core.drivers.thread`) -- no wake loop of its own -- and
registers it (:func:`wakelab.core.registry.register_user_arm`).

Where an arm came from is its *origin*, recorded in the evidence and carried
in every worker request so that the worker loads the same code before it
looks the arm up (:func:`load_origin`):

* ``{"source": "file", "path": ABSOLUTE, "sha256": HEX}`` -- the hash of the
  bytes that were compiled and run; a worker refuses a file whose bytes
  changed since;
* ``{"source": "entry-point", "group": "wakelab.arms", "entry_point": "name =
  module:attr", "distribution": NAME, "version": VERSION}``.

Either may hold ``"sys_path"``: the folders the arm's imports came from here
beyond the standard library (workers start with ``-S``, without
site-packages; they append these).

Every problem at load time is an :class:`ArmFileError` whose message is one
line naming the file (and its line) or the entry point: a file that cannot
be read, a syntax error, an exception or ``sys.exit`` at its top level, a top
level that runs longer than :data:`~wakelab.api.v1.LOAD_TIMEOUT_S` (bounded
with ``SIGALRM`` in the main thread; what the file prints goes to stderr), no
``ARMS``, a declaration against the rules, a name already taken.  Problems
while measuring are :class:`UserArmError` naming the move and the line that
raised; the runner fails the arm with it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import signal
import sys
import sysconfig
import threading
import time
import traceback
import types
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from wakelab.api import v1
from wakelab.core import drivers
from wakelab.core import registry
from wakelab.core.model import LATENCY, Arm, MeasureParams, RawLatency

#: The entry-point group installed packages provide arms in.
ENTRY_POINT_GROUP = "wakelab.arms"
#: Largest arm file read (bytes).
MAX_FILE_BYTES = 4 << 20


class ArmFileError(ValueError):
    """An arm file or entry point that cannot be loaded (the message is one line)."""


class UserArmError(RuntimeError):
    """A user-defined arm's move raised while measuring (the message names the move and the line)."""


FILE = "file"
ENTRY_POINT = "entry-point"
# The keys of each source's origin besides ``source`` and ``sys_path``, in the order they are written.
_KEYS = {FILE: ("path", "sha256"), ENTRY_POINT: ("group", "entry_point", "distribution", "version")}


@dataclasses.dataclass(frozen=True)
class UserArmOrigin:
    """Where a user-defined arm came from (see the module docstring); :meth:`to_dict` is its JSON."""

    source: str
    path: Optional[str] = None
    sha256: Optional[str] = None
    group: Optional[str] = None
    entry_point: Optional[str] = None
    distribution: Optional[str] = None
    version: Optional[str] = None
    sys_path: Tuple[str, ...] = ()

    def to_dict(self) -> Dict[str, object]:
        doc: Dict[str, object] = {"source": self.source}
        doc.update((key, getattr(self, key)) for key in _KEYS.get(self.source, ()))
        if self.sys_path:
            doc["sys_path"] = list(self.sys_path)
        return doc

    @classmethod
    def from_dict(cls, doc: object) -> "UserArmOrigin":
        """A worker request's ``user_arm`` (:class:`ArmFileError` naming what is wrong)."""
        if not isinstance(doc, dict):
            raise ArmFileError("a user arm's origin must be an object, got %s" % type(doc).__name__)
        sys_path = doc.get("sys_path") or []
        if not isinstance(sys_path, list) or not all(isinstance(p, str) for p in sys_path):
            raise ArmFileError("a user arm's sys_path must be a list of folders")
        if doc.get("source") not in _KEYS:
            raise ArmFileError("unknown user arm source %r" % (doc.get("source"),))
        texts = {key: doc.get(key) for key in _KEYS[doc["source"]] if isinstance(doc.get(key), str)}
        if doc["source"] == FILE and len(texts) < 2:
            raise ArmFileError("a user arm file's origin needs its path and sha256")
        if doc["source"] == ENTRY_POINT and " = " not in str(texts.get("entry_point", "")):
            raise ArmFileError("a user arm's entry point must read 'name = module:attr'")
        return cls(doc["source"], sys_path=tuple(sys_path), **texts)

    def label(self) -> str:
        """``arm file /x/my_arms.py`` or ``entry point my-arm = pkg.mod:ARM (pkg 1.0)``."""
        if self.source == FILE:
            return "arm file %s" % self.path
        return "entry point %s" % self.entry_point + (" (%s %s)" % (self.distribution, self.version) if self.distribution else "")


@dataclasses.dataclass(frozen=True)
class UserArm(Arm):
    """A core arm declared by the user, loaded from ``loaded_from``."""

    loaded_from: UserArmOrigin = UserArmOrigin(FILE)

    def describe(self) -> Dict[str, object]:
        described = Arm.describe(self)
        described["user_defined"] = True
        described["origin"] = self.loaded_from.to_dict()
        return described


def _one_line(text: object, most: int = 300) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= most else line[: most - 3] + "..."


def _where_in(tb: Optional[types.TracebackType], filename: Optional[str]) -> str:
    """``"line 12, in notify"`` of the innermost frame of ``filename`` in ``tb`` (any file if None)."""
    found = ""
    for frame in traceback.extract_tb(tb):
        if filename is None or os.path.abspath(frame.filename) == filename:
            found = "%s line %d, in %s" % (os.path.basename(frame.filename), frame.lineno or 0, frame.name)
    return found


def describe_exception(exc: BaseException, filename: Optional[str]) -> str:
    """``ZeroDivisionError: division by zero (my_arms.py line 12, in notify)``."""
    text = "%s: %s" % (type(exc).__name__, _one_line(exc)) if str(exc) else type(exc).__name__
    where = _where_in(exc.__traceback__, filename) or _where_in(exc.__traceback__, None)
    return "%s (%s)" % (text, where) if where else text


# ---------------------------------------------------------------- bounded loading


class _LoadTimeout(BaseException):
    """Raised by the SIGALRM handler when a top level runs too long (a BaseException: no
    ``except Exception`` in the user's code swallows it)."""


@contextlib.contextmanager
def _bounded(timeout_s: Optional[float]) -> Iterator[None]:
    """Raise :class:`_LoadTimeout` in this thread after ``timeout_s`` (main thread only; elsewhere unbounded).

    The previous SIGALRM handler and interval timer are restored on the way out.
    """
    if not timeout_s or threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def expire(signum: int, frame: object) -> None:
        raise _LoadTimeout()

    previous = signal.signal(signal.SIGALRM, expire)
    started = time.monotonic()
    old_delay, old_interval = signal.setitimer(signal.ITIMER_REAL, timeout_s)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if old_delay > 0:  # someone else's alarm (a test timeout): put it back, less the time spent here
            signal.setitimer(signal.ITIMER_REAL, max(old_delay - (time.monotonic() - started), 1e-3), old_interval)


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """What the user's top level prints goes to stderr: stdout may carry ``--json``."""
    saved = sys.stdout
    sys.stdout = sys.stderr
    try:
        yield
    finally:
        sys.stdout = saved


def _import_dirs(before: Sequence[str], arm_file: Optional[str] = None) -> List[str]:
    """The ``sys.path`` folders that modules imported since ``before`` came from, beyond the standard
    library, this package's own folder and ``arm_file`` itself (a worker appends them to its path)."""
    own = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    paths = sysconfig.get_paths()
    stdlib = [os.path.abspath(paths[key]) for key in ("stdlib", "platstdlib") if paths.get(key)]
    entries = [os.path.abspath(p) for p in sys.path if p and os.path.isdir(p)]
    seen = set(before)
    found: List[str] = []
    for name, module in list(sys.modules.items()):
        if name in seen:
            continue
        filename = getattr(module, "__file__", None)
        if not isinstance(filename, str):
            continue
        filename = os.path.abspath(filename)
        if filename == arm_file:
            continue
        holders = [e for e in entries if filename.startswith(e + os.sep)]
        if not holders:
            continue
        entry = max(holders, key=len)
        in_stdlib = any(entry == d or entry.startswith(d + os.sep) for d in stdlib) and not (
            "site-packages" in entry or "dist-packages" in entry
        )
        if entry != own and not in_stdlib and entry not in found:
            found.append(entry)
    return found


def _declared(value: object, where: str) -> List[v1.Arm]:
    """The declarations in an arm file's ``ARMS`` (ArmFileError naming what is wrong)."""
    if not isinstance(value, (list, tuple)):
        raise ArmFileError("%s: ARMS must be a list of wakelab.api.v1.Arm, got %s" % (where, type(value).__name__))
    if not value:
        raise ArmFileError("%s: ARMS is empty (declare at least one wakelab.api.v1.Arm)" % where)
    names: List[str] = []
    for index, spec in enumerate(value):
        if not isinstance(spec, v1.Arm):
            raise ArmFileError("%s: ARMS[%d] is a %s, not a wakelab.api.v1.Arm" % (where, index, type(spec).__name__))
        if spec.name in names:
            raise ArmFileError("%s: ARMS declares the arm %r twice" % (where, spec.name))
        names.append(spec.name)
    return list(value)


def _check_names(specs: Sequence[v1.Arm], where: str, check_builtins: bool) -> None:
    builtin = set(registry.builtin_arm_names()) if check_builtins else set()
    taken = {arm.name: arm for arm in registry.user_arms()}
    for spec in specs:
        if spec.name in builtin:
            raise ArmFileError("%s: arm %r is the name of a built-in arm (see 'wakelab list'): choose another name" % (where, spec.name))
        if spec.name in taken:
            other = taken[spec.name]
            assert isinstance(other, UserArm)
            raise ArmFileError("%s: arm %r is already defined by %s" % (where, spec.name, other.loaded_from.label()))


# ---------------------------------------------------------------- arm files


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_FILE_BYTES + 1)
    except IsADirectoryError:
        raise ArmFileError("arm file %s is a directory, not a Python file" % path) from None
    except FileNotFoundError:
        raise ArmFileError("arm file %s does not exist" % path) from None
    except OSError as exc:
        raise ArmFileError("cannot read arm file %s: %s" % (path, exc.strerror or exc)) from None
    if len(data) > MAX_FILE_BYTES:
        raise ArmFileError("arm file %s is larger than %d bytes: is it a Python file?" % (path, MAX_FILE_BYTES))
    return data


def _run_file(path: str, data: bytes, module_name: str, timeout_s: Optional[float]) -> types.ModuleType:
    """Compile and run the arm file's bytes as module ``module_name``; ArmFileError on any failure."""
    try:
        code = compile(data, path, "exec", dont_inherit=True)
    except SyntaxError as exc:
        raise ArmFileError("arm file %s, line %s: syntax error: %s" % (path, exc.lineno, _one_line(exc.msg))) from None
    except ValueError as exc:  # null bytes, a bad encoding declaration
        raise ArmFileError("arm file %s is not Python source: %s" % (path, _one_line(exc))) from None
    module = types.ModuleType(module_name)
    module.__file__ = path
    sys.modules[module_name] = module  # dataclasses in the file look their module up
    try:
        with _stdout_to_stderr(), _bounded(timeout_s):
            exec(code, module.__dict__)
    except BaseException as exc:
        sys.modules.pop(module_name, None)
        if isinstance(exc, KeyboardInterrupt):
            raise
        if isinstance(exc, _LoadTimeout):
            raise ArmFileError(
                "arm file %s: its top level did not finish within %g s (does it wait or loop when imported? "
                "waits belong in the arm's moves)" % (path, timeout_s or 0)
            ) from None
        if isinstance(exc, SystemExit):
            raise ArmFileError("arm file %s: its top level called sys.exit(%s)" % (path, "" if exc.code is None else exc.code)) from None
        where = _where_in(exc.__traceback__, path)
        line = where.split(",")[0].rpartition(" ")[2] if where else "?"
        if isinstance(exc, v1.ArmDeclarationError):
            raise ArmFileError("arm file %s, line %s: %s" % (path, line, _one_line(exc))) from None
        raise ArmFileError("arm file %s, line %s: %s" % (path, line, describe_exception(exc, path))) from None
    return module


def load_arm_file(path: str, timeout_s: Optional[float] = v1.LOAD_TIMEOUT_S, *, check_builtins: bool = True,
                  expect_sha256: Optional[str] = None, sys_path: Sequence[str] = ()) -> List[Arm]:
    """Load, check and register the arms of the file at ``path``; returns them, in the file's order.

    ``expect_sha256`` (a worker) refuses a file whose bytes are not those the
    run started with; ``sys_path`` folders are appended to ``sys.path``
    first.  :class:`ArmFileError` for any problem (nothing is registered then).
    """
    path = os.path.abspath(path)
    data = _read(path)
    digest = hashlib.sha256(data).hexdigest()
    if expect_sha256 is not None and digest != expect_sha256:
        raise ArmFileError("arm file %s changed since the run started (sha256 %s, was %s)" % (path, digest[:12], expect_sha256[:12]))
    sys.path.extend(folder for folder in dict.fromkeys(sys_path) if folder not in sys.path)
    before = list(sys.modules)
    module = _run_file(path, data, "_wakelab_arm_file_" + digest[:16], timeout_s)
    where = "arm file %s" % path
    if "ARMS" not in module.__dict__:
        raise ArmFileError("%s defines no ARMS (a list of wakelab.api.v1.Arm; see 'pydoc wakelab.api.v1')" % where)
    specs = _declared(module.__dict__["ARMS"], where)
    _check_names(specs, where, check_builtins)
    origin = UserArmOrigin(FILE, path=path, sha256=digest, sys_path=tuple(sys_path or _import_dirs(before, path)))
    arms: List[Arm] = [_core_arm(spec, origin, path) for spec in specs]
    for arm in arms:
        registry.register_user_arm(arm)
    return arms


# ---------------------------------------------------------------- entry points


def _entry_points() -> List[Any]:
    from importlib import metadata

    found: Any = metadata.entry_points()
    if hasattr(found, "select"):
        return list(found.select(group=ENTRY_POINT_GROUP))
    return list(found.get(ENTRY_POINT_GROUP, []))  # Python 3.9: a dict of lists


def entry_point_names() -> List[str]:
    """The arm names installed packages offer in the ``wakelab.arms`` group (reads metadata, imports nothing)."""
    try:
        return sorted({ep.name for ep in _entry_points()})
    except Exception:  # broken metadata of some distribution: offer none rather than fail
        return []


def _load_object(value: str, where: str, timeout_s: Optional[float]) -> Tuple[object, List[str]]:
    from importlib import metadata

    before = list(sys.modules)
    try:
        with _stdout_to_stderr(), _bounded(timeout_s):
            obj = metadata.EntryPoint(name="arm", value=value, group=ENTRY_POINT_GROUP).load()
            if callable(obj) and not isinstance(obj, v1.Arm):
                obj = obj()
    except KeyboardInterrupt:
        raise
    except _LoadTimeout:
        raise ArmFileError("%s: loading it did not finish within %g s" % (where, timeout_s or 0)) from None
    except SystemExit:
        raise ArmFileError("%s: loading it called sys.exit()" % where) from None
    except v1.ArmDeclarationError as exc:
        raise ArmFileError("%s: %s" % (where, _one_line(exc))) from None
    except BaseException as exc:
        raise ArmFileError("%s: %s" % (where, describe_exception(exc, None))) from None
    return obj, _import_dirs(before)


def load_entry_point(name: str, timeout_s: Optional[float] = v1.LOAD_TIMEOUT_S) -> Optional[Arm]:
    """Load and register the arm an installed package offers as entry point ``name``; None if none does."""
    try:
        matches = [ep for ep in _entry_points() if ep.name == name]
    except Exception as exc:
        raise ArmFileError("cannot read the installed packages' %s entry points: %s" % (ENTRY_POINT_GROUP, _one_line(exc))) from None
    if not matches:
        return None
    ep = matches[0]
    dist = getattr(ep, "dist", None)
    origin = UserArmOrigin(ENTRY_POINT, group=ENTRY_POINT_GROUP, entry_point="%s = %s" % (ep.name, ep.value),
                           distribution=dist.metadata["Name"] if dist is not None else None,
                           version=dist.version if dist is not None else None)
    where = origin.label()
    obj, extra = _load_object(ep.value, where, timeout_s)
    return _register_entry_point(obj, dataclasses.replace(origin, sys_path=tuple(extra)), where, check_builtins=True)


def require_arms(names: Sequence[str]) -> None:
    """Make sure each of ``names`` is a registered arm, loading the one an installed package offers as that entry point
    for a name not known here (the entry points are read only then).

    :class:`ArmFileError` if it cannot be loaded; :class:`~wakelab.core.registry.UnknownArmError` naming the arms there
    are if no arm has the name.
    """
    for name in names:
        if name not in registry.arm_names() and load_entry_point(name) is None:
            raise registry.UnknownArmError(registry.unknown_name_message("arm", name, registry.arm_names(), also=entry_point_names()))


def _register_entry_point(obj: object, origin: UserArmOrigin, where: str, check_builtins: bool) -> Arm:
    if not isinstance(obj, v1.Arm):
        raise ArmFileError("%s is a %s, not a wakelab.api.v1.Arm (or a function returning one)" % (where, type(obj).__name__))
    name = str(origin.entry_point).split(" = ", 1)[0]
    if obj.name != name:
        raise ArmFileError("%s declares an arm called %r: the entry point's name must be the arm's name" % (where, obj.name))
    _check_names([obj], where, check_builtins)
    arm = _core_arm(obj, origin, None)
    registry.register_user_arm(arm)
    return arm


# ---------------------------------------------------------------- workers


def load_origin(origin: object) -> None:
    """Load the user-defined arm(s) of ``origin`` (a worker request's ``user_arm``) here, once.

    The parent checked names against the built-in arms; a worker does not
    import every family to check again.  A file is checked against its hash.
    """
    read = UserArmOrigin.from_dict(origin)
    if any(getattr(arm, "loaded_from", None) == read for arm in registry.user_arms()):
        return  # loaded already (an in-process run, or a second request to this process)
    if read.source == FILE:
        load_arm_file(str(read.path), check_builtins=False, expect_sha256=read.sha256, sys_path=read.sys_path)
        return
    sys.path.extend(folder for folder in dict.fromkeys(read.sys_path) if folder not in sys.path)
    obj, _ = _load_object(str(read.entry_point).split(" = ", 1)[1], read.label(), v1.LOAD_TIMEOUT_S)
    _register_entry_point(obj, read, read.label(), check_builtins=False)


# ---------------------------------------------------------------- declaration -> core arm


def _requires(spec: v1.Arm, filename: Optional[str]) -> Callable[[], Optional[str]]:
    check = spec.requires

    def requires() -> Optional[str]:
        if check is None:
            return None
        try:
            reason = check()
        except Exception as exc:
            return "its requires() raised %s" % describe_exception(exc, filename)
        return None if reason is None else _one_line(reason)

    return requires


def _measure(spec: v1.Arm, filename: Optional[str]) -> Callable[[MeasureParams], RawLatency]:
    """The core arm's measure: the user's moves on the thread driver (no wake loop here)."""
    from wakelab.core.drivers import thread as driver

    def measure(params: MeasureParams) -> RawLatency:
        try:
            path = spec.path()
        except Exception as exc:
            raise UserArmError("arm %s: its path() raised %s" % (spec.name, describe_exception(exc, filename))) from None
        if not isinstance(path, v1.WakePath):
            raise UserArmError("arm %s: its path() returned a %s, not a wakelab.api.v1.WakePath" % (spec.name, type(path).__name__))
        core_path, raised = _core_path(path)
        try:
            return driver.measure(params, core_path, "wakelab-waiter-" + spec.name)
        except drivers.HarnessError as exc:
            if raised:  # the waiter's move raised: name it, with its line
                move, error = raised[0]
                raise UserArmError("arm %s: its %s raised %s" % (spec.name, move, describe_exception(error, filename))) from None
            raise UserArmError("arm %s: %s" % (spec.name, _one_line(exc))) from None
        except Exception as exc:  # the notifier's moves (reset, before, notify, after, bind) run here
            raise UserArmError("arm %s: a move raised %s" % (spec.name, describe_exception(exc, filename))) from None

    measure.__name__ = "measure_" + spec.name.replace("-", "_")
    measure.__doc__ = "Wake latency (ns) of the user-defined arm %s on the thread driver." % spec.name
    return measure


def _core_path(path: drivers.WakePath) -> Tuple[drivers.WakePath, List[Tuple[str, BaseException]]]:
    """The user's path for the driver, and where an exception of the waiter's lands.

    The path is the driver's own :class:`~wakelab.core.drivers.WakePath`
    (:mod:`wakelab.api.v1` exports it), handed over with every move untouched
    (the notify call and ``after`` run inside the timed window) but the wait:
    the driver's own stamped wait (``t1`` read as the wait returns), inside a
    ``try`` that notes an exception for the error message.
    """
    raised: List[Tuple[str, BaseException]] = []
    move = "wait" if path.wait is not None else "wait_stamped"
    stamped = path.stamped()  # a plain wait: the driver's own wrapper, t1 read as its wait returns

    def wait_stamped(timeout_s: float) -> Optional[int]:
        try:
            t1 = stamped(timeout_s)
        except BaseException as exc:
            raised.append((move, exc))
            raise
        if t1 is not None and type(t1) is not int:
            raised.append((move, TypeError("it returned a %s, not an int t1 or None" % type(t1).__name__)))
            raise TypeError("wait_stamped returned a %s" % type(t1).__name__)
        return t1

    return dataclasses.replace(path, wait=None, wait_stamped=wait_stamped), raised


def _core_arm(spec: v1.Arm, origin: UserArmOrigin, filename: Optional[str]) -> UserArm:
    mechanism = spec.mechanism or "user-defined arm (%s)" % origin.label()
    return UserArm(
        name=spec.name,
        family=spec.family,
        kind=LATENCY,
        mechanism=mechanism,
        waiter=spec.waiter,
        scope=spec.scope,
        t0=spec.t0,
        t1=spec.t1,
        measure=_measure(spec, filename),
        requires=_requires(spec, filename),
        driver="thread",
        loaded_from=origin,
    )
