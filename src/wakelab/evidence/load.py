"""Loading and validating evidence (analysis side: uses jsonschema, imported lazily).

Anything that is not a well-formed summary of a schema this wakelab knows -- a missing file, a truncated one, wrong
types, NaN, a number beyond float range (``1e400``), absurd nesting -- becomes an :class:`EvidenceError` with one line
saying what and where.

A bundle is a folder someone else may have made, so :func:`read_evidence_file` reads only a regular file (a FIFO would
block, ``/dev/zero`` never ends) inside the bundle once symlinks are resolved, up to a cap (docs/evidence.md).  The type
is checked with ``stat`` before opening (opening some devices has effects of its own) and again with ``fstat`` on the
descriptor, opened ``O_NONBLOCK``, so a file swapped in between is caught without ever blocking.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from typing import Any, Dict, List, Mapping, Tuple, Union

from wakelab.errors import EvidenceError, one_line
from wakelab.evidence.bundle import (
    CELLS_DIR, MATRIX_JSON, SAMPLES_SCHEMA, SCHEMA_NAME, SCHEMA_VERSION, SUMMARY_JSON, GridCellIndex, GridIndex, listed, read_as
)

# A summary of a thousand arms is well under this; anything larger is not ours.
MAX_SUMMARY_BYTES = 32 * 1024 * 1024
# A grid's matrix holds one row per arm and cell: a summary's size is plenty.
MAX_MATRIX_BYTES = MAX_SUMMARY_BYTES
# 10 million samples written compactly stay well under this.
MAX_SAMPLES_BYTES = 512 * 1024 * 1024
_MIB = 1024 * 1024
_SCHEMA_FILE = os.path.join(os.path.dirname(__file__), "summary.schema.json")


def summary_schema() -> Dict[str, object]:
    """The JSON Schema of summary.json (every field carries a description)."""
    with open(_SCHEMA_FILE, encoding="utf-8") as fh:
        return json.load(fh)


def _reject_constant(name: str) -> float:
    raise ValueError("%s is not valid JSON" % name)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e400: valid JSON, but no float holds it
        shown = text if len(text) <= 40 else text[:37] + "..."
        raise ValueError("the number %s is beyond the range of a float (non-finite numbers are refused)" % shown)
    return value


def parse_json(text: str, where: str) -> Any:
    """Strict JSON: NaN/Infinity, numbers beyond float range, absurd nesting and absurd integers are errors."""
    try:
        return json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
    except json.JSONDecodeError as exc:
        raise EvidenceError("%s is not valid JSON (line %d, column %d: %s)" % (where, exc.lineno, exc.colno, exc.msg)) from None
    except RecursionError:
        raise EvidenceError("%s is nested too deeply to be a wakelab file" % where) from None
    except ValueError as exc:  # NaN/Infinity, or an integer too long to convert
        raise EvidenceError("%s is not valid evidence: %s" % (where, exc)) from None


# Limits of the numbers and names a wakelab file can hold.
_INT_LIMIT = 2**63
_ARM_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")
_SAMPLES_FILE = re.compile(r"samples/[a-z0-9][a-z0-9-]{0,63}\.json")


def _check_values(value: Any, where: str, path: str = "") -> None:
    """Reject what JSON allows but no wakelab file holds: huge integers, lone surrogates."""
    stack = [(value, path)]
    while stack:
        item, at = stack.pop()
        if isinstance(item, dict):
            for key, sub in item.items():
                _check_text(key, where, at)
                stack.append((sub, "%s/%s" % (at, one_line(key))))
        elif isinstance(item, list):
            stack.extend((sub, "%s/%d" % (at, i)) for i, sub in enumerate(item))
        elif isinstance(item, str):
            _check_text(item, where, at)
        elif isinstance(item, int) and not isinstance(item, bool) and not -_INT_LIMIT < item < _INT_LIMIT:
            raise EvidenceError("%s is not valid evidence: a number at %s is too large" % (where, at or "top level"))
        elif isinstance(item, float) and not math.isfinite(item):
            raise EvidenceError("%s is not valid evidence: the number at %s is not finite (%r)" % (where, at or "top level", item))


def _check_text(text: str, where: str, at: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise EvidenceError("%s is not valid evidence: a string at %s is not valid Unicode" % (where, at or "top level")) from None


_FILE_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)


def _inside(path: str, folder: str) -> bool:
    return os.path.commonpath([folder, path]) == folder


def read_evidence_file(path: str, folder: str, max_bytes: int, what: str) -> Union[bytes, bytearray]:
    """The bytes of ``path``, a regular file inside ``folder``, at most ``max_bytes`` of them (``what`` names the file
    in messages: "a wakelab summary"); never more than ``max_bytes + 1`` bytes are read."""
    try:
        real = os.path.realpath(path)
        real_folder = os.path.realpath(folder)
        info = os.stat(real)
        if not stat.S_ISREG(info.st_mode):
            kind = next((name for test, name in _FILE_KINDS if test(info.st_mode)), "not a regular file")
            shown = "" if real == os.path.abspath(path) else " (it leads to %s)" % real
            raise EvidenceError("%s is %s%s, not a regular file: evidence is read only from regular files" % (path, kind, shown))
        if not _inside(real, real_folder):
            raise EvidenceError("%s leads outside the bundle (to %s): evidence is read only from files inside %s" % (
                path, real, folder))
        # O_NOFOLLOW: the resolved path must still be the file, not a link put there since.
        fd = os.open(real, _OPEN_FLAGS | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        raise EvidenceError("%s: no such file" % path) from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the name
        raise EvidenceError("cannot read %s: %s" % (path, getattr(exc, "strerror", None) or exc)) from None
    try:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode) or (opened.st_dev, opened.st_ino) != (info.st_dev, info.st_ino):
            raise EvidenceError("%s changed while it was being opened: read it again" % path)
        if opened.st_size > max_bytes:
            raise EvidenceError("%s is %d bytes, more than the %d MiB %s can be" % (
                path, opened.st_size, max_bytes // _MIB, what))
        # One buffer of the size fstat gave (plus one byte, to see a file that grew), filled in place: a large samples
        # file is not copied again on its way in.
        buffer = bytearray(opened.st_size + 1)
        view = memoryview(buffer)
        got = 0
        try:
            while True:
                if got == len(buffer):  # it grew since fstat: read on, up to the cap plus one byte
                    if got > max_bytes:
                        break
                    view.release()
                    buffer.extend(bytes(min(len(buffer), max_bytes + 1 - got)))
                    view = memoryview(buffer)
                count = os.readv(fd, [view[got:]])
                if not count:
                    break
                got += count
        finally:
            view.release()
    except OSError as exc:
        raise EvidenceError("cannot read %s: %s" % (path, exc.strerror or exc)) from None
    finally:
        os.close(fd)
    if got > max_bytes:
        raise EvidenceError("%s grew past the %d MiB %s can be while it was read" % (path, max_bytes // _MIB, what))
    del buffer[got:]
    return buffer


def resolve_summary_path(path: str) -> str:
    return os.path.join(path, SUMMARY_JSON) if os.path.isdir(path) else path


def load_summary(path: str) -> Dict[str, object]:
    """Read and validate a summary.json (or the one in folder ``path``)."""
    target = resolve_summary_path(path)
    if not os.path.lexists(target):
        raise EvidenceError("%s: no such file (give an evidence folder or its summary.json)" % target)
    doc = read_json(target, os.path.dirname(os.path.abspath(target)), MAX_SUMMARY_BYTES, "a wakelab summary")
    validate_summary(doc, target)
    return doc


def read_json(path: str, folder: str, max_bytes: int, what: str) -> Any:
    """The strict JSON (:func:`parse_json`) of UTF-8 file ``path``, read by :func:`read_evidence_file`."""
    raw = read_evidence_file(path, folder, max_bytes, what)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise EvidenceError("%s is not UTF-8 text" % path) from None
    return parse_json(text, path)


def _check_schema(doc: Any, schema: Mapping[str, object], where: str, what: str) -> None:
    """Raise :class:`EvidenceError` at the place ``doc`` breaks ``schema`` first (``what``: ``summary``, ``matrix``)."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema)
    try:
        error = jsonschema.exceptions.best_match(validator.iter_errors(doc))
    except RecursionError:
        raise EvidenceError("%s is nested too deeply to be a wakelab file" % where) from None
    if error is not None:
        location = one_line("/".join(str(p) for p in error.absolute_path)) or "top level"
        message = one_line(error.message if len(error.message) <= 200 else error.message[:200] + "...")
        raise EvidenceError("%s is not a valid wakelab %s: at %s: %s" % (where, what, location, message))


def validate_summary(doc: Any, where: str = "summary") -> None:
    """Raise :class:`EvidenceError` unless ``doc`` is a valid summary of a known schema version."""
    if not isinstance(doc, dict):
        raise EvidenceError("%s is not a wakelab summary (top level is %s, not an object)" % (where, type(doc).__name__))
    if doc.get("schema") != SCHEMA_NAME:
        raise EvidenceError("%s is not a wakelab summary (no \"schema\": \"%s\")" % (where, SCHEMA_NAME))
    version = doc.get("schema_version")
    if isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION:
        raise EvidenceError(
            "%s has schema version %d, newer than this wakelab reads (%d): upgrade wakelab" % (where, version, SCHEMA_VERSION)
        )
    _check_values(doc, where)
    _check_schema(doc, summary_schema(), where, "summary")
    for index, arm in enumerate(doc["arms"]):
        if not _ARM_NAME.fullmatch(arm["name"]):
            raise EvidenceError("%s is not a valid wakelab summary: at arms/%d/name: %r is not an arm name" % (where, index, arm["name"]))
        samples_file = arm["samples_file"]
        if samples_file is not None and not _SAMPLES_FILE.fullmatch(samples_file):
            raise EvidenceError(
                "%s is not a valid wakelab summary: at arms/%d/samples_file: %r is not a samples file" % (where, index, samples_file)
            )


def load_samples(folder: str, entry: Dict[str, object]) -> Dict[str, object]:
    """The raw samples document of one arm of the bundle in ``folder``.

    ``entry`` is the arm's entry in summary.json.  The document is checked for what recomputing figures needs: the
    schema tag, the arm name, and lists of non-negative integers where samples or round times should be.
    """
    relative = entry.get("samples_file")
    if not isinstance(relative, str) or not relative:
        raise EvidenceError("arm %r has no samples file (status: %s)" % (entry.get("name"), entry.get("status")))
    path = os.path.normpath(os.path.join(folder, relative))
    if not _inside(os.path.abspath(path), os.path.abspath(folder)):
        raise EvidenceError("arm %r: samples file %r points outside the bundle" % (entry.get("name"), relative))
    try:
        missing = not os.path.lexists(path)
    except ValueError:  # a NUL byte in the name
        missing = False
    if missing:
        raise EvidenceError("cannot read %s: no such file (arm %s's samples)" % (path, entry.get("name")))
    doc = read_json(path, folder, MAX_SAMPLES_BYTES, "a wakelab samples file")
    if not isinstance(doc, dict) or doc.get("schema") != SAMPLES_SCHEMA:
        raise EvidenceError("%s is not a wakelab samples file" % path)
    if doc.get("arm") != entry.get("name"):
        raise EvidenceError("%s holds samples of arm %r, not %r" % (path, doc.get("arm"), entry.get("name")))
    series_keys = ("samples_ns",) if doc.get("kind") == "latency" else ("round_ns", "baseline_round_ns")
    for key in series_keys:
        values = doc.get(key)
        if not isinstance(values, list) or not all(
            isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**63 for v in values
        ):
            raise EvidenceError("%s: %s must be a list of non-negative integers (ns)" % (path, key))
    components = doc.get("components_ns", {})
    if not isinstance(components, dict) or not all(
        isinstance(v, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in v) for v in components.values()
    ):
        raise EvidenceError("%s: components_ns must map names to lists of integers" % path)
    return doc


_MATRIX_SCHEMA_FILE = os.path.join(os.path.dirname(__file__), "matrix.schema.json")


def is_grid_folder(path: str) -> bool:
    """True for the folder of a grid run (matrix.json and no summary.json of its own); a matrix.json that is not a
    regular file still makes one, so that :func:`load_matrix` says what is wrong with it."""
    return (
        os.path.isdir(path)
        and os.path.lexists(os.path.join(path, MATRIX_JSON))
        and not os.path.exists(os.path.join(path, SUMMARY_JSON))
    )


def load_matrix(folder: str) -> Dict[str, object]:
    """Read and validate the matrix.json of the grid in ``folder``."""
    target = os.path.join(folder, MATRIX_JSON)
    doc = read_json(target, folder, MAX_MATRIX_BYTES, "a wakelab matrix")
    if not isinstance(doc, dict) or doc.get("schema") != "wakelab.matrix":
        raise EvidenceError("%s is not a wakelab matrix (no \"schema\": \"wakelab.matrix\")" % target)
    _check_values(doc, target)
    with open(_MATRIX_SCHEMA_FILE, encoding="utf-8") as fh:
        _check_schema(doc, json.load(fh), target, "matrix")
    return doc


# --- grids: every reader of one (show, report, export, compare, history) goes through is_grid and load_grid_index, so a
# grid is judged one way.

CELL_PENDING = "pending"


def is_grid(path: str) -> bool:
    """Whether ``path`` is read as a grid (:func:`is_grid_folder`) or as one run: the choice every reader of either makes.

    A folder with ``cells/`` but neither summary.json nor matrix.json is a grid that lost its index: it is refused,
    naming the cells that are runs, not read as a broken run.
    """
    cells = os.path.join(path, CELLS_DIR)
    if os.path.isdir(cells) and not any(os.path.lexists(os.path.join(path, name)) for name in (MATRIX_JSON, SUMMARY_JSON)):
        try:
            names = sorted(n for n in os.listdir(cells) if os.path.lexists(os.path.join(cells, n, SUMMARY_JSON)))
        except OSError:
            names = []
        hint = "give one of its cells (%s)" % listed([os.path.join(cells, n) for n in names]) if names else \
            "none of its cells has a summary.json either"
        raise EvidenceError("%s has cells/ but no matrix.json: the grid's index is missing; %s" % (path, hint))
    return is_grid_folder(path)


def load_grid_index(folder: str) -> GridIndex:
    """Read a grid folder's matrix.json and find each cell's bundle (not reading it), refusing what is not a whole grid.

    A cell that never ran (pending, no summary.json) is kept with ``has_evidence`` false: readers note it and go on.
    One whose evidence is missing although matrix.json says it ran is an :class:`EvidenceError`.
    """
    matrix = load_matrix(folder)
    where = os.path.join(folder, MATRIX_JSON)
    root = os.path.realpath(folder)
    labels: Dict[str, str] = {}
    folders: Dict[str, str] = {}
    cells: List[GridCellIndex] = []
    for entry in read_as(Tuple[Mapping[str, object], ...], matrix.get("cells")):
        label, relative = str(entry["label"]), str(entry["folder"])
        if label in labels:
            raise EvidenceError("%s lists cell %s more than once" % (where, label))
        if os.path.normpath(relative) in folders:
            raise EvidenceError("%s gives cells %s and %s one folder (%s)" % (
                where, folders[os.path.normpath(relative)], label, relative))
        labels[label] = relative
        folders[os.path.normpath(relative)] = label
        path = os.path.join(folder, relative)
        real = os.path.realpath(path)
        if real == root or not _inside(real, root):
            raise EvidenceError("%s: cell %s's folder %s leads outside the grid (to %s): a grid's cells are read "
                                "only from inside its folder" % (folder, label, relative, real))
        has_evidence = os.path.lexists(os.path.join(path, SUMMARY_JSON))
        status = str(entry["status"])
        if not has_evidence and status != CELL_PENDING:
            missing = "its folder %s is missing" % relative if not os.path.lexists(path) else "%s has no %s" % (
                relative, SUMMARY_JSON)
            raise EvidenceError("%s: cell %s ran (matrix.json says %s) but %s: the grid's evidence is incomplete "
                                "(restore the cell, or run the grid again)" % (folder, label, status, missing))
        cells.append(GridCellIndex(label, path, dict(read_as(Mapping[str, object], entry.get("dimensions"))), status, has_evidence))
    if not any(c.has_evidence for c in cells):
        raise EvidenceError("%s: no cell of this grid has evidence yet (it stopped before its first cell)" % folder)
    return GridIndex(folder=folder, matrix=matrix, cells=tuple(cells))

