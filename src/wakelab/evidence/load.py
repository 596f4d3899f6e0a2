"""Loading and validating evidence (analysis side: uses jsonschema, imported lazily).

Anything that is not a well-formed summary of a schema this wakelab knows --
a missing file, a truncated one, wrong types, NaN, absurd nesting -- becomes
an :class:`EvidenceError` with one line saying what and where.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict

from wakelab.errors import EvidenceError
from wakelab.evidence.bundle import SAMPLES_SCHEMA, SCHEMA_NAME, SCHEMA_VERSION, SUMMARY_JSON

# A summary of a thousand arms is well under this; anything larger is not ours.
MAX_SUMMARY_BYTES = 32 * 1024 * 1024
# 10 million samples written compactly stay well under this.
MAX_SAMPLES_BYTES = 512 * 1024 * 1024
_SCHEMA_FILE = os.path.join(os.path.dirname(__file__), "summary.schema.json")


def summary_schema() -> Dict[str, Any]:
    """The JSON Schema of summary.json (every field carries a description)."""
    with open(_SCHEMA_FILE, encoding="utf-8") as fh:
        return json.load(fh)  # type: ignore[no-any-return]


def _reject_constant(name: str) -> float:
    raise ValueError("%s is not valid JSON" % name)


def parse_json(text: str, where: str) -> Any:
    """Strict JSON: NaN/Infinity, absurd nesting and absurd integers are errors."""
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise EvidenceError("%s is not valid JSON (line %d, column %d: %s)" % (where, exc.lineno, exc.colno, exc.msg)) from None
    except RecursionError:
        raise EvidenceError("%s is nested too deeply to be a wakelab file" % where) from None
    except ValueError as exc:  # NaN/Infinity, or an integer too long to convert
        raise EvidenceError("%s is not valid evidence: %s" % (where, exc)) from None


def resolve_summary_path(path: str) -> str:
    """``path`` itself, or ``path/summary.json`` when it is a folder."""
    return os.path.join(path, SUMMARY_JSON) if os.path.isdir(path) else path


def load_summary(path: str) -> Dict[str, Any]:
    """Read and validate a summary.json (or the one in folder ``path``)."""
    target = resolve_summary_path(path)
    try:
        size = os.path.getsize(target)
        if size > MAX_SUMMARY_BYTES:
            raise EvidenceError("%s is %d bytes, too large to be a wakelab summary" % (target, size))
        with open(target, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        raise EvidenceError("%s: no such file (give an evidence folder or its summary.json)" % target) from None
    except OSError as exc:
        raise EvidenceError("cannot read %s: %s" % (target, exc.strerror or exc)) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise EvidenceError("%s is not UTF-8 text" % target) from None
    doc = parse_json(text, target)
    validate_summary(doc, target)
    return doc  # type: ignore[no-any-return]


def validate_summary(doc: Any, where: str = "summary") -> None:
    """Raise :class:`EvidenceError` unless ``doc`` is a valid summary of a known schema version."""
    import jsonschema

    if not isinstance(doc, dict):
        raise EvidenceError("%s is not a wakelab summary (top level is %s, not an object)" % (where, type(doc).__name__))
    if doc.get("schema") != SCHEMA_NAME:
        raise EvidenceError("%s is not a wakelab summary (no \"schema\": \"%s\")" % (where, SCHEMA_NAME))
    version = doc.get("schema_version")
    if isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION:
        raise EvidenceError(
            "%s has schema version %d, newer than this wakelab reads (%d): upgrade wakelab" % (where, version, SCHEMA_VERSION)
        )
    validator = jsonschema.Draft202012Validator(summary_schema())
    try:
        error = jsonschema.exceptions.best_match(validator.iter_errors(doc))
    except RecursionError:
        raise EvidenceError("%s is nested too deeply to be a wakelab file" % where) from None
    if error is not None:
        location = "/".join(str(p) for p in error.absolute_path) or "top level"
        message = error.message if len(error.message) <= 200 else error.message[:200] + "..."
        raise EvidenceError("%s is not a valid wakelab summary: at %s: %s" % (where, location, message))


def load_samples(folder: str, entry: Dict[str, Any]) -> Dict[str, Any]:
    """The raw samples document of one arm of the bundle in ``folder``.

    ``entry`` is the arm's entry in summary.json.  The document is checked
    for what recomputing figures needs: the schema tag, the arm name, and
    lists of non-negative integers where samples or round times should be.
    """
    relative = entry.get("samples_file")
    if not isinstance(relative, str) or not relative:
        raise EvidenceError("arm %s has no samples file (status: %s)" % (entry.get("name"), entry.get("status")))
    path = os.path.normpath(os.path.join(folder, relative))
    if os.path.commonpath([os.path.abspath(folder), os.path.abspath(path)]) != os.path.abspath(folder):
        raise EvidenceError("arm %s: samples file %r points outside the bundle" % (entry.get("name"), relative))
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_SAMPLES_BYTES + 1)
    except OSError as exc:
        raise EvidenceError("cannot read %s: %s" % (path, exc.strerror or exc)) from None
    if len(raw) > MAX_SAMPLES_BYTES:
        raise EvidenceError("%s is too large to be a wakelab samples file" % path)
    try:
        doc = parse_json(raw.decode("utf-8"), path)
    except UnicodeDecodeError:
        raise EvidenceError("%s is not UTF-8 text" % path) from None
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
    return doc  # type: ignore[no-any-return]
