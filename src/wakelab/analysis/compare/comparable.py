"""Whether two runs measured the same experiment, and which differences were compared on purpose."""

from __future__ import annotations

import json
from typing import Any, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

from wakelab.analysis.compare.records import Run
from wakelab.errors import EvidenceError
from wakelab.evidence.bundle import listed

# Differences that may be compared on purpose with --across NAME.
ACROSS_NAMES: Tuple[str, ...] = (
    "placement", "settle", "planted-delay", "mode", "interval", "cpu-threads", "cpu-procs", "idle-hold",
    "switch-interval", "interpreter",
)

# Measurement parameters that make a different experiment: (key, value when a bundle
# predates the key, why, the --across name).  Others (n, rounds, timeout ...) change only precision.
EXPERIMENT_PARAMETERS: Tuple[Tuple[str, object, str, str], ...] = (
    ("settle_us", None, "a blocked waiter's settle time is part of the experiment; use the same --settle-us",
     "settle"),
    # Before random settles every settle was the same: a bundle without the key had no random part.
    ("settle_jitter_us", 0, "the settle's random part decides where a notify lands in a poll; use the same "
     "--settle-jitter-us", "settle"),
    ("planted_delay_us", 0, "a planted delay adds to every sample; compare runs with the same --planted-delay-us",
     "planted-delay"),
    ("placement", "any", "where notifier and waiter run can matter more than the mechanism; use the same --placement",
     "placement"),
    ("mode", "closed", "open-loop and closed-loop latencies time different things; use the same --mode", "mode"),
    ("interval_us", 1000, "an open-loop schedule's period sets the load; use the same --interval-us", "interval"),
)


def across_name_of_condition(key: str) -> Optional[str]:
    """The --across name that covers condition ``key`` (``applied_idle_hold`` -> ``idle-hold``), or None."""
    name = key[len("applied_"):] if key.startswith("applied_") else key
    if name.endswith("_s"):
        name = name[:-2]
    name = name.replace("_", "-")
    return name if name in ACROSS_NAMES else None


def parse_names(text: str, known: Iterable[str], expected: str, unknown: str) -> Tuple[str, ...]:
    """The comma-separated names of ``text``, in order, each once; ValueError ``expected`` for none, ``unknown``
    (a format of the name) for one not ``known``."""
    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names:
        raise ValueError(expected)
    for name in names:
        if name not in known:
            raise ValueError(unknown % (name,))
    return tuple(dict.fromkeys(names))


def parse_across(text: str) -> Tuple[str, ...]:
    """``placement,settle`` -> the names, in order; ValueError naming an unknown one and the known ones."""
    known = ", ".join(ACROSS_NAMES)
    return parse_names(text, ACROSS_NAMES, "expected one or more of %s" % known, "unknown name %%r (known: %s)" % known)


def _differences(a: Any, b: Any, keys: Sequence[str]) -> List[str]:
    """``key a vs b`` for each of ``keys`` whose value differs between records (or mappings) ``a`` and ``b``."""
    def value(record: Any, key: str) -> Any:
        return record.get(key) if isinstance(record, Mapping) else getattr(record, key)

    return ["%s %s vs %s" % (k, value(a, k), value(b, k)) for k in keys if value(a, k) != value(b, k)]


# The interpreter record's keys that make another interpreter (as stored: debug_build has no typed field).
_INTERPRETER_KEYS = ("implementation", "version", "build", "free_threaded_build", "gil_enabled", "debug_build")


def comparability(baseline: Run, other: Run, across: Sequence[str] = ()) -> Tuple[List[str], List[str]]:
    """The warnings, and the differences compared on purpose.  Raise :class:`EvidenceError` unless the runs measured
    the same experiments: refused, unless ``across`` names the difference (:data:`ACROSS_NAMES`): no arm in common; a
    shared arm whose kind, waiter state, scope or unit differs; different :data:`EXPERIMENT_PARAMETERS` or
    ``conditions``.  Warned: different interpreters, machines, pinned CPUs or wakelab versions, conditions recorded by
    one run only, an incomplete run."""
    named = set(across)
    a_arms, b_arms = baseline.arms_by_name(), other.arms_by_name()
    where = "cannot compare %s with %s" % (other.source, baseline.source)
    common = [name for name in a_arms if name in b_arms]
    if not common:
        raise EvidenceError("%s: no arm in common (%s has %s; %s has %s)" % (
            where, baseline.source, listed(list(a_arms), 8) or "none", other.source, listed(list(b_arms), 8) or "none"))
    for name in common:
        a, b = a_arms[name], b_arms[name]
        for what, field in (("kind", "kind"), ("waiter state", "waiter"), ("scope", "scope")):
            a_value, b_value = getattr(a, field), getattr(b, field)
            if a_value != b_value:
                raise EvidenceError("%s: arm %s differs in %s (%s in %s, %s in %s): not the same experiment" % (
                    where, name, what, a_value, baseline.source, b_value, other.source))
    on_purpose: List[str] = []
    a_params, b_params = baseline.parameters, other.parameters
    for key, default, why, name in EXPERIMENT_PARAMETERS:
        if key == "interval_us" and not (a_params.open_loop and b_params.open_loop):
            continue  # the schedule period only matters when both runs are open-loop
        a_value, b_value = getattr(a_params, key), getattr(b_params, key)
        a_value, b_value = default if a_value is None else a_value, default if b_value is None else b_value
        if a_value != b_value:
            if name not in named:
                raise EvidenceError("%s: %s differs (%s vs %s): %s, or name it with --across %s to compare on purpose"
                                    % (where, key, a_value, b_value, why, name))
            on_purpose.append("%s %s vs %s" % (key, a_value, b_value))
    warnings: List[str] = []
    cpu_diffs = _differences(a_params, b_params, ("notifier_cpu", "waiter_cpu"))
    if cpu_diffs:
        if "placement" in named:
            on_purpose.extend(cpu_diffs)
        else:
            warnings.append("pinned to other CPUs (%s): differences include the CPUs" % "; ".join(cpu_diffs))
    a_cond, b_cond = baseline.conditions, other.conditions
    if a_cond.present and b_cond.present:
        on_purpose.extend(_condition_differences(a_cond.recorded, b_cond.recorded, named, where))
    elif a_cond.present != b_cond.present:
        warnings.append("only %s records its conditions: cannot check that the conditions match"
                        % (baseline.label if a_cond.present else other.label))
    a_int, b_int = baseline.interpreter, other.interpreter
    # As recorded, not as the model names an interpreter that does not say ("Python ?", not free-threaded).
    a_raw, b_raw = ({k: interp.as_recorded(k) for k in _INTERPRETER_KEYS} for interp in (a_int, b_int))
    if a_raw != b_raw:
        detail = "%s vs %s" % (a_int.label, b_int.label)
        if a_int.label == b_int.label:
            detail = "; ".join(_differences(a_raw, b_raw, _INTERPRETER_KEYS))
        if "interpreter" in named:
            on_purpose.append("interpreter %s" % detail)
        else:
            warnings.append("interpreters differ (%s): differences include the interpreter" % detail)
    machine_diffs = _differences(baseline.machine, other.machine, ("hostname", "cpu_model", "kernel"))
    if machine_diffs:
        warnings.append("machines differ (%s): differences include the machine" % "; ".join(machine_diffs))
    if baseline.tool_version != other.tool_version:
        warnings.append("wakelab versions differ (%s vs %s): check that the arms still time the same instants"
                        % (baseline.tool_version, other.tool_version))
    for run in (baseline, other):
        if not run.run_state.good:
            warnings.append("%s is not a complete run (%s)" % (run.label, run.run_state.reason))
    return warnings, on_purpose


def _condition_differences(a_cond: Mapping[str, object], b_cond: Mapping[str, object], named: Set[str],
                           where: str) -> List[str]:
    """The conditions two runs differ in, each named in ``named`` (EvidenceError for one that is not)."""
    keys = sorted(set(a_cond) | set(b_cond), key=str)
    differing = [k for k in keys if a_cond.get(k) != b_cond.get(k)]
    names = [across_name_of_condition(str(k)) for k in differing]
    parts = ["%s %s vs %s" % (k, compact(a_cond.get(k)), compact(b_cond.get(k))) for k in differing]
    unnamed = [n for n in names if n not in named]
    if unnamed:
        hint = ""
        if all(n is not None for n in unnamed):
            hint = " (name it with --across %s to compare on purpose)" % ",".join(dict.fromkeys(str(n) for n in unnamed))
        raise EvidenceError("%s: conditions differ (%s): not the same experiment%s" % (where, "; ".join(parts), hint))
    return parts


def compact(value: object) -> str:
    """A recorded value for a sentence: its JSON, cut at 60 characters (a string as it is)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":")) if not isinstance(value, str) else value
    return text if len(text) <= 60 else text[:57] + "..."
