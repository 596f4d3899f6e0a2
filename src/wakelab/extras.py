"""Optional dependencies: which extra of the ``wakelab`` package brings which library.

``pip install wakelab`` (or ``pip install -e .`` in a clone) installs what ``wakelab run``
needs to measure and to write its text and JSON evidence, and what ``show``, ``export``
(csv, samples-csv, markdown, json), ``history``, ``check``, ``list`` and ``interpreters``
need: the standard library, jsonschema (the validating loader) and rich (the live progress
display).  The heavier libraries come with an extra, for the commands that use them:

========  ===============  ==============================================================
extra     brings           for
========  ===============  ==============================================================
compare   numpy, scipy     ``wakelab compare``: the two-level bootstrap, Mann-Whitney U
report    plotly           ``wakelab report``: plotly.js, inlined in the page
pyperf    pyperf           ``wakelab export -f pyperf``: pyperf's own suite writer
all       all of the above
========  ===============  ==============================================================

A command that needs an extra calls :func:`require` before it loads anything, and a
missing library is one :class:`~wakelab.errors.UsageError` line naming the install
command (exit status 2), never a traceback half-way through.  ``pyproject.toml`` lists the
same extras; ``tests/test_extras.py`` checks that the two agree.
"""

from __future__ import annotations

from typing import Dict, List, Tuple

from wakelab.errors import UsageError

# Extra -> the importable modules it brings, as pyproject.toml's [project.optional-dependencies].
EXTRAS: Dict[str, Tuple[str, ...]] = {
    "compare": ("numpy", "scipy"),
    "report": ("plotly",),
    "pyperf": ("pyperf",),
}


class ExtraMissing(UsageError):
    """A command needs a library of an extra that is not installed (exit status 2)."""


def install_command(extra: str) -> str:
    """How to install ``extra``: from the index, or into a clone's editable install."""
    return "pip install 'wakelab[%s]' (in a clone: pip install -e '.[%s]')" % (extra, extra)


def missing(extra: str) -> List[str]:
    """The modules of ``extra`` that cannot be imported here (found, not imported: nothing is loaded)."""
    import importlib.util

    absent = []
    for name in EXTRAS[extra]:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):  # a parent package missing; a module set to None in sys.modules
            found = False
        if not found:
            absent.append(name)
    return absent


def require(extra: str, needed_by: str) -> None:
    """Raise :class:`ExtraMissing` unless every library of ``extra`` is installed.

    ``needed_by`` names what needs it (``wakelab report``), the start of the message.
    """
    absent = missing(extra)
    if absent:
        raise ExtraMissing("%s needs %s, which %s not installed: %s"
                           % (needed_by, " and ".join(absent), "is" if len(absent) == 1 else "are", install_command(extra)))
