"""The conditions a figure depends on: the key that cuts the history into series.

Why a key of its own: summary.json's ``conditions`` block holds the load and the idle hold, but the placement, the
loop, the settle and the planted delay are ``parameters``; two runs that differ only there (a same-CPU cell and a
split cell of one grid: p50 5.6 against 26.5 µs) had equal ``conditions`` and were shown as one series.  The key
gathers every recorded condition that changes what a wake costs, and leaves out what only changes how precisely it is
known (n, warm-up, timeouts, rounds, the number of workers).  A condition the summary does not record is left out of
the key, not guessed: "unknown" is not "none".  Two exceptions, both facts of the bundle's age rather than guesses: a
bundle without ``execution.repeat`` measured each arm once (repetitions came later), and a bundle without
``PYTHON_GIL`` ran without it set.  The interpreter build that measured is part of the key too (schema 4): a GIL and a
free-threaded build, PYTHON_GIL=1 or not, a debug build or two builds of one version are different wake paths.

Whether a field is there at all is read from the sections as recorded, not from the typed records: the key must tell
a field the summary leaves out from one it records as null (``switch_interval_s`` null is the interpreter's default),
must not take the model's display defaults for an interpreter that does not say, and keeps the ``conditions`` this
wakelab does not know.  It also reads the summaries older databases stored (their keys are recomputed when the schema
changes), so it accepts any JSON object.
"""
from __future__ import annotations

import dataclasses
import json
from typing import Any, Dict, FrozenSet, Mapping, Optional, Tuple

from wakelab.evidence.model import Bundle
from wakelab.evidence.sections import Parameters

# key field <- the first of these conditions recorded (as applied, else as requested).
_CONDITION_FIELDS = (("busy_threads", ("cpu_threads",)), ("busy_procs", ("applied_cpu_procs", "cpu_procs")),
                     ("idle_hold", ("applied_idle_hold", "idle_hold")), ("switch_interval_s", ("switch_interval_s",)))
_KNOWN_CONDITIONS = frozenset(field for _, fields in _CONDITION_FIELDS for field in fields)
# summary.json interpreter field -> conditions key field, for the facts of the build that change a wake.
_INTERPRETER_KEYS = (("implementation", "implementation"), ("version", "python_version"), ("free_threaded_build", "free_threaded"),
                     ("gil_enabled", "gil_enabled"), ("debug_build", "debug_build"), ("build", "build"))
# Repetitions of a bundle that does not say: it measured each arm once.
REPEAT_WHEN_ABSENT = 1


def _word(value: Any, default: str) -> str:
    return value if isinstance(value, str) and value else default


def _parameters_key(parameters: Parameters, recorded: Mapping[str, object]) -> Dict[str, object]:
    """The parameters' part of the key; ``recorded``: the section as recorded (null fields too)."""
    placement, loop = _word(parameters.placement, "any"), _word(parameters.mode, "closed")  # before open loop: closed
    key: Dict[str, object] = {"placement": placement}
    if placement != "any":
        cpus = (("notifier_cpu", parameters.notifier_cpu), ("waiter_cpu", parameters.waiter_cpu))
        key.update((name, cpu) for name, cpu in cpus if cpu is not None)
    key["loop"] = loop
    if loop != "closed" and "interval_us" in recorded:
        key["interval_us"] = parameters.interval_us
    if "settle_us" in recorded:
        key["settle_us"] = parameters.settle_us
    if parameters.settle_jitter_us:  # a random part; 0 or absent: every settle the same
        key["settle_jitter_us"] = parameters.settle_jitter_us
    if parameters.planted_delay_us:
        key["planted_delay_us"] = parameters.planted_delay_us
        key["planted_after_us"] = parameters.planted_after_us or 0
    return key


def _repeat(bundle: Bundle) -> object:
    """summary.json ``execution.repeat`` (older bundles: ``parameters`` repeat or repetitions), 1 when absent."""
    parameters = bundle.recorded("parameters")
    said = [bundle.execution.repeat] + [parameters.get(name) for name in ("repeat", "repetitions")]
    return next((n for n in said if n is not None), REPEAT_WHEN_ABSENT)


def figure_conditions(bundle: Bundle) -> Optional[ConditionsKey]:
    """The conditions of a run that change its figures (None: none recorded); conditions this wakelab does not know
    are kept as they are, so that a newer one still tells runs apart."""
    parameters, execution, interpreter = bundle.parameters, bundle.execution, bundle.interpreter
    # The order matters where an unknown condition shares a name with a known field: the later one wins.
    key = _parameters_key(parameters, bundle.recorded("parameters")) if parameters.in_evidence else {}
    if parameters.in_evidence or execution.in_evidence:
        key["repeat"] = _repeat(bundle)
    recorded = bundle.conditions.recorded
    for name, fields in _CONDITION_FIELDS:
        field = next((f for f in fields if f in recorded), None)
        if field is not None:
            key[name] = recorded[field]
    key.update((name, recorded[name]) for name in sorted(recorded) if name not in _KNOWN_CONDITIONS)
    if isinstance(execution.mode, str):
        key["execution"] = execution.mode
    if interpreter.in_evidence:
        key.update((name, interpreter.as_recorded(field)) for field, name in _INTERPRETER_KEYS
                   if interpreter.as_recorded(field) is not None)
        if isinstance(interpreter.python_gil_env, str) and interpreter.python_gil_env:
            key["python_gil"] = interpreter.python_gil_env
    return ConditionsKey.from_json(key) if key else None


@dataclasses.dataclass(frozen=True)
class ConditionsKey:
    """The conditions that change a run's figures, a field per condition (the key that cuts the history into series).

    A field the key does not hold is None, and so is one it holds as null (``switch_interval_s``: the interpreter's
    default): ``recorded`` names the fields it holds, so that the two are told apart.
    """

    recorded: FrozenSet[str] = frozenset()
    placement: Any = None  # any, same or split
    notifier_cpu: Any = None  # the CPUs a same or split placement pinned
    waiter_cpu: Any = None
    loop: Any = None  # closed or open
    interval_us: Any = None  # an open loop's interval
    settle_us: Any = None
    settle_jitter_us: Any = None  # the settle's random part (absent: every settle the same)
    planted_delay_us: Any = None
    planted_after_us: Any = None
    repeat: Any = None  # repetitions per arm
    busy_threads: Any = None
    busy_procs: Any = None  # busy_procs and idle_hold as applied (the request when nothing says what was)
    switch_interval_s: Any = None
    idle_hold: Any = None
    execution: Any = None  # workers or in-process
    implementation: Any = None  # the interpreter build, as recorded
    python_version: Any = None
    free_threaded: Any = None
    gil_enabled: Any = None
    python_gil: Any = None  # PYTHON_GIL, when it was set
    debug_build: Any = None
    build: Any = None
    #: Conditions this wakelab does not know, (name, value) by name.
    others: Tuple[Tuple[str, Any], ...] = ()

    @classmethod
    def from_json(cls, key: Mapping[str, object]) -> "ConditionsKey":
        known = {field.name for field in dataclasses.fields(cls)} - {"recorded", "others"}
        return cls(recorded=frozenset(key), others=tuple(sorted((n, v) for n, v in key.items() if n not in known)),
                   **{name: value for name, value in key.items() if name in known})

    def to_dict(self) -> Dict[str, object]:
        """The key as JSON holds it (the history's ``runs.conditions_key``, ``--json``'s ``figure_conditions``)."""
        others = dict(self.others)
        return {name: others[name] if name in others else getattr(self, name) for name in sorted(self.recorded)}


def canonical(value: object) -> str:
    """``value`` as the history stores JSON: sorted keys, no spaces, no NaN (raises ValueError or TypeError)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)


def conditions_key(bundle: Bundle) -> Optional[str]:
    """The ``runs.conditions_key`` column: :func:`figure_conditions` as canonical JSON (None: none recorded)."""
    key = figure_conditions(bundle)
    try:
        return canonical(key.to_dict()) if key is not None else None
    except (TypeError, ValueError):
        return None

