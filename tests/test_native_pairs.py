"""Every "vs C" pairing is what it claims: checked from the arms' declarations, not from prose.

Each Python arm with a C floor declares it (``Arm.native``) and how the two relate
(``Arm.native_match``): "matched" or "nearest".  A ratio to the C floor is the interpreter's share
only for a matched pair, so a matched pair must agree on every declared dimension of the experiment:

* ``kind`` (latency or rate);
* ``scope`` (self / cross-thread / cross-process) and ``waiter`` state (from the Arm);
* the t1 shape -- which wait ``t1`` follows and where it is taken (after the wait, after the
  read, in the handler, in a loop callback) -- ``Arm.t1_shape``, declared by both sides.

A "nearest" pair must differ in at least one of them (else it is a matched pair that under-claims).
The registry's tables (``registry.floors()``, ``registry.t1_shapes()``, also ``native.FLOORS`` and
``native.T1_SHAPES``) are derived from the declarations and checked to be exactly them.
"""

from __future__ import annotations

from typing import Dict, List, Tuple

import pytest

from wakelab.core import registry
from wakelab.core.families import native
from wakelab.core.model import LATENCY, T1_POINTS, Arm
from wakelab.core.registry import all_arms, get_arm

ARMS: Dict[str, Arm] = {arm.name: arm for arm in all_arms()}
PAIRED = [arm for arm in all_arms() if arm.native is not None]
# The pairings as the arms declare them: Python arm -> (its C floor, how the two relate).
DECLARED: Dict[str, Tuple[str, str]] = {arm.name: (str(arm.native), str(arm.native_match)) for arm in PAIRED}


def pairing_problems(python_name: str, c_name: str, match: str) -> List[str]:
    """What is wrong with pairing ``python_name`` with ``c_name`` as ``match`` (empty: nothing)."""
    if python_name not in ARMS:
        return ["%s is not an arm" % python_name]
    if c_name not in ARMS:
        return ["%s is not an arm" % c_name]
    py, c = ARMS[python_name], ARMS[c_name]
    problems = []
    if py.family == native.FAMILY.id:
        problems.append("%s is itself a C arm" % py.name)
    if c.family != native.FAMILY.id:
        problems.append("%s is not a C arm" % c.name)
    if match not in (native.MATCHED, native.NEAREST):
        problems.append("%s: unknown match %r" % (py.name, match))
    if problems:
        return problems
    differences = _differences(py, c)
    if py.kind != c.kind:
        problems.append("%s is a %s arm, %s a %s arm: no ratio" % (py.name, py.kind, c.name, c.kind))
    elif match == native.MATCHED and differences:
        problems.append("%s marked matched to %s but differs in %s" % (py.name, c.name, "; ".join(differences)))
    elif match == native.NEAREST and not differences:
        problems.append("%s marked nearest to %s but agrees in scope, waiter and t1: it is matched" % (py.name, c.name))
    return problems


def _differences(py: Arm, c: Arm) -> List[str]:
    found = []
    if py.scope != c.scope:
        found.append("scope %s vs %s" % (py.scope, c.scope))
    if py.waiter != c.waiter:
        found.append("waiter %s vs %s" % (py.waiter, c.waiter))
    if py.kind == LATENCY:
        a, b = py.t1_shape, c.t1_shape
        assert a is not None and b is not None, "%s or %s declares no t1 shape" % (py.name, c.name)
        if a.wait != b.wait:
            found.append("t1 follows %s vs %s" % (a.wait, b.wait))
        if a.point != b.point:
            found.append("t1 %s vs %s" % (a.point, b.point))
    return found


def table_problems(floors: Dict[str, Tuple[str, str]]) -> List[str]:
    problems: List[str] = []
    for python_name, (c_name, match) in floors.items():
        problems.extend(pairing_problems(python_name, c_name, match))
    return problems


# -- the real declarations ------------------------------------------------------


@pytest.mark.parametrize("python_name", sorted(DECLARED))
def test_each_pairing_is_what_it_claims(python_name: str) -> None:
    c_name, match = DECLARED[python_name]
    assert pairing_problems(python_name, c_name, match) == []


def test_a_floor_is_declared_with_how_it_relates() -> None:
    assert PAIRED, "no arm has a C floor"
    for arm in all_arms():
        assert (arm.native is None) == (arm.native_match is None), arm.name
        assert arm.native_match in (None, native.MATCHED, native.NEAREST), arm.name
        if arm.family == native.FAMILY.id:
            assert arm.native is None, "%s: a C arm has no floor of its own" % arm.name


def test_the_tables_are_the_declarations() -> None:
    # Derived, never kept beside the arms: what the registry (and native.FLOORS / T1_SHAPES) hands out
    # is exactly what the arms declare, every declared floor is a registered arm, and the registry
    # hands the arms out as declared.
    assert registry.floors() == DECLARED == native.FLOORS
    shapes = {arm.name: arm.t1_shape for arm in all_arms() if arm.t1_shape is not None}
    assert registry.t1_shapes() == shapes == native.T1_SHAPES
    assert {c for c, _ in DECLARED.values()} <= set(ARMS)
    module_arms = {arm.name: arm for arm in native.ARMS}
    assert all(ARMS[name] is arm for name, arm in module_arms.items())


def test_every_latency_arm_on_either_side_declares_its_t1_shape() -> None:
    sides = {arm.name for arm in PAIRED if arm.kind == LATENCY}
    sides |= {arm.name for arm in native.ARMS if arm.kind == LATENCY}
    missing = sorted(name for name in sides if ARMS[name].t1_shape is None)
    assert missing == []
    for arm in all_arms():
        if arm.t1_shape is not None:
            assert arm.kind == LATENCY, arm.name
            assert arm.t1_shape.point in T1_POINTS, arm.name
            assert arm.t1_shape.wait, arm.name


def test_every_c_latency_arm_is_some_python_arms_match() -> None:
    # A C experiment nobody is matched to is dead weight, or a pairing someone forgot.
    matched = {c for c, match in DECLARED.values() if match == native.MATCHED}
    c_arms = {arm.name for arm in native.ARMS if arm.kind == LATENCY}
    assert c_arms - matched == set()


def test_nearest_pairings_are_few_and_named() -> None:
    nearest = sorted(name for name, (_, match) in DECLARED.items() if match == native.NEAREST)
    assert nearest == ["anyio-asyncio-run-sync", "anyio-trio-run-sync", "asyncio-event", "call-soon-threadsafe",
                       "gevent-async-watcher", "interp-pool-submit", "interp-queue", "process-pool-submit",
                       "thread-pool-submit", "trio-token-event", "uvloop-call-soon-threadsafe"]


def test_the_registry_hands_out_the_declaration() -> None:
    arm = get_arm("socketpair")
    assert (arm.native, arm.native_match) == ("native-socketpair", native.MATCHED)
    assert arm.t1_shape == native.T1Shape("poll", native.AFTER_READ)


# -- the check itself catches wrong claims --------------------------------------------


@pytest.mark.parametrize(
    ("python_name", "c_name", "why"),
    [
        ("socketpair", "native-pipe", "t1 after-read vs after-wait"),  # t1 after the read vs before it
        ("selector-pipe", "native-pipe", "t1 follows epoll vs poll"),
        ("pause-handler", "native-sigwait", "t1 follows pause vs sigtimedwait"),
        ("wakeup-fd-select", "native-sigwait", "t1 follows select vs sigtimedwait"),
        ("kill-sigwait-child", "native-sigwait", "scope cross-process vs cross-thread"),
        ("pipe-process", "native-pipe", "scope cross-process vs cross-thread"),
        ("eventfd-fork", "native-eventfd", "scope cross-process vs cross-thread"),
        ("call-soon-threadsafe", "native-selector-pipe", "t1 callback vs after-wait"),
        ("sigusr1-self", "native-pause-handler", "waiter spinning vs blocked"),
    ],
)
def test_a_wrong_matched_claim_is_caught(python_name: str, c_name: str, why: str) -> None:
    problems = pairing_problems(python_name, c_name, native.MATCHED)
    assert len(problems) == 1
    assert why in problems[0]


def test_the_table_check_finds_a_wrong_entry() -> None:
    assert table_problems(DECLARED) == []
    wrong = dict(DECLARED, socketpair=("native-pipe", native.MATCHED))
    assert table_problems(wrong) == [
        "socketpair marked matched to native-pipe but differs in t1 after-read vs after-wait"
    ]


def test_a_nearest_claim_for_a_true_match_is_caught() -> None:
    problems = pairing_problems("socketpair", "native-socketpair", native.NEAREST)
    assert problems == ["socketpair marked nearest to native-socketpair but agrees in scope, waiter and t1: it is matched"]


def test_a_ratio_between_kinds_is_caught() -> None:
    problems = pairing_problems("signal-install", "native-self-signal", native.MATCHED)
    assert problems and "no ratio" in problems[0]


def test_a_pairing_with_a_python_arm_as_floor_is_caught() -> None:
    assert pairing_problems("event", "condition", native.MATCHED) == ["condition is not a C arm"]
