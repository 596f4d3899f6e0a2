"""The arm registry: every wake experiment wakelab knows, one module per family.

Each family module exposes ``ARMS``, a list of :class:`~wakelab.core.model.Arm`.
Adding an arm means adding it to its family's ``ARMS`` (and a test); the
registry, ``wakelab list`` and the labs pick it up from there.

User-defined arms (:mod:`wakelab.core.user_arms`: ``--arm-file`` and the
``wakelab.arms`` entry points) are registered here too, beside the built-in
ones, once loaded: :func:`register_user_arm`.  They are looked up like any
other arm, and :func:`user_arm_origin` says where one came from (the worker
request carries it, so that the worker loads the same file first).
"""

from __future__ import annotations

import difflib
import importlib
from typing import Dict, Iterable, List, Optional, Tuple

from wakelab.core.model import FAMILIES, Arm, Role, T1Shape

# (family, module in wakelab.core.families, title), in report order.
FAMILY_TABLE = (
    ("threads", "threads", "Threads"),
    ("signals", "signals", "Signals"),
    ("fds", "fds", "File descriptors"),
    ("asyncio", "aio", "asyncio"),
    ("asynclibs", "asynclibs", "Async libraries (optional)"),
    ("processes", "processes", "Processes"),
    ("handoff", "handoff", "Hand-offs: subinterpreters and executors"),
    ("storms", "storms", "Signal storms: many senders, one receiver"),
    ("native", "native", "Native floor (C)"),
)
if tuple(family for family, _, _ in FAMILY_TABLE) != FAMILIES:
    raise RuntimeError("FAMILY_TABLE and core.model.FAMILIES disagree")

FAMILY_MODULES = {family: module for family, module, _ in FAMILY_TABLE}
FAMILY_TITLES = {family: title for family, _, title in FAMILY_TABLE}


def family_module_names() -> List[str]:
    """The importable name of every family module (a worker template preloads them)."""
    return ["wakelab.core.families." + module for _, module, _ in FAMILY_TABLE]


class UnknownArmError(LookupError):
    """An arm name that is not in the registry."""


def closest_match(name: str, choices: Iterable[str], ignore_prefix: str = "") -> Optional[str]:
    """The one of ``choices`` that ``name`` most looks like a mistyping of, or None if none is close.

    Case is ignored, and so is ``ignore_prefix`` (``"--"`` for options) on both sides.
    """
    def fold(text: str) -> str:
        if ignore_prefix and text.startswith(ignore_prefix):
            text = text[len(ignore_prefix):]
        return text.casefold()

    by_folded: Dict[str, str] = {}
    for choice in choices:
        by_folded.setdefault(fold(choice), choice)
    matches = difflib.get_close_matches(fold(name), list(by_folded), n=1, cutoff=0.6)
    return by_folded[matches[0]] if matches else None


def did_you_mean(name: str, choices: Iterable[str], ignore_prefix: str = "") -> str:
    """``"did you mean 'event'?"`` for the choice closest to ``name`` (:func:`closest_match`); ``""`` if none is."""
    match = closest_match(name, choices, ignore_prefix)
    return "" if match is None else "did you mean %r?" % match


def unknown_name_message(what: str, name: str, valid: Iterable[str], valid_label: str = "valid",
                         also: Iterable[str] = ()) -> str:
    """``unknown arm 'evnt' (did you mean 'event'?); valid: ...``, or ``unknown arm 'x' (valid: ...)``.

    The message for a name that is not one of ``valid``; ``what`` is ``"arm"`` or ``"lab"``.
    ``also`` are names suggested but not listed (a lab's aliases).
    """
    valid = list(valid)
    suggestion = did_you_mean(name, valid + list(also))
    if suggestion:
        return "unknown %s %r (%s); %s: %s" % (what, name, suggestion, valid_label, ", ".join(valid))
    return "unknown %s %r (%s: %s)" % (what, name, valid_label, ", ".join(valid))


def _load_family(family: str) -> List[Arm]:
    module = importlib.import_module("wakelab.core.families." + FAMILY_MODULES[family])
    arms = []
    for arm in module.ARMS:
        if arm.family != family:
            raise RuntimeError("arm %s is in module %s but declares family %s" % (arm.name, module.__name__, arm.family))
        if (arm.native is None) != (arm.native_match is None):
            raise RuntimeError("arm %s declares a C floor without how it relates (native and native_match go together)" % arm.name)
        arms.append(arm)
    return arms


def _load() -> Dict[str, Arm]:
    arms: Dict[str, Arm] = {}
    for family in FAMILIES:
        for arm in _load_family(family):
            if arm.name in arms:
                raise RuntimeError("duplicate arm name: " + arm.name)
            arms[arm.name] = arm
    return arms


_REGISTRY: Dict[str, Arm] = {}
# User-defined arms, in the order they were loaded (see wakelab.core.user_arms).
_USER_ARMS: Dict[str, Arm] = {}


def builtin_arm_names() -> List[str]:
    """The name of every built-in arm (imports every family module)."""
    return [arm.name for arm in _builtin_arms()]


def register_user_arm(arm: Arm) -> None:
    """Add a user-defined arm to the registry; ValueError for a name already taken."""
    if arm.name in _USER_ARMS:
        raise ValueError("an arm called %r is already loaded" % arm.name)
    if arm.family not in FAMILY_MODULES:
        raise ValueError("unknown family %r" % (arm.family,))
    _USER_ARMS[arm.name] = arm


def user_arms() -> List[Arm]:
    """The user-defined arms loaded so far, in load order."""
    return list(_USER_ARMS.values())


def user_arm_origin(name: str) -> Optional[Dict[str, object]]:
    """Where the user-defined arm ``name`` came from (its ``origin``), None for a built-in arm."""
    arm = _USER_ARMS.get(name)
    origin = getattr(arm, "origin", None) if arm is not None else None
    return dict(origin) if isinstance(origin, dict) else None


def forget_user_arms() -> None:
    """Unregister every user-defined arm (tests that load arm files in process)."""
    _USER_ARMS.clear()


def find_arm(name: str, family: str) -> Arm:
    """The arm ``name`` of ``family``, importing only that family's module.

    Worker processes use this so that measuring ``event`` does not first
    import asyncio, multiprocessing and the native floor.  A user-defined arm
    is found once its file is loaded (:mod:`wakelab.core.user_arms`).
    """
    if family not in FAMILY_MODULES:
        raise UnknownArmError("unknown family %r" % (family,))
    user = _USER_ARMS.get(name)
    if user is not None and user.family == family:
        return user
    for arm in _load_family(family):
        if arm.name == name:
            return arm
    raise UnknownArmError("no arm %r in family %s" % (name, family))


def all_arms() -> List[Arm]:
    """Every registered arm, grouped by family in report order (user-defined arms after the
    built-in ones of their family)."""
    if not _REGISTRY:
        _REGISTRY.update(_load())
    order = {family: i for i, family in enumerate(FAMILIES)}
    return sorted(list(_REGISTRY.values()) + list(_USER_ARMS.values()), key=lambda a: order[a.family])


def arm_names() -> List[str]:
    return [arm.name for arm in all_arms()]


def get_arm(name: str) -> Arm:
    """The arm called ``name``; :class:`UnknownArmError` names the valid ones."""
    user = _USER_ARMS.get(name)
    if user is not None:
        return user
    all_arms()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UnknownArmError(unknown_name_message("arm", name, arm_names())) from None


# -- tables derived from the arms' declarations -------------------------------------------------


def _builtin_arms() -> List[Arm]:
    if not _REGISTRY:
        _REGISTRY.update(_load())
    return list(_REGISTRY.values())


def floors() -> Dict[str, Tuple[str, str]]:
    """The "vs C" table: built-in Python arm -> (its C floor, ``matched`` or ``nearest``), as each arm declares it."""
    return {arm.name: (arm.native, arm.native_match) for arm in _builtin_arms()
            if arm.native is not None and arm.native_match is not None}


def t1_shapes() -> Dict[str, T1Shape]:
    """Every built-in arm's declared :class:`~wakelab.core.model.T1Shape` (the arms on either side of a "vs C" pairing)."""
    return {arm.name: arm.t1_shape for arm in _builtin_arms() if arm.t1_shape is not None}


def arms_with_role(role: str) -> List[Tuple[str, Role]]:
    """(arm name, its :class:`~wakelab.core.model.Role`) of every built-in arm that declares ``role``, in
    registry order (families in report order, arms in their family's order)."""
    return [(arm.name, one) for arm in _builtin_arms() for one in arm.roles if one.name == role]
