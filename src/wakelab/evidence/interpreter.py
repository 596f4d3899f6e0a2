"""The interpreter that measured a run (summary.json's ``interpreter``), and how every reader names it."""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping, Optional

from wakelab.evidence.bundle import Record, json_field, json_meta
from wakelab.evidence.words import FREE_THREADED, gil_word


@dataclasses.dataclass(frozen=True)
class Interpreter(Record):
    """The interpreter that measured a run (read with display defaults: see :meth:`as_recorded`)."""

    EMPTY_IS_ABSENT = True
    implementation: str = dataclasses.field(metadata=json_meta(read=str, absent="Python"))
    version: str = dataclasses.field(metadata=json_meta(read=str, absent="?"))
    executable: Optional[str] = None
    free_threaded_build: bool = False
    gil_enabled: Optional[bool] = None
    python_gil_env: Optional[str] = None
    #: PyPy's 7.3.11; the Python version on CPython; None in evidence from before wakelab recorded it.
    implementation_version: Optional[str] = json_field(read=lambda value: None if value is None else str(value), default=None)
    build: Any = None
    compiler: Any = None
    switch_interval_s: Any = None
    debug_build: Any = None  # --with-pydebug
    recorded: Mapping[str, object] = json_field("", default_factory=dict, repr=False, compare=False)

    def as_recorded(self, field: str) -> Any:
        """Field ``field`` (KeyError: not one) as the evidence stored it, None where it does not say: for the readers that
        keep what was recorded (the history) where the model reads with a display default (``version`` "?" ...)."""
        if field not in _FIELDS:
            raise KeyError(field)
        return self.recorded.get(field)

    @property
    def release(self) -> str:
        """``3.13`` (a free-threaded ``3.13t`` too); ``""`` when it does not say its version."""
        version = self.as_recorded("version")
        return ".".join(str(version).split(".")[:2]).rstrip("t") if version else ""

    @property
    def own_version(self) -> Optional[str]:
        """The implementation's own version where it is not the Python version (PyPy's 7.3.11); None on CPython."""
        own = self.implementation_version
        return own if own and self.implementation != "CPython" and own != self.version else None

    @property
    def name(self) -> str:
        """``CPython 3.13.0``, or ``PyPy 3.9.16 (7.3.11)`` where the implementation has a version of its own."""
        text = "%s %s" % (self.implementation, self.version)
        return text if self.own_version is None else "%s (%s)" % (text, self.own_version)

    @property
    def label(self) -> str:
        """How every reader names the interpreter: :attr:`name`, then the build and the GIL where they matter:
        ``CPython 3.13.5 free-threaded (GIL on)``; ``(GIL off)`` on any other build that ran without it."""
        text = self.name
        if self.free_threaded_build:
            text += " " + FREE_THREADED
            if self.gil_enabled is not None:
                text += " (%s)" % gil_word(self.gil_enabled)
        elif self.gil_enabled is False:
            text += " (%s)" % gil_word(False)
        return text

    @property
    def gil_word(self) -> str:
        return gil_word(self.gil_enabled)


_FIELDS = frozenset(f.name for f in dataclasses.fields(Interpreter)) - {"recorded"}
