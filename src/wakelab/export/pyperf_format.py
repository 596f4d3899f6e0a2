"""``--format pyperf``: a pyperf benchmark suite per run, built with pyperf's own API, so that ``python -m pyperf
compare_to A.json B.json --table`` (``stats``, ``hist`` too) works on wakelab's raw samples with pyperf's significance test.

How wakelab's evidence maps onto pyperf's model:

* One suite file per run, named after the run (``compare_to`` heads its columns with the file names), one benchmark per
  series, named after the arm, since ``compare_to`` pairs benchmarks by name.  A latency arm's components become
  benchmarks ``<arm>.<component>``, a rate arm's empty loop ``<arm>.empty-loop``; ``pyperf stats -b event`` picks one out.
* A grid gives one suite per cell, named after the cell, with its labels in each run's metadata (``wakelab_cell``,
  ``wakelab_cell_placement`` ...): ``compare_to`` over a grid's files puts the cells side by side.
* Values are seconds: one per counted wake (``sample_ns / 1e9``); a rate arm's one per round, the time of one operation
  (``round_ns / n_per_round / 1e9``, with ``inner_loops = n_per_round``).  Lower is better for both, as pyperf assumes.
* One pyperf run per wakelab worker process: the samples file pools the workers' values in worker order, cut back by
  summary.json's per-worker counts (an in-process run, or counts that do not add up, give one run).  wakelab discards
  warm-up wakes before it stores samples: their count is in the metadata (``wakelab_warmup_discarded``).
* Metadata describes the run that measured, read from summary.json, never the process exporting it (pyperf's
  ``collect_metadata`` is off); strings are made single-line because pyperf rejects newlines in metadata.

pyperf values must be > 0, and a run needs at least one value: a series with no samples (every wake lost) or a zero
sample (a clock that did not tick) is left out with a note, never bent to fit.
"""

from __future__ import annotations

import datetime
import io
import json
import re
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from wakelab.errors import EvidenceError, UsageError
from wakelab.evidence.model import ArmRecord, Bundle, Grid, GridCell
from wakelab.formatting import finite_number
from wakelab.export.base import Export, ExportedFile, Exporter, missing_cell_notes, worker_spans

# A suite file's suffix: pyperf reads .json (and .json.gz, which wakelab does not write).
SUFFIX = ".json"
# Component names become part of a benchmark name (pyperf prints it, -b selects by it): a safe alphabet.
_SAFE_COMPONENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")


def _pyperf() -> Any:
    try:
        import pyperf  # type: ignore[import-untyped, unused-ignore]  # pyperf ships no type hints
    except ImportError:
        from wakelab.extras import install_command

        raise UsageError("--format pyperf needs the pyperf package, which is not installed: %s" % install_command("pyperf")) from None
    return pyperf


def _one_line(value: object) -> Optional[str]:
    """A metadata string pyperf accepts (non-empty, no newline), or None."""
    return (" ".join(value.split()) or None) if isinstance(value, str) else None


def _whole(value: object) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def pyperf_date(started_utc: object) -> Optional[str]:
    """summary.json's ``2026-10-01T06:00:00Z`` as pyperf writes dates (``2026-10-01 06:00:00``, UTC): pyperf parses them
    with ``datetime.fromisoformat``, which before Python 3.11 does not accept the ``Z`` suffix."""
    text = started_utc.strip() if isinstance(started_utc, str) else ""
    try:
        when = datetime.datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)
    except ValueError:
        return None
    if when.tzinfo is not None:
        when = when.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return when.isoformat(" ")


def run_metadata(evidence: Bundle, arm: ArmRecord) -> Dict[str, object]:
    """pyperf metadata of one arm's run, from the evidence (not from this process)."""
    interpreter, machine, timer = evidence.interpreter, evidence.machine, evidence.timer
    implementation = _one_line(interpreter.implementation)
    platform_parts = [_one_line(v) for v in (machine.os, machine.kernel, machine.architecture)]
    texts = {
        "python_version": interpreter.version,
        "python_implementation": implementation.lower() if implementation else None,
        "python_executable": interpreter.executable,
        "python_compiler": interpreter.compiler,
        "hostname": machine.hostname,
        "cpu_model_name": machine.cpu_model,
        "platform": "-".join(p for p in platform_parts if p) or None,
        "date": pyperf_date(evidence.started_utc),
        "timer": "%s, resolution: %s ns" % (timer.implementation, timer.resolution_ns)
        if timer.implementation and isinstance(timer.resolution_ns, (int, float)) else None,
        "wakelab_version": evidence.tool_version,
        "wakelab_run": evidence.name,
        "wakelab_lab": evidence.lab.id,
        "wakelab_arm_kind": arm.kind,
        **{"wakelab_" + key: getattr(arm, key) for key in ("family", "waiter", "scope", "mechanism", "native")},
    }
    conditions = evidence.conditions
    if conditions.present and isinstance(conditions.recorded, dict):
        # Opaque here: kept whole so two exports can be checked for like conditions.
        texts["wakelab_conditions"] = json.dumps(conditions.recorded, sort_keys=True, separators=(",", ":"))
    metadata: Dict[str, object] = {"loops": 1}
    metadata.update((key, _one_line(value)) for key, value in texts.items() if _one_line(value) is not None)
    integers = {
        "cpu_count": machine.cpu_count,
        "wakelab_lost": arm.latency.lost if arm.latency is not None else None,
        "wakelab_warmup_discarded": arm.warmup_discarded,
        "wakelab_timer_floor_ns": timer.floor_p50_ns,
        "wakelab_settle_us": evidence.parameters.settle_us,
        "wakelab_planted_delay_us": evidence.parameters.planted_delay_us,
    }
    metadata.update((key, value) for key, value in integers.items() if _whole(value) is not None and (key != "cpu_count" or value >= 1))
    wall_s = finite_number(arm.wall_s)
    if wall_s is not None and wall_s >= 0:
        metadata["duration"] = wall_s
    return metadata


def _series(evidence: Bundle, arm: ArmRecord) -> List[Tuple[str, Sequence[int], int]]:
    """(benchmark name, raw ns values, operations per value) of every series of an arm."""
    name = arm.name
    samples = evidence.samples_file(arm)
    if samples.kind != arm.kind:
        raise EvidenceError("arm %s: its samples file is of kind %r, summary.json says %r" % (name, samples.kind, arm.kind))
    if arm.is_latency:
        series = [(name, samples.samples_ns, 1)]
        for component, values in sorted(samples.components_ns.items()):
            if not _SAFE_COMPONENT.fullmatch(component):
                raise EvidenceError("arm %s: component name %r is not a plain name" % (name, component))
            series.append(("%s.%s" % (name, component), values, 1))
        return series
    per_round = samples.n_per_round
    if per_round is None or per_round < 1:
        raise EvidenceError("arm %s: n_per_round in its samples file must be a whole number >= 1" % name)
    return [(name, samples.round_ns, per_round), (name + ".empty-loop", samples.baseline_round_ns, per_round)]


def split_by_worker(arm: ArmRecord, values: Sequence[int]) -> List[Tuple[int, Sequence[int]]]:
    """(worker index, values) per worker; without two or more workers whose counts add up to the series
    (:func:`~wakelab.export.base.worker_spans`) the series is one run (index -1)."""
    spans = worker_spans(arm, len(values), rounds=not arm.is_latency) if len(arm.workers or ()) >= 2 else None
    if spans is None:
        return [(-1, values)]
    return [(index, values[start:stop]) for index, start, stop in spans]


def _worker_metadata(arm: ArmRecord, index: int) -> Dict[str, object]:
    if index < 0 or arm.workers is None:
        return {}
    worker = arm.workers[index]
    metadata: Dict[str, object] = {"wakelab_worker": index + 1}
    pid, lost = _whole(worker.pid), _whole(worker.lost)
    if pid is not None and pid > 0:
        metadata["wakelab_worker_pid"] = pid
    if lost is not None and lost >= 0:
        metadata["wakelab_lost"] = lost
    if worker.applied:
        metadata["wakelab_worker_applied"] = json.dumps(worker.applied, sort_keys=True, separators=(",", ":"))
    return metadata


def build_benchmark(name: str, runs: Sequence[Tuple[Mapping[str, object], Sequence[int]]], per_value: int) -> Any:
    """A pyperf.Benchmark of one series: one pyperf run per ``(metadata, values_ns)``, of ``value_ns / per_value`` s."""
    pyperf = _pyperf()
    loops: Dict[str, object] = {"inner_loops": per_value} if per_value > 1 else {}
    try:
        return pyperf.Benchmark([pyperf.Run([value / per_value / 1e9 for value in values_ns], collect_metadata=False,
                                            metadata=dict(metadata, name=name, unit="second", **loops)) for metadata, values_ns in runs])
    except ValueError as exc:  # pyperf's own validation of values and metadata
        raise EvidenceError("%s cannot be written as a pyperf benchmark: %s" % (name, exc)) from None


def build_suite(evidence: Bundle, extra_metadata: Optional[Mapping[str, object]] = None) -> Tuple[Any, List[str]]:
    """The run as one pyperf.BenchmarkSuite (None: no arm has samples pyperf can hold), and notes on what was left out;
    ``extra_metadata`` is added to every run (a grid cell's labels)."""
    pyperf = _pyperf()
    benchmarks = []
    notes: List[str] = []
    for arm in evidence.arms():
        if not arm.ok or not arm.samples_file:
            reason = _one_line(arm.reason)
            notes.append("arm %s not exported: %s%s" % (arm.name, arm.status, " (%s)" % reason if reason else ""))
            continue
        metadata = dict(run_metadata(evidence, arm), **(extra_metadata or {}))
        for name, values_ns, per_value in _series(evidence, arm):
            if 0 in values_ns:
                notes.append("%s not exported: it has a 0 ns sample and pyperf values must be > 0" % name)
                continue
            runs = [(dict(metadata, **_worker_metadata(arm, index)), values)  # a worker whose every wake was lost has no run
                    for index, values in split_by_worker(arm, values_ns) if values]
            if not runs:
                notes.append("%s not exported: no samples (pyperf needs at least one value)" % name)
                continue
            if len(runs) > 1:
                # The arm's wall time covers all its workers: as every run's duration,
                # pyperf would count it once per run.  Without it pyperf sums the values.
                runs = [({k: v for k, v in meta.items() if k != "duration"}, values) for meta, values in runs]
            benchmarks.append(build_benchmark(name, runs, per_value))
    if not benchmarks:
        return None, notes
    try:
        return pyperf.BenchmarkSuite(benchmarks), notes
    except ValueError as exc:  # two series of one name: summary.json lists arms once, so not ours
        raise EvidenceError("%s cannot be written as a pyperf suite: %s" % (evidence.folder, exc)) from None


def format_suite(suite: Any) -> str:
    """pyperf's JSON text of a suite, as pyperf itself dumps it."""
    out = io.StringIO()
    suite.dump(out)
    return out.getvalue()


def serialize(evidence: Bundle) -> Export:
    _pyperf()  # fail early, before reading any samples, if pyperf is missing
    suite, notes = build_suite(evidence)
    if suite is None:
        raise EvidenceError("%s has no arm with samples to export to pyperf" % evidence.folder)
    return Export(files=(ExportedFile(evidence.name + SUFFIX, format_suite(suite)),), notes=tuple(notes))


def cell_metadata(grid: Grid, cell: GridCell) -> Dict[str, object]:
    """pyperf metadata naming a grid cell: ``wakelab_cell`` and ``wakelab_cell_<dimension>``."""
    metadata: Dict[str, object] = {"wakelab_cell": cell.label}
    for dimension in grid.dimensions:
        value = cell.dimensions.get(dimension)
        shown = value if _whole(value) is not None else _one_line(value)
        if shown is not None:
            metadata["wakelab_cell_" + re.sub(r"[^A-Za-z0-9_]", "_", dimension)] = shown
    return metadata


def serialize_grid(grid: Grid) -> Export:
    """One suite per cell, named after the cell (``compare_to`` over them: a column per cell, a row per arm)."""
    _pyperf()
    files: List[ExportedFile] = []
    notes: List[str] = list(missing_cell_notes(grid))
    for cell in grid.with_evidence:
        suite, cell_notes = build_suite(cell.evidence, cell_metadata(grid, cell))
        notes.extend("cell %s: %s" % (cell.label, note) for note in cell_notes)
        if suite is None:
            notes.append("cell %s not exported: no arm with samples" % cell.label)
            continue
        files.append(ExportedFile(cell.label + SUFFIX, format_suite(suite)))
    if not files:
        raise EvidenceError("%s: no cell has an arm with samples to export to pyperf" % grid.folder)
    return Export(files=tuple(files), notes=tuple(notes))


EXPORTER = Exporter("pyperf", "a pyperf suite per run (a grid: per cell), one benchmark per arm, values in seconds, for "
                    "'python -m pyperf compare_to A.json B.json --table', stats and hist", serialize, serialize_grid, "pyperf", SUFFIX)
