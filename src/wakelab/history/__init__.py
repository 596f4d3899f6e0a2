"""Run history: every run's headline figures in one embedded SQLite database.

A bundle folder is the evidence of one run; the history is the index across runs, interpreters and machines, so that
``wakelab history --arm event`` can show how one wake path moves from run to run.  Each row keeps its bundle's folder
and a copy of its summary.json; it never replaces the bundle.

The package, bottom up (each module imports only those above it): :mod:`~wakelab.history.conditions` (which recorded
conditions change a figure, so that runs under different ones are never one series), :mod:`~wakelab.history.rows`
(what one run becomes), :mod:`~wakelab.history.schema` (the tables and their migrations), :mod:`~wakelab.history.store`
(where the database is, opening it safely, writing runs), :mod:`~wakelab.history.queries` (typed records read back).

Standard library only (with the evidence model, which is too) and Python 3.9+, because it runs in the measuring
process right after a run.  Like the rest of the library it raises and never prints.
"""

from wakelab.history.conditions import figure_conditions
from wakelab.history.queries import (ArmPoint, HistoryFilter, RunFacts, RunRecord, arm_trend, group_runs, interpreter_label, list_runs,
                                     recorded_arms, trend_series)
from wakelab.history.rows import Provenance, utc_now
from wakelab.history.schema import SCHEMA_VERSION
from wakelab.history.store import HistoryError, RecordCounts, RecordResult, record_run, record_runs, resolve_db_path

__all__ = [
    "SCHEMA_VERSION", "ArmPoint", "HistoryError", "HistoryFilter", "Provenance", "RecordCounts", "RecordResult", "RunFacts", "RunRecord",
    "arm_trend", "figure_conditions", "group_runs", "interpreter_label", "list_runs", "record_run", "record_runs", "recorded_arms",
    "resolve_db_path", "trend_series", "utc_now",
]
