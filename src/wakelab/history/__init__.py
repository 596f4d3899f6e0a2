"""Run history: every run's headline figures in one embedded SQLite database.

A bundle folder is the evidence of one run; the history is the index across runs, interpreters and machines, so that
``wakelab history --arm event`` can show how one wake path moves from run to run.  It never replaces a bundle: each
row keeps the bundle's folder and a copy of its summary.json.  ``wakelab run`` records each run as it ends, ``wakelab
history add`` bundles of this machine, ``wakelab history import`` bundles made elsewhere (keeping their machine's
facts, noting where and when they were imported); :func:`record_runs` writes any number of runs in one transaction:
all or none.

The package, bottom up (each module imports only those above it): :mod:`~wakelab.history.conditions` (which recorded
conditions change a figure, so that runs under different ones are never one series), :mod:`~wakelab.history.rows`
(what one run becomes, from the evidence model), :mod:`~wakelab.history.schema` (the tables and the migrations of
older databases), :mod:`~wakelab.history.store` (where the database is, opening it safely, writing runs),
:mod:`~wakelab.history.queries` (typed records read back).

Standard library only (with the evidence model, which is too) and Python 3.9+, because it runs in the measuring
process right after a run.  Like the rest of the library it raises and never prints.
"""

from wakelab.history.conditions import figure_conditions
from wakelab.history.queries import (ArmPoint, HistoryFilter, RunFacts, RunGroup, RunRecord, Series, arm_trend, group_runs,
                                     interpreter_label, list_runs, recorded_arms, trend_series)
from wakelab.history.rows import Provenance, utc_now
from wakelab.history.schema import SCHEMA_VERSION
from wakelab.history.store import (BUSY_TIMEOUT_S, HistoryError, RecordCounts, RecordResult, default_db_path, open_history, record_run,
                                   record_runs, resolve_db_path)

__all__ = [
    "BUSY_TIMEOUT_S", "SCHEMA_VERSION", "ArmPoint", "HistoryError", "HistoryFilter", "Provenance", "RecordCounts", "RecordResult", "RunFacts",
    "RunGroup", "RunRecord", "Series", "arm_trend", "default_db_path", "figure_conditions", "group_runs", "interpreter_label",
    "list_runs", "open_history", "record_run", "record_runs", "recorded_arms", "resolve_db_path", "trend_series", "utc_now",
]
