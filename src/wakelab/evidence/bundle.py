"""Writing the evidence bundle atomically, and reading it back as typed records (measuring side: stdlib only).

A bundle is a folder: summary.json (the run, per-arm figures, conditions; schema: summary.schema.json), summary.txt (the
same for people) and samples/<arm>.json (each arm's raw nanosecond samples, to recompute any figure).  Every file is
written to a temporary name beside it, fsynced and renamed over the old one, so a reader (or a crash) only ever sees a
whole old or a whole new file; the runner rewrites summary.json after every arm, so an interrupted run leaves valid files
with ``complete: false``.  A run holds :class:`FolderLock` on the folder it writes (a second run there is refused instead
of mixing two runs' files) and first clears what an older bundle left there (:func:`clear_bundle`).

Schema history (``schema_version``): 1 -- first version (wakelab 0.1); the optional ``run_id`` came later, without a bump.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import errno
import fcntl
import functools
import json
import os
import re
import stat
import tempfile
import typing
from typing import Any, Callable, ClassVar, Dict, Generic, List, Mapping, Optional, Tuple, Type, TypeVar, Union

SCHEMA_NAME = "wakelab.summary"
SAMPLES_SCHEMA = "wakelab.samples"
SCHEMA_VERSION = 1
SUMMARY_JSON = "summary.json"
SUMMARY_TXT = "summary.txt"
SAMPLES_DIR = "samples"
MATRIX_JSON = "matrix.json"
MATRIX_TXT = "matrix.txt"
CELLS_DIR = "cells"
LOCK_FILE = ".wakelab.lock"


class FolderBusy(Exception):
    """Another wakelab holds the output folder's lock (it is writing a run there)."""

    def __init__(self, folder: str) -> None:
        super().__init__("%s is being written by another wakelab run" % folder)
        self.folder = folder


def write_temp_text(path: str, text: str) -> str:
    """Write ``text`` (fsynced) to a new temporary file beside ``path``, for the caller to rename; returns its name.  On
    a failure (a full disk) the temporary file is removed and the error raised."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
    except BaseException:
        _unlink_quietly(tmp)
        raise
    return tmp


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def atomic_write_text(path: str, text: str) -> None:
    """Write ``text`` to ``path`` so that readers see the old or the new file, never half."""
    atomic_write_files({path: text})


def atomic_write_files(files: Mapping[str, str]) -> List[str]:
    """Write several ``{path: text}`` files, all or none: each to a temporary file first, renamed into place only when
    every one is whole (renames need no space); the paths, in order."""
    temps: List[str] = []
    try:
        for path, text in files.items():
            temps.append(write_temp_text(path, text))
        for tmp, path in zip(temps, files):
            os.replace(tmp, path)
    except BaseException:
        for tmp in temps:
            _unlink_quietly(tmp)
        raise
    return list(files)


class FolderLock:
    """``flock(LOCK_EX | LOCK_NB)`` on ``folder/.wakelab.lock`` while a run writes the folder: the kernel drops it however
    this process dies, so a crash never leaves a folder locked.  :meth:`acquire` raises :class:`FolderBusy` if another
    process holds it.  :meth:`release` removes the lock file while still holding the lock: an opener waiting on the old
    file then finds it unlinked and tries again, so two holders are impossible."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.path = os.path.join(folder, LOCK_FILE)
        self._fd: Optional[int] = None

    def acquire(self) -> "FolderLock":
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                os.close(fd)
                if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    raise FolderBusy(self.folder) from None
                raise
            try:
                same = os.path.samestat(os.fstat(fd), os.lstat(self.path))
            except OSError:
                same = False
            if same:
                self._fd = fd
                return self
            os.close(fd)  # the holder before us removed this file as it let go: lock the new one

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            _unlink_quietly(self.path)
        finally:
            os.close(fd)

    def __enter__(self) -> "FolderLock":
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


# The files a bundle (or a grid) is made of (report.html: `wakelab report`'s page, made from them), and the temporary
# files atomic_write_text leaves only if killed between mkstemp and rename.
_EVIDENCE_FILES = (SUMMARY_JSON, SUMMARY_TXT, MATRIX_JSON, MATRIX_TXT, "report.html")
_SAMPLES_NAME = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9_.-]*\.json\Z")
# ``wakelab export``'s files in a run's export/ (and export/pyperf/) by default: made from the evidence, they go with it.
EXPORT_DIR = "export"
_EXPORT_NAME = re.compile(r"\A\.?[A-Za-z0-9][A-Za-z0-9_.-]*\.(csv|md|json)(\.[A-Za-z0-9_]+\.tmp)?\Z")
_TEMP_NAME = re.compile(r"\A\.(summary\.json|summary\.txt|matrix\.json|matrix\.txt|[A-Za-z0-9][A-Za-z0-9_.-]*\.json)\.[A-Za-z0-9_]+\.tmp\Z")


def _is(path: str, *kinds: Callable[[int], bool]) -> bool:
    """``path`` itself (a link not followed) is one of ``kinds`` (``stat.S_ISREG`` ...); False when it is not there."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return False
    return any(kind(mode) for kind in kinds)


# A regular file or a symbolic link is removed alike: removing a link never touches what it points to.
_FILE_OR_LINK = (stat.S_ISREG, stat.S_ISLNK)


def _remove(folder: str, match: Callable[[str], object], kinds: Tuple[Callable[[int], bool], ...], quietly: bool = False) -> List[str]:
    """Remove what ``folder`` holds whose name ``match``es and that is one of ``kinds`` (``quietly``: leave what cannot
    be); the paths removed."""
    removed = []
    for name in os.listdir(folder):
        path = os.path.join(folder, name)
        if match(name) and _is(path, *kinds):
            try:
                os.unlink(path)
                removed.append(path)
            except OSError:
                if not quietly:
                    raise
    return removed


def remove_unnamed_samples(folder: str) -> List[str]:
    """Remove the samples files that ``folder``'s summary.json does not name (none if it cannot be read): a run whose
    summary could not be written after an arm's samples were (a full disk) would leave them; the paths removed."""
    try:
        with open(os.path.join(folder, SUMMARY_JSON), encoding="utf-8") as fh:
            doc = json.load(fh)
        named = {os.path.basename(str(a["samples_file"])) for a in doc["arms"] if isinstance(a, dict) and a.get("samples_file")}
    except (OSError, ValueError, KeyError, TypeError):
        return []
    samples = os.path.join(folder, SAMPLES_DIR)
    if not _is(samples, stat.S_ISDIR):
        return []
    return _remove(samples, lambda name: name not in named and _SAMPLES_NAME.match(name), _FILE_OR_LINK, quietly=True)


def clear_bundle(folder: str, _depth: int = 0) -> List[str]:
    """Remove the evidence an older bundle left in ``folder``; the paths removed.

    Only what looks like wakelab's goes: its evidence files, ``*.json`` files (or links) in ``samples/``, what ``wakelab
    export`` writes into ``export/`` and ``export/pyperf/`` by default, wakelab's temporary files, and (a grid) the same
    in each ``cells/<label>/``; folders left empty go too.  A link is never followed (a ``samples`` link is removed, not
    entered), and any other file is left alone.
    """
    try:
        removed = _remove(folder, lambda name: name in _EVIDENCE_FILES or _TEMP_NAME.match(name), (stat.S_ISREG,))
    except FileNotFoundError:
        return []
    samples = os.path.join(folder, SAMPLES_DIR)
    if os.path.islink(samples):
        removed += _remove(folder, lambda name: name == SAMPLES_DIR, (stat.S_ISLNK,))
    elif _is(samples, stat.S_ISDIR):
        removed += _remove(samples, lambda name: _SAMPLES_NAME.match(name) or _TEMP_NAME.match(name), _FILE_OR_LINK)
        _rmdir_if_empty(samples)
    export = os.path.join(folder, EXPORT_DIR)
    for sub in (os.path.join(export, "pyperf"), export) if _is(export, stat.S_ISDIR) else ():
        if _is(sub, stat.S_ISDIR):
            removed += _remove(sub, _EXPORT_NAME.match, _FILE_OR_LINK)
            _rmdir_if_empty(sub)
    cells = os.path.join(folder, CELLS_DIR)
    if _depth == 0 and _is(cells, stat.S_ISDIR):
        for name in os.listdir(cells):
            cell = os.path.join(cells, name)
            if _is(cell, stat.S_ISDIR):
                removed += clear_bundle(cell, _depth + 1)
                _rmdir_if_empty(cell)
        _rmdir_if_empty(cells)
    return removed


def _rmdir_if_empty(folder: str) -> None:
    try:
        os.rmdir(folder)
    except OSError:
        pass  # not empty: holds something that is not ours to remove


@dataclasses.dataclass(frozen=True)
class GridCellIndex:
    """One cell of a grid as its matrix.json lists it: ``folder`` its bundle folder, ``status`` pending, running or done,
    ``has_evidence`` whether its summary.json is there."""

    label: str
    folder: str
    dimensions: Mapping[str, object]
    status: str
    has_evidence: bool


@dataclasses.dataclass(frozen=True)
class GridIndex:
    """A grid folder's validated matrix.json and its cells, in the matrix's order."""

    folder: str
    matrix: Mapping[str, object] = dataclasses.field(repr=False)
    cells: Tuple[GridCellIndex, ...] = ()

    @property
    def with_evidence(self) -> Tuple[GridCellIndex, ...]:
        return tuple(c for c in self.cells if c.has_evidence)

    @property
    def never_ran(self) -> Tuple[str, ...]:
        """Labels of the cells the grid stopped before (no evidence, matrix.json says pending)."""
        return tuple(c.label for c in self.cells if not c.has_evidence)


def listed(names: List[str], most: int = 3) -> str:
    """The first ``most`` of ``names`` for a message, and how many there are in all when there are more."""
    return ", ".join(names[:most]) + (", ... (%d in all)" % len(names) if len(names) > most else "")


def dumps(doc: Mapping[str, object]) -> str:
    """The canonical JSON text of an evidence document (sorted keys, trailing newline)."""
    return json.dumps(doc, indent=2, sort_keys=True, allow_nan=False) + "\n"


def samples_path(folder: str, arm_name: str) -> str:
    return os.path.join(folder, SAMPLES_DIR, arm_name + ".json")


def write_samples(folder: str, arm_name: str, doc: Mapping[str, object]) -> str:
    """Write one arm's raw samples document; returns the path relative to ``folder``."""
    os.makedirs(os.path.join(folder, SAMPLES_DIR), exist_ok=True)
    path = samples_path(folder, arm_name)
    # Compact: samples files can hold millions of integers.
    atomic_write_text(path, json.dumps(doc, sort_keys=True, separators=(",", ":"), allow_nan=False) + "\n")
    return os.path.relpath(path, folder)


def write_bundle(folder: str, summary: Mapping[str, object], text: Optional[str]) -> None:
    """Write summary.json then (when ``text`` is given) summary.txt into ``folder`` (which must exist)."""
    atomic_write_text(os.path.join(folder, SUMMARY_JSON), dumps(summary))
    if text is not None:
        atomic_write_text(os.path.join(folder, SUMMARY_TXT), text)


def prepare_output_folder(folder: str) -> str:
    """Create ``folder`` (and parents) and prove it is writable (OSError: it cannot be); returns its absolute path."""
    folder = os.path.abspath(folder)
    os.makedirs(folder, exist_ok=True)
    fd, probe = tempfile.mkstemp(prefix=".wakelab-probe-", dir=folder)
    os.close(fd)
    os.unlink(probe)
    return folder


def create_unique_folder(parent: str, stem: str) -> str:
    """Create and return ``parent/stem`` or ``parent/stem-2``, ``-3`` ...: never an existing folder, even for two runs
    starting in the same second (``os.mkdir`` creates the folder or fails, atomically)."""
    os.makedirs(parent, exist_ok=True)
    i = 1
    while True:
        candidate = os.path.join(parent, stem if i == 1 else "%s-%d" % (stem, i))
        try:
            os.mkdir(candidate)
            return os.path.abspath(candidate)
        except FileExistsError:
            i += 1


def samples_doc(arm_name: str, raw_fields: Dict[str, object]) -> Dict[str, object]:
    """Wrap an arm's raw record as a versioned samples document."""
    return {"schema": SAMPLES_SCHEMA, "schema_version": SCHEMA_VERSION, "arm": arm_name, "unit": "ns", **raw_fields}


# --- reading records: one lenient reader driven by the records' fields ------------------------
#
# Every record of the evidence model is a frozen dataclass deriving from Record, read by read_record alone: each field
# from the JSON value at its key (its name, or metadata "key": a dotted path, "" for the whole value), as its type; an
# absent key gives the field's default (None without one).  What is there is read as leniently as older or other
# wakelabs' evidence needs, never refused (the schema has done that):
#   Any, Optional[str], Optional[bool]   as stored
#   bool / int / float / str             bool(v), int(v or 0), float(v or 0.0), str(v or "")
#   Optional[int] / Optional[float]      None stays None, else int(v) / float(v); not a number: None
#   a record (Optional: None unless v is a mapping; an empty one too for EMPTY_IS_ABSENT)
#   Tuple[X, ...]                        () unless a list; records: its mappings, each read; str: str(x)
#   Mapping[str, X]                      {} unless a mapping; X Any: the mapping itself; else each value read
#   Optional[Tuple / Mapping]            None unless a list / a mapping, else as above
# A field that needs more names a function of the stored value (metadata "read").

R = TypeVar("R", bound="Record")
S = TypeVar("S")
T = TypeVar("T")
_ABSENT = object()


def json_meta(key: Optional[str] = None, read: Optional[Callable[[Any], object]] = None, omit_none: bool = False,
              absent: object = _ABSENT) -> Dict[str, object]:
    """A field's metadata for the reader: stored under ``key`` (a dotted path; ``""``: the whole value), read by
    ``read`` if given (from ``absent`` where the key is absent: the field's default unless given), and left out of
    :meth:`Record.to_dict` when None if ``omit_none``."""
    meta = {"key": key, "read": read, "omit_none": omit_none or None, "absent": absent}
    return {k: v for k, v in meta.items() if v is not None and v is not _ABSENT}


def json_field(key: Optional[str] = None, read: Optional[Callable[[Any], object]] = None, omit_none: bool = False,
               **kwargs: Any) -> Any:
    """A field with a default and :func:`json_meta` (mypy takes any call but ``dataclasses.field`` for a default)."""
    return dataclasses.field(metadata=json_meta(key, read, omit_none), **kwargs)


class Record:
    """A record of the evidence model, read from its JSON by :func:`read_record` and written back by :meth:`to_dict`."""

    #: Read from an empty mapping, the record is none at all (a section a run did not record).
    EMPTY_IS_ABSENT: ClassVar[bool] = False
    #: Read from a mapping: the evidence holds the record, an empty one too (not a dataclass field: set by read_record).
    in_evidence: bool = False

    @classmethod
    def from_dict(cls: Type[R], value: object) -> R:
        return read_record(cls, value)

    def to_dict(self) -> Dict[str, object]:
        """The record as its JSON stores it (each field at its key)."""
        out: Dict[str, object] = {}
        for field in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, field.name)
            if value is None and field.metadata.get("omit_none"):
                continue
            *path, last = field.metadata.get("key", field.name).split(".")
            where = out
            for part in path:
                where = typing.cast(Dict[str, object], where.setdefault(part, {}))
            where[last] = _plain(value)
        return out


class Of(Generic[S, T]):
    """An attribute read from the record its owner holds at the name the subclass gives (``record``): a bundle's facts,
    a grid's matrix document, a trace's components."""

    record: ClassVar[str]

    def __init__(self, read: Callable[[S], T]) -> None:
        self.read = read

    def __get__(self, owner: object, cls: object) -> T:
        return self.read(getattr(owner, self.record))


def _plain(value: object) -> object:
    if isinstance(value, Record):
        return value.to_dict()
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    return [_plain(v) for v in value] if isinstance(value, tuple) else value


def _lookup(doc: object, path: str) -> object:
    for part in path.split(".") if path else ():
        if not isinstance(doc, Mapping) or part not in doc:
            return _ABSENT
        doc = doc[part]
    return doc


def _is_record(tp: object) -> bool:
    return isinstance(tp, type) and issubclass(tp, Record)


def read_as(tp: Any, value: object) -> Any:
    """``value`` read as type ``tp`` (see the table above)."""
    if tp is Any or tp is object:
        return value
    if _is_record(tp):
        return read_record(tp, value)
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is Union:
        inner = next(arg for arg in args if arg is not type(None))
        if _is_record(inner):  # None for no mapping, or an empty one where the record EMPTY_IS_ABSENT
            return read_record(inner, value) if isinstance(value, Mapping) and (value or not inner.EMPTY_IS_ABSENT) else None
        if typing.get_origin(inner) is not None:  # Optional[Mapping[...]], Optional[Tuple[...]]
            return read_as(inner, value) if isinstance(value, list if typing.get_origin(inner) is tuple else Mapping) else None
        if value is None or inner not in (int, float):
            return value
        try:
            return inner(value)
        except (TypeError, ValueError, OverflowError):  # not a number where the schema does not look: not recorded
            return None
    if tp in (bool, int, float, str):
        return tp(value) if tp is bool else tp(value or tp())
    if origin is tuple:
        item = args[0]
        if not isinstance(value, (list, tuple)):
            return ()
        if _is_record(item):
            return tuple(read_record(item, x) for x in value if isinstance(x, Mapping))
        return tuple(value) if item is Any else tuple(str(x) if item is str else read_as(item, x) for x in value)
    if not isinstance(value, Mapping):
        return {}
    if args[1] in (Any, object):
        return value
    nested = typing.get_origin(args[1]) is collections.abc.Mapping  # a mapping of mappings keeps only those
    return {str(k): read_as(args[1], v) for k, v in value.items() if isinstance(v, Mapping) or not nested}


def _default(field: "dataclasses.Field[object]") -> Callable[[], object]:
    if field.default_factory is not dataclasses.MISSING and "absent" not in field.metadata:
        return field.default_factory
    value = field.metadata.get("absent", None if field.default is dataclasses.MISSING else field.default)
    return lambda: value


@functools.lru_cache(maxsize=None)
def _fields(cls: type) -> Tuple[Tuple[str, str, Callable[[Any], object], Callable[[], object]], ...]:
    """Each field's name, key, reader and default, worked out once per record type."""
    hints = typing.get_type_hints(cls)
    return tuple((field.name, field.metadata.get("key", field.name), field.metadata.get("read") or functools.partial(
        read_as, hints[field.name]), _default(field)) for field in dataclasses.fields(cls))


def read_record(cls: Type[R], value: object) -> R:
    """Record type ``cls`` read from its JSON ``value`` (a mapping; anything else reads as an empty one)."""
    values = {}
    for name, key, read, default in _fields(typing.cast(type, cls)):
        found = _lookup(value, key)
        values[name] = read(default() if found is _ABSENT else found)
    record = cls(**values)
    if isinstance(value, Mapping):
        object.__setattr__(record, "in_evidence", True)  # frozen: the one attribute a reader sets
    return record
