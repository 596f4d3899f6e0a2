"""The arm registry: every wake experiment wakelab knows, one module per family.

Each family module exposes ``ARMS``, a list of :class:`~wakelab.arms.base.Arm`.
Adding an arm means adding it to its family's ``ARMS`` (and a test); the
registry, ``wakelab list`` and the labs pick it up from there.
"""

from __future__ import annotations

import importlib
from typing import Dict, List

from wakelab.arms.base import FAMILIES, Arm

# Family modules, in report order. Each module defines ARMS.
_FAMILY_MODULES = ("threads", "signals", "fds", "aio", "processes", "native")


class UnknownArmError(LookupError):
    """An arm name that is not in the registry."""


def _load() -> Dict[str, Arm]:
    arms: Dict[str, Arm] = {}
    for module_name in _FAMILY_MODULES:
        module = importlib.import_module("wakelab.arms." + module_name)
        for arm in module.ARMS:
            if arm.name in arms:
                raise RuntimeError("duplicate arm name: " + arm.name)
            if arm.family not in FAMILIES:
                raise RuntimeError("arm %s has unknown family %s" % (arm.name, arm.family))
            arms[arm.name] = arm
    return arms


_REGISTRY: Dict[str, Arm] = {}


def all_arms() -> List[Arm]:
    """Every registered arm, grouped by family in report order."""
    if not _REGISTRY:
        _REGISTRY.update(_load())
    order = {family: i for i, family in enumerate(FAMILIES)}
    return sorted(_REGISTRY.values(), key=lambda a: order[a.family])


def arm_names() -> List[str]:
    return [arm.name for arm in all_arms()]


def get_arm(name: str) -> Arm:
    """The arm called ``name``; :class:`UnknownArmError` names the valid ones."""
    all_arms()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UnknownArmError(
            "unknown arm %r (valid: %s)" % (name, ", ".join(arm_names()))
        ) from None
