"""A grid of runs: the same lab under several interpreters or conditions, side by side.

``wakelab run --python A --python B --placement same,split`` is a grid of
four *cells*.  Each cell is an ordinary run with its own complete evidence
bundle under ``cells/<label>/`` (so ``show``, ``compare``, ``export`` and
``report`` work on it unchanged), and the grid writes ``matrix.json`` and
``matrix.txt`` beside them after every turn: one table per arm with a row per
cell.

Cells take turns, one repetition (``--repeat``) each, never at once: the first
cell's first pass over its arms, then the second cell's, and so on, then the
second passes in the other order (A B, B A, A B ...).  So a drift of the
machine over the grid (a host that changes state for seconds or minutes)
reaches every cell alike, as repetitions make it reach every arm of a run
alike, and ``compare GRID`` compares cells measured side by side rather than
one after the other.  A cell's conditions are applied for its turn only.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import itertools
import os
from typing import Any, Callable, Dict, Generator, List, Mapping, Optional, Sequence, Set, Tuple

from wakelab.evidence import bundle
from wakelab.evidence.matrix import MatrixCell, MatrixEntry
from wakelab.evidence.model import Bundle
from wakelab.errors import OutputError
from wakelab.harness.runner import (
    Execution, ProgressCallback, RunInterrupted, RunPlan, RunStopped, WriteFailed, interrupting_signal, lock_folder, run_turns,
    utc_now,
)

MATRIX_SCHEMA = "wakelab.matrix"
MATRIX_VERSION = 1
CELLS_DIR = bundle.CELLS_DIR


@dataclasses.dataclass(frozen=True)
class Cell:
    """One combination of the grid's dimensions."""

    label: str
    python: Optional[str]
    python_label: Optional[str]
    placement: str
    notifier_cpu: Optional[int]
    waiter_cpu: Optional[int]
    settle_us: int
    cpu_threads: int
    # A side of an A/B (wakelab ab): its name, and what its workers run with beside the
    # interpreter (see runner.Execution: PYTHONPATH folders, environment, user arms' origins) and
    # a planted delay of its own (a self-test).  None / empty: a cell of an ordinary grid.
    side: Optional[str] = None
    pythonpath: Tuple[str, ...] = ()
    env: Tuple[Tuple[str, str], ...] = ()
    arm_origins: Mapping[str, Mapping[str, object]] = dataclasses.field(default_factory=dict)
    planted_delay_us: Optional[int] = None

    def dimensions(self) -> Dict[str, object]:
        dims: Dict[str, object] = {
            "python": self.python_label,
            "placement": self.placement,
            "settle_us": self.settle_us,
            "cpu_threads": self.cpu_threads,
        }
        if self.side is not None:
            dims["side"] = self.side
        return dims


def expand(pythons: Sequence[Optional[str]], python_labels: Sequence[Optional[str]], placements: Sequence[tuple],
           settles_us: Sequence[int], cpu_threads: Sequence[int]) -> List[Cell]:
    """Every combination, labelled by the dimensions that vary.

    ``placements`` holds ``(name, notifier_cpu, waiter_cpu)`` triples.
    """
    cells = []
    pairs = list(zip(pythons, python_labels))
    for (python, py_label), (placement, ncpu, wcpu), settle, threads in itertools.product(
        pairs, placements, settles_us, cpu_threads
    ):
        parts = []
        if len(pairs) > 1:
            parts.append(py_label or "python")
        if len(placements) > 1:
            parts.append(placement)
        if len(settles_us) > 1:
            parts.append("settle%dus" % settle)
        if len(cpu_threads) > 1:
            parts.append("threads%d" % threads)
        cells.append(
            Cell(
                label="_".join(parts) or "run",
                python=python,
                python_label=py_label,
                placement=placement,
                notifier_cpu=ncpu,
                waiter_cpu=wcpu,
                settle_us=settle,
                cpu_threads=threads,
            )
        )
    return cells


def cell_plan(base: RunPlan, cell: Cell, folder: str) -> RunPlan:
    params = dataclasses.replace(
        base.params,
        placement=cell.placement,
        notifier_cpu=cell.notifier_cpu,
        waiter_cpu=cell.waiter_cpu,
        settle_us=cell.settle_us,
    )
    if cell.planted_delay_us is not None:
        params = dataclasses.replace(params, planted_delay_us=cell.planted_delay_us)
    conditions = dataclasses.replace(base.execution.conditions, cpu_threads=cell.cpu_threads)
    execution = dataclasses.replace(base.execution, python=cell.python, conditions=conditions)
    if cell.side is not None:
        execution = dataclasses.replace(execution, pythonpath=tuple(cell.pythonpath), env=tuple(cell.env),
                                        arm_origins=dict(cell.arm_origins))
    return dataclasses.replace(base, params=params, execution=execution, folder=folder)


def _cell_run(base: RunPlan, cell: Cell, summary: Optional[Dict[str, object]]) -> Optional[Bundle]:
    """Cell ``cell``'s run as it stands (its summary as the runner holds it), as a bundle; None: not started."""
    folder = os.path.join(base.folder, CELLS_DIR, cell.label)
    return Bundle(source=folder, folder=folder, summary=summary) if summary else None


def _matrix_cell(cell: Cell, run: Optional[Bundle]) -> MatrixCell:
    """One cell as matrix.json lists it: its dimensions, how far its run got (``run`` None: not started), its interpreter."""
    status = "done" if run is not None and run.finished_utc else ("running" if run is not None else "pending")
    return MatrixCell.of(cell.label, cell.dimensions(), status, bool(run is not None and run.complete),
                         run.recorded("interpreter") if run is not None else None)


def matrix_doc(base: RunPlan, cells: Sequence[Cell], summaries: Mapping[str, Dict[str, object]], started_utc: str) -> Dict[str, object]:
    """The matrix document: the grid's cells and, per arm, each cell's figures (the records of
    :mod:`wakelab.evidence.matrix`, which reads the document back)."""
    runs = [(cell, _cell_run(base, cell, summaries.get(cell.label))) for cell in cells]
    cell_entries = [_matrix_cell(cell, run) for cell, run in runs]
    entries = {cell.label: run.arms_by_name() if run is not None else {} for cell, run in runs}
    arms: List[Dict[str, object]] = [
        {"name": name, "rows": [MatrixEntry.of(name, cell.label, entries[cell.label].get(name)).to_dict() for cell in cells]}
        for name in base.arm_names
    ]
    doc: Dict[str, object] = {
        "schema": MATRIX_SCHEMA,
        "schema_version": MATRIX_VERSION,
        "lab": {"id": base.lab.id, "title": base.lab.title},
        "started_utc": started_utc,
        "command": list(base.command),
        "dimensions": sorted({k for c in cells for k in c.dimensions()}),
        "cells": [c.to_dict() for c in cell_entries],
        "arms": arms,
        "complete": all(c.complete for c in cell_entries),
    }
    # The lab's own answer over the cells (the free-threading lab's GIL A/B), when it has one.
    if base.lab.matrix_verdict is not None:
        from wakelab.analysis.lab_ab import matrix_verdict

        doc["verdict"] = matrix_verdict(base.lab.matrix_verdict, doc)
    return doc


def run_grid(base: RunPlan, cells: Sequence[Cell], progress: Optional[ProgressCallback] = None,
             render_matrix: Optional[Callable[[Dict[str, object]], str]] = None) -> Dict[str, Any]:
    """Run every cell into ``base.folder/cells/<label>``; returns the matrix document.

    ``matrix.json`` (and ``matrix.txt``, laid out by ``render_matrix``: the
    harness imports no renderer) are rewritten after every cell.  On Ctrl-C
    the matrix is written as it stands and :class:`RunInterrupted` is raised.
    """
    lock = lock_folder(base.folder)
    try:
        return _run_grid_locked(base, cells, progress, render_matrix)
    finally:
        lock.release()


def _run_grid_locked(base: RunPlan, cells: Sequence[Cell], progress: Optional[ProgressCallback],
                     render_matrix: Optional[Callable[[Dict[str, object]], str]]) -> Dict[str, object]:
    started = utc_now()
    summaries: Dict[str, Dict[str, object]] = {}

    def write() -> Dict[str, object]:
        doc = matrix_doc(base, cells, summaries, started)
        try:
            bundle.atomic_write_text(os.path.join(base.folder, bundle.MATRIX_JSON), bundle.dumps(doc))
            if render_matrix is not None:
                bundle.atomic_write_text(os.path.join(base.folder, bundle.MATRIX_TXT), render_matrix(doc))
        except OSError as exc:
            raise WriteFailed(base.folder, exc) from None
        return doc

    def write_quietly() -> Dict[str, object]:
        try:
            return write()
        except WriteFailed:
            return matrix_doc(base, cells, summaries, started)

    try:
        bundle.clear_bundle(base.folder)
        write()
    except OSError as exc:  # WriteFailed is no OSError: clear_bundle's own errors
        raise OutputError("%s (choose another folder with --output)" % WriteFailed(base.folder, exc)) from None
    except WriteFailed as exc:
        raise OutputError("%s; nothing was measured (choose another folder with --output)" % exc) from None
    # Each cell is a run that stops after every repetition (runner.run_turns); the cells take
    # turns, a repetition each.  Every cell's folder is made and locked before the first turn, so
    # a cell that cannot be written stops the grid before anything is measured.
    locks: Dict[str, bundle.FolderLock] = {}
    try:
        for cell in cells:
            folder = os.path.join(base.folder, CELLS_DIR, cell.label)
            try:
                os.makedirs(folder, exist_ok=True)
            except OSError as exc:
                raise OutputError("%s; nothing was measured (choose another folder with --output)" % WriteFailed(folder, exc)) from None
            locks[cell.label] = lock_folder(folder)
    except BaseException:
        for lock in locks.values():
            lock.release()
        raise
    live: Dict[str, Generator[Dict[str, object], None, tuple]] = {}
    ended: Set[str] = set()

    def retire(label: str) -> None:
        ended.add(label)
        live.pop(label, None)
        lock = locks.pop(label, None)
        if lock is not None:
            lock.release()

    def end_the_waiting(make_exc: Optional[Callable[[], BaseException]]) -> None:
        """Every cell still waiting for its turn ends: ``make_exc()`` thrown in at its yield (it then
        ends as an interrupted run, or as one whose write failed), or closed where it stands (None)."""
        for label in list(live):
            turns = live[label]
            try:
                if inspect.getgeneratorstate(turns) == inspect.GEN_CLOSED:
                    pass  # ended already (it was this cell's turn): nothing to throw into
                elif make_exc is None:
                    turns.close()
                else:
                    turns.throw(make_exc())
            except RunInterrupted as exc:
                summaries[label] = exc.summary
            except StopIteration as end:
                summaries[label] = end.value[0]
            except Exception:  # noqa: BLE001 - it ends either way; its bundle stands as last written
                pass
            finally:
                retire(label)

    repeat = max(1, base.execution.repeat)
    failed_write: Optional[WriteFailed] = None  # what stopped the grid, when a write did
    stopped: Optional[str] = None  # what else stopped it early
    at = cells[0].label if cells else "its start"  # the cell whose turn it is
    try:
        for turn in range(repeat):
            # Alternate the order (A B, B A, A B ...), so that no cell always follows another.
            order = list(enumerate(cells)) if turn % 2 == 0 else list(reversed(list(enumerate(cells))))
            for index, cell in order:
                if cell.label in ended:
                    continue
                at = cell.label
                if progress is not None:
                    progress("cell-start", {"cell": cell.label, "index": index, "total": len(cells),
                                            "repetition": turn, "repetitions": repeat})
                try:
                    if cell.label not in live:
                        folder = os.path.join(base.folder, CELLS_DIR, cell.label)
                        live[cell.label] = run_turns(cell_plan(base, cell, folder), progress, take_turns=True)
                    summaries[cell.label] = next(live[cell.label])
                except StopIteration as end:
                    summaries[cell.label], failure = end.value
                    retire(cell.label)
                    if isinstance(failure, WriteFailed):
                        failed_write = failure
                except RunInterrupted as exc:
                    summaries[cell.label] = exc.summary
                    retire(cell.label)
                    end_the_waiting(functools.partial(_interruption, exc.signum))
                    raise RunInterrupted(write_quietly(), base.folder, exc.signum) from None
                except OutputError as exc:  # the cell measured nothing
                    retire(cell.label)
                    if not summaries:
                        raise
                    if isinstance(exc.__cause__, WriteFailed):  # because its folder could not be written
                        failed_write = exc.__cause__
                    else:
                        stopped = "cell %s: %s" % (cell.label, exc)
                if failed_write is None and stopped is None:
                    try:
                        write()
                    except WriteFailed as exc:
                        failed_write = exc
                if failed_write is not None or stopped is not None:
                    break
            if failed_write is not None or stopped is not None:
                break
    except KeyboardInterrupt as exc:  # between two cells' turns (a cell's own is RunInterrupted above)
        signum = interrupting_signal(exc)
        end_the_waiting(functools.partial(_interruption, signum))
        raise RunInterrupted(write_quietly(), base.folder, signum) from None
    except RunInterrupted:
        raise
    except BaseException as exc:  # an error that ends the grid here (an interpreter that fails its probe, ...)
        stopped = "cell %s: %s" % (at, str(exc) or type(exc).__name__)
        raise
    finally:
        # Stopped early: the cells waiting for their turn end as runs whose write failed, their arms
        # cut short saying why, their workers gone.
        if failed_write is not None:
            end_the_waiting(functools.partial(WriteFailed, failed_write.folder, failed_write.error))
        elif stopped is not None:
            end_the_waiting(functools.partial(RunStopped, "the grid stopped at %s" % stopped))
        else:
            end_the_waiting(None)
        for lock in locks.values():  # cells that never had a turn
            lock.release()
        locks.clear()
        doc = write_quietly()  # however the grid ends, the matrix says how its cells ended
    return doc


def _interruption(signum: int) -> KeyboardInterrupt:
    """A ``KeyboardInterrupt`` that a run reads as ``signum`` (see runner.interrupting_signal)."""
    exc = KeyboardInterrupt()
    exc.signum = signum  # type: ignore[attr-defined]
    return exc


__all__ = ["Cell", "Execution", "expand", "run_grid", "matrix_doc", "cell_plan"]
