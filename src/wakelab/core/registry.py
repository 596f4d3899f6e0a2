"""The arm registry: every wake experiment wakelab knows, one module per family.

A family is one module of :mod:`wakelab.core.families`: it declares the
family (``FAMILY``, a :class:`~wakelab.core.model.Family`: its id, title,
colour, report order, guidance group and whether user arms may join it) and
its arms (``ARMS``, a list of :class:`~wakelab.core.model.Arm`, each with its
own facts: C floor, ``t1`` shape, guidance roles).  The registry finds the
family modules by scanning the package (a module whose name starts with
``_`` is a helper, not a family) and derives every table the rest of
wakelab reads from their declarations: the families in report order and
their titles, colours and modules (:data:`FAMILIES`, :data:`FAMILY_TABLE`,
:data:`FAMILY_TITLES`, :data:`FAMILY_COLORS`, :data:`FAMILY_MODULES`), "vs
C" (:func:`floors`, :func:`t1_shapes`), the guidance's roles and groups
(:func:`arms_with_role`, :func:`declared_group`).  Adding an arm is adding
it to its family's ``ARMS`` (and a test); adding a family is adding a module.

The derived tables are computed on first use, so that importing the
registry imports no family module, and a worker that measures ``event``
imports only ``threads`` (:func:`find_arm`).

User-defined arms (:mod:`wakelab.core.user_arms`: ``--arm-file`` and the
``wakelab.arms`` entry points) are registered here too, beside the built-in
ones, once loaded: :func:`register_user_arm`.  They are looked up like any
other arm, and :func:`user_arm_origin` says where one came from (the worker
request carries it, so that the worker loads the same file first).
"""

from __future__ import annotations

import difflib
import functools
import importlib
import importlib.util
import pkgutil
from types import ModuleType
from typing import Callable, Dict, Generic, Iterable, Iterator, List, Mapping, Optional, Sequence, Sized, Tuple, TypeVar, Union, overload
from typing import TYPE_CHECKING

from wakelab.core.model import Arm, Family, Role, T1Shape

if TYPE_CHECKING:
    from wakelab.core.user_arms import UserArmOrigin  # which imports this module

#: The package whose modules are the families.
FAMILY_PACKAGE = "wakelab.core.families"

_T = TypeVar("_T")
_V = TypeVar("_V")
_D = TypeVar("_D", bound=Sized)


@functools.lru_cache(maxsize=None)
def _family_modules() -> Tuple[Tuple[Family, ModuleType], ...]:
    """Every family module with its declaration, in report order (imports them all, once)."""
    package = importlib.import_module(FAMILY_PACKAGE)
    found = []
    for info in pkgutil.iter_modules(package.__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(FAMILY_PACKAGE + "." + info.name)
        family = getattr(module, "FAMILY", None)
        if not isinstance(family, Family):
            raise RuntimeError("%s declares no FAMILY (a wakelab.core.model.Family); a helper module's name starts with _"
                               % module.__name__)
        found.append((family, module))
    found.sort(key=lambda pair: (pair[0].order, pair[0].id))
    for what in ("id", "order"):
        values = [getattr(family, what) for family, _ in found]
        if len(set(values)) != len(values):
            raise RuntimeError("two family modules declare the same %s: %s" % (what, sorted(values)))
    return tuple(found)


def families() -> Tuple[Family, ...]:
    """Every family, in report order."""
    return tuple(family for family, _ in _family_modules())


def get_family(family: str) -> Family:
    """The declaration of ``family`` (its id); :class:`UnknownArmError` if there is none."""
    for one in families():
        if one.id == family:
            return one
    raise UnknownArmError("unknown family %r" % (family,))


def family_module_names() -> List[str]:
    """The importable name of every family module (a worker template preloads them)."""
    return [module.__name__ for _, module in _family_modules()]


def _family_module(family: str) -> ModuleType:
    """The module that declares ``family``.  A module named after its family is imported alone, so that a
    worker measuring ``event`` imports no other family; any other family is found by the scan."""
    name = FAMILY_PACKAGE + "." + family
    try:
        spec = importlib.util.find_spec(name) if family.isidentifier() else None
    except (ImportError, ValueError):
        spec = None
    if spec is not None and not family.startswith("_"):
        module = importlib.import_module(name)
        declared = getattr(module, "FAMILY", None)
        if isinstance(declared, Family) and declared.id == family:
            return module
    for declared, module in _family_modules():
        if declared.id == family:
            return module
    raise UnknownArmError("unknown family %r" % (family,))


class _Lazy(Generic[_D]):
    """A value derived from the family modules on use (importing the registry imports none)."""

    def __init__(self, derive: Callable[[], _D]) -> None:
        self._derive = derive

    def __len__(self) -> int:
        return len(self._derive())

    def __repr__(self) -> str:
        return repr(self._derive())


class _Derived(_Lazy[Dict[str, _V]], Mapping[str, _V]):
    """A read-only mapping derived on use."""

    def __getitem__(self, key: str) -> _V:
        return self._derive()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._derive())


class _DerivedTuple(_Lazy[Tuple[_T, ...]], Sequence[_T]):
    """A read-only sequence derived on use; equal to the tuple it stands for."""

    @overload
    def __getitem__(self, index: int) -> _T: ...

    @overload
    def __getitem__(self, index: slice) -> Tuple[_T, ...]: ...

    def __getitem__(self, index: Union[int, slice]) -> Union[_T, Tuple[_T, ...]]:
        return self._derive()[index]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (tuple, list, _DerivedTuple)):
            return self._derive() == tuple(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


#: Family ids, in report order.
FAMILIES: Sequence[str] = _DerivedTuple(lambda: tuple(f.id for f in families()))
#: (family, its module in wakelab.core.families, title), in report order.
FAMILY_TABLE: Sequence[Tuple[str, str, str]] = _DerivedTuple(
    lambda: tuple((f.id, m.__name__.rpartition(".")[2], f.title) for f, m in _family_modules()))
#: Family -> its module's name in wakelab.core.families.
FAMILY_MODULES: Mapping[str, str] = _Derived(lambda: {f.id: m.__name__.rpartition(".")[2] for f, m in _family_modules()})
#: Family -> the title its rows are headed by in reports.
FAMILY_TITLES: Mapping[str, str] = _Derived(lambda: {f.id: f.title for f in families()})
#: Family -> its colour in the HTML report's charts.
FAMILY_COLORS: Mapping[str, str] = _Derived(lambda: {f.id: f.color for f in families()})


def user_arm_families() -> Tuple[str, ...]:
    """The families a user-defined arm may be listed under (``Family.user_arms``), in report order."""
    return tuple(f.id for f in families() if f.user_arms)


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
                         also: Iterable[str] = (), unknown: str = "unknown") -> str:
    """``unknown arm 'evnt' (did you mean 'event'?); valid: ...``, or ``unknown arm 'x' (valid: ...)``.

    The message for a name that is not one of ``valid``; ``what`` is ``"arm"`` or ``"lab"``.
    ``also`` are names suggested but not listed (a lab's aliases); ``unknown`` opens the message
    (``no recorded run has``).
    """
    valid = list(valid)
    suggestion = did_you_mean(name, valid + list(also))
    if suggestion:
        return "%s %s %r (%s); %s: %s" % (unknown, what, name, suggestion, valid_label, ", ".join(valid))
    return "%s %s %r (%s: %s)" % (unknown, what, name, valid_label, ", ".join(valid))


def _load_family(family: str) -> List[Arm]:
    module = _family_module(family)
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
    for family in families():
        for arm in _load_family(family.id):
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
    if arm.family not in FAMILIES:
        raise ValueError("unknown family %r" % (arm.family,))
    _USER_ARMS[arm.name] = arm


def user_arms() -> List[Arm]:
    """The user-defined arms loaded so far, in load order."""
    return list(_USER_ARMS.values())


def user_arm_origin(name: str) -> Optional["UserArmOrigin"]:
    """Where the user-defined arm ``name`` was loaded from (a worker request's ``user_arm``); None for a built-in arm."""
    return getattr(_USER_ARMS.get(name), "loaded_from", None)  # a UserArm's


def forget_user_arms() -> None:
    """Unregister every user-defined arm (tests that load arm files in process)."""
    _USER_ARMS.clear()


def find_arm(name: str, family: str) -> Arm:
    """The arm ``name`` of ``family``, importing only that family's module.

    Worker processes use this so that measuring ``event`` does not first
    import asyncio, multiprocessing and the native floor (a family whose
    module does not bear its name -- asyncio's, ``aio`` -- is found by the
    scan, which imports them all).  A user-defined arm is found once its
    file is loaded (:mod:`wakelab.core.user_arms`).
    """
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
    builtin = _builtin_arms()
    order = {family.id: family.order for family in families()}
    return sorted(builtin + list(_USER_ARMS.values()), key=lambda a: order[a.family])


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
    """Every built-in arm, in registry order (imports every family module)."""
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


def declared_group(name: str, family: str) -> Optional[str]:
    """The guidance group an arm declares: the built-in arm ``name``'s own (``Arm.group``), else its
    family's (``Family.group`` of ``family``); None where neither declares one or the family is not
    known here (an arm of an older bundle)."""
    _builtin_arms()
    arm = _REGISTRY.get(name)
    if arm is not None and arm.group is not None:
        return arm.group
    known = [one for one in families() if one.id == family]
    return known[0].group if known else None
