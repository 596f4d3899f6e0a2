"""The conditions a figure depends on: the key that cuts the history into series.

Why a key of its own: summary.json's ``conditions`` block holds the load and the idle hold, but
the placement, the loop, the settle and the planted delay are ``parameters``; two runs that
differ only there (a same-CPU cell and a split cell of one grid: p50 5.6 against 26.5 µs) had
equal ``conditions`` and were shown as one series.  The key gathers every recorded condition
that changes what a wake costs, and leaves out what only changes how precisely it is known
(n, warm-up, timeouts, rounds, the number of workers).  A condition the summary does not
record is left out of the key, not guessed: "unknown" is not "none".  Two exceptions, both facts
of the bundle's age rather than guesses: a bundle without ``execution.repeat`` measured each arm
once (repetitions came later), and a bundle without ``PYTHON_GIL`` ran without it set.

The interpreter that measured is part of the key too (schema 4): the interpreter column shows
"CPython 3.13.5t", but a GIL build and a free-threaded one, PYTHON_GIL=1 or not, a debug build or
two builds of one version are different wake paths, and a series of one must not continue into
the other.

The values come through the evidence model's typed sections (:class:`~wakelab.evidence.model.Bundle`);
whether a field is there at all is read from the sections as recorded, because the key must tell a
field the summary leaves out from one it records as null (``switch_interval_s`` null is the
interpreter's default), must not take the model's display defaults for an interpreter that does not
say, and keeps the ``conditions`` this wakelab does not know.  It also reads the stored summaries of
older databases (their keys are recomputed when the schema changes), so it accepts any JSON object.
:class:`ConditionsKey` is a key read back, typed.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Dict, FrozenSet, Mapping, Optional, Tuple

from wakelab.evidence.model import Bundle
from wakelab.evidence.sections import Execution, Parameters

_KNOWN_CONDITIONS = ("cpu_threads", "cpu_procs", "applied_cpu_procs", "switch_interval_s", "idle_hold", "applied_idle_hold")
# key field <- the conditions recorded as applied, else as requested.
_APPLIED_CONDITIONS = (("busy_procs", "applied_cpu_procs", "cpu_procs"), ("idle_hold", "applied_idle_hold", "idle_hold"))
# summary.json interpreter field -> conditions key field, for the facts of the build that change a wake.
_INTERPRETER_KEYS = (
    ("implementation", "implementation"),
    ("version", "python_version"),
    ("free_threaded_build", "free_threaded"),
    ("gil_enabled", "gil_enabled"),
    ("debug_build", "debug_build"),
    ("build", "build"),
)
# Repetitions of a bundle that does not say: it measured each arm once.
REPEAT_WHEN_ABSENT = 1


def section(summary: Mapping[str, Any], name: str) -> Optional[Mapping[str, Any]]:
    """summary.json's section ``name`` as recorded (None: absent, or not a JSON object)."""
    value = summary.get(name)
    return value if isinstance(value, dict) else None


def _word(value: Any, default: str) -> str:
    return value if isinstance(value, str) and value else default


def _parameters_key(parameters: Parameters, recorded: FrozenSet[str]) -> Dict[str, Any]:
    """The parameters' part of the key; ``recorded``: the fields ``parameters`` records (null ones too)."""
    key: Dict[str, Any] = {"placement": _word(parameters.placement, "any")}
    if key["placement"] != "any":
        cpus = (("notifier_cpu", parameters.notifier_cpu), ("waiter_cpu", parameters.waiter_cpu))
        key.update((name, cpu) for name, cpu in cpus if cpu is not None)
    key["loop"] = _word(parameters.mode, "closed")  # before open loop, every run was closed
    if key["loop"] != "closed" and "interval_us" in recorded:
        key["interval_us"] = parameters.interval_us
    if "settle_us" in recorded:
        key["settle_us"] = parameters.settle_us
    if parameters.settle_jitter_us:  # a random part; 0 or absent: every settle the same
        key["settle_jitter_us"] = parameters.settle_jitter_us
    if parameters.planted_delay_us:
        key["planted_delay_us"] = parameters.planted_delay_us
        key["planted_after_us"] = parameters.planted_after_us or 0
    return key


def _repeat(execution: Execution, parameters: Mapping[str, Any]) -> Any:
    """summary.json ``execution.repeat`` (older names in ``parameters`` accepted), 1 when absent."""
    if execution.repeat is not None:
        return execution.repeat
    for name in ("repeat", "repetitions"):
        if parameters.get(name) is not None:
            return parameters[name]
    return REPEAT_WHEN_ABSENT


def _conditions_key(conditions: Mapping[str, Any]) -> Dict[str, Any]:
    key: Dict[str, Any] = {}
    if "cpu_threads" in conditions:
        key["busy_threads"] = conditions["cpu_threads"]
    for name, applied, requested in _APPLIED_CONDITIONS:
        for field in (applied, requested):
            if field in conditions:
                key[name] = conditions[field]
                break
    if "switch_interval_s" in conditions:
        key["switch_interval_s"] = conditions["switch_interval_s"]
    key.update((name, conditions[name]) for name in sorted(conditions) if name not in _KNOWN_CONDITIONS)
    return key


def figure_conditions(summary: Mapping[str, Any]) -> Optional[Dict[str, Any]]:
    """The conditions of a run that change its figures, as a flat JSON object (None: none recorded).

    Keys, each present only when the summary records it:
    ``placement`` (any / same / split) with ``notifier_cpu`` and ``waiter_cpu``
    when pinned; ``loop`` (closed / open) with ``interval_us`` for an open
    loop; ``settle_us``, and ``settle_jitter_us`` when the settle had a random
    part; ``planted_delay_us`` and ``planted_after_us`` when a
    delay was planted; ``repeat`` (repetitions per arm: summary.json
    ``execution.repeat``, 1 when the bundle does not say); ``busy_threads``;
    ``busy_procs`` and ``idle_hold`` as applied (the request when nothing says
    what was applied); ``switch_interval_s`` (None: the interpreter's
    default); ``execution`` (workers / in-process); and the interpreter
    build: ``implementation``, ``python_version``, ``free_threaded``,
    ``gil_enabled``, ``debug_build``, ``build`` as recorded, and
    ``python_gil`` when ``PYTHON_GIL`` was set.  Keys of ``conditions``
    that this wakelab does not know are kept as they are, so that a newer
    condition still tells runs apart.
    """
    bundle = Bundle(source="", folder="", summary=summary)
    parameters, execution = (section(summary, name) for name in ("parameters", "execution"))
    # The order matters where an unknown condition shares a name with a known field: the later one wins.
    key: Dict[str, Any] = _parameters_key(bundle.parameters, frozenset(parameters)) if parameters is not None else {}
    if parameters is not None or execution is not None:
        key["repeat"] = _repeat(bundle.execution, parameters or {})
    key.update(_conditions_key(bundle.conditions.recorded))
    if isinstance(bundle.execution.mode, str):
        key["execution"] = bundle.execution.mode
    if section(summary, "interpreter") is not None:
        interpreter = bundle.interpreter
        key.update((name, interpreter.as_recorded(field)) for field, name in _INTERPRETER_KEYS
                   if interpreter.as_recorded(field) is not None)
        if isinstance(interpreter.python_gil_env, str) and interpreter.python_gil_env:
            key["python_gil"] = interpreter.python_gil_env
    return key or None


@dataclasses.dataclass(frozen=True)
class ConditionsKey:
    """A conditions key read back (a run's ``figure_conditions``), a field per condition it can hold.

    A field the key does not hold is None, and so is one it holds as null (``switch_interval_s``:
    the interpreter's default): ``recorded`` names the fields it holds, so that the two are told apart.
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
    busy_procs: Any = None
    switch_interval_s: Any = None
    idle_hold: Any = None
    execution: Any = None  # workers or in-process
    implementation: Any = None
    python_version: Any = None
    free_threaded: Any = None
    gil_enabled: Any = None
    python_gil: Any = None  # PYTHON_GIL, when it was set
    debug_build: Any = None
    build: Any = None
    #: Conditions this wakelab does not know, (name, value) by name.
    others: Tuple[Tuple[str, Any], ...] = ()

    @classmethod
    def from_json(cls, key: Mapping[str, Any]) -> "ConditionsKey":
        known = {field.name for field in dataclasses.fields(cls)} - {"recorded", "others"}
        return cls(recorded=frozenset(key), others=tuple(sorted((n, v) for n, v in key.items() if n not in known)),
                   **{name: value for name, value in key.items() if name in known})


def canonical(value: Any) -> str:
    """``value`` as the history stores JSON: sorted keys, no spaces, no NaN (raises ValueError or TypeError)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)


def conditions_key(summary: Mapping[str, Any]) -> Optional[str]:
    """The ``runs.conditions_key`` column: :func:`figure_conditions` as canonical JSON (None: none recorded)."""
    key = figure_conditions(summary)
    try:
        return canonical(key) if key is not None else None
    except (TypeError, ValueError):
        return None


__all__ = ["REPEAT_WHEN_ABSENT", "ConditionsKey", "canonical", "conditions_key", "figure_conditions", "section"]
