"""``wakelab list``: every arm with its availability here, and the labs.

User-defined arms are listed beside the built-in ones: those of every ``--arm-file`` (loaded as ``wakelab run`` loads
them, with the same one-line errors) and those the installed packages offer in the ``wakelab.arms`` entry-point group.
An entry point that cannot be loaded does not fail the listing: it is listed under "not loaded", with its one-line
reason (``wakelab run --arms NAME`` would refuse it with that line).

Availability is what can be known without importing an optional library (the async libraries' arms:
:data:`wakelab.core.families.asynclibs.LISTING_CHECKS`); the full check runs where an arm is measured.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import Any, Dict, List, Optional, Tuple, TYPE_CHECKING

from wakelab.commands import EXIT_OK
from wakelab.commands._options import path_value
from wakelab.commands.run import ARM_FILE_AS_TEXT
from wakelab.evidence.model import ArmOrigin, ArmRecord

if TYPE_CHECKING:
    from wakelab.core.model import Arm
    from wakelab.labs import Lab

#: The ``source`` of a built-in arm in ``wakelab list --json``.
BUILT_IN = "built-in"


def register(sub: Any) -> None:
    lister = sub.add_parser("list", help="list arms (with availability here) and labs",
                            description="List every arm with its family, waiter state, scope, availability on this machine, "
                                        "and what t0 and t1 are; then the labs. User-defined arms are listed too, marked "
                                        "with where they come from: each --arm-file, and the installed packages' "
                                        "'wakelab.arms' entry points.")
    lister.add_argument("--json", action="store_true", help="print the listing as JSON")
    lister.add_argument("--arm-file", action="append", metavar="PATH", type=path_value("a Python file", ARM_FILE_AS_TEXT),
                        help="list the arms of this Python file too, as 'wakelab run --arm-file' loads them (repeatable)")
    lister.set_defaults(handler=cmd_list)


def _availability(arm: Arm, user_defined: bool) -> Optional[str]:
    """None when ``arm`` can run here, else why not: a family's ``LISTING_CHECKS`` (see the module docstring), else the arm's own."""
    import importlib

    from wakelab.core.registry import FAMILY_MODULES

    if not user_defined:
        module = importlib.import_module("wakelab.core.families." + FAMILY_MODULES[arm.family])
        check = getattr(module, "LISTING_CHECKS", {}).get(arm.name)
        if check is not None:
            reason: Optional[str] = check()
            return reason
    return arm.unavailable_reason()


@dataclasses.dataclass(frozen=True)
class Listing:
    """Arms and labs as ``wakelab list`` shows them: each arm's record with why it cannot run here (None:
    it can), the labs, and the entry points that could not be loaded ((name, one line) each)."""

    arms: Tuple[Tuple[ArmRecord, Optional[str]], ...]
    labs: Tuple[Lab, ...]
    not_loaded: Tuple[Tuple[str, str], ...]

    def to_dict(self) -> Dict[str, object]:
        """What ``wakelab list --json`` prints: each arm's ``source`` is ``"built-in"``, ``"arm file PATH (sha256 PREFIX)"``
        or ``"entry point NAME = MODULE:ATTR (DISTRIBUTION VERSION)"``."""
        from wakelab.labs import lab_arm_names

        labs = [{"id": lab.id, "title": lab.title, "arms": lab_arm_names(lab), "aliases": list(lab.aliases)} for lab in self.labs]
        return {"arms": [dict(arm.entry) for arm, _ in self.arms], "labs": labs, "not_loaded": [{"name": n, "error": e} for n, e in self.not_loaded]}


def list_arms() -> Listing:
    """The arms registered so far (the built-in ones, and those of the arm files loaded already), after loading every
    arm the installed packages offer in the ``wakelab.arms`` group (once per process: a second listing finds them)."""
    from wakelab.core.registry import all_arms, user_arms
    from wakelab.core.user_arms import ENTRY_POINT, ArmFileError, UserArm, entry_point_names, load_entry_point
    from wakelab.labs import all_labs
    from wakelab.report.text import origin_text

    loaded = {arm.name for arm in user_arms() if isinstance(arm, UserArm) and arm.loaded_from.source == ENTRY_POINT}
    not_loaded: List[Tuple[str, str]] = []
    for name in [name for name in entry_point_names() if name not in loaded]:
        try:
            load_entry_point(name)
        except ArmFileError as exc:
            not_loaded.append((name, str(exc)))
    arms = []
    for arm in all_arms():
        loaded_from = arm.loaded_from if isinstance(arm, UserArm) else None
        reason = _availability(arm, loaded_from is not None)
        source = BUILT_IN if loaded_from is None else origin_text(ArmOrigin.from_dict(loaded_from.to_dict()))
        entry = dict(arm.describe(), user_defined=loaded_from is not None, source=source, available=reason is None, reason=reason)
        arms.append((ArmRecord.from_dict(entry), reason))
    return Listing(tuple(arms), tuple(all_labs()), tuple(not_loaded))


def _defined_by(arm: ArmRecord) -> str:
    """The table's short "defined by" cell: ``user: arms.py sha256 1a87ee44`` or ``user: entry point (dist 1.0)``."""
    import os

    if not arm.user_defined:
        return BUILT_IN
    origin = arm.origin or ArmOrigin()
    if origin.from_file:
        return "user: %s sha256 %s" % (os.path.basename(str(origin.path)), str(origin.sha256)[:8])
    dist = " (%s %s)" % (origin.distribution, origin.version) if origin.distribution else ""
    return "user: entry point%s" % dist


def format_listing(found: Listing) -> str:
    from wakelab.labs import CUSTOM_ID, lab_arm_names
    from wakelab.report.text import arm_definitions, format_table, wrap

    header = ["arm", "family", "kind", "waiter", "scope", "available here"]
    rows = [[a.name, a.family, a.kind, a.waiter, a.scope, "yes" if reason is None else "no: %s" % reason] for a, reason in found.arms]
    if any(a.user_defined for a, _ in found.arms):  # the column only when there is something to tell apart
        header.insert(5, "defined by")
        for row, (a, _) in zip(rows, found.arms):
            row.insert(5, _defined_by(a))
    lines = ["ARMS"] + format_table(header, rows, align_left=len(header))
    lines += ["", "WHAT EACH ARM TIMES"] + arm_definitions([a for a, _ in found.arms])
    if found.not_loaded:
        lines += ["", "NOT LOADED (entry points in the 'wakelab.arms' group)"]
        for name, error in found.not_loaded:
            lines += wrap("%s -- %s" % (name, error))
    lines += ["", "LABS"]
    for lab in found.labs:
        aliases = " (also: %s)" % ", ".join(lab.aliases) if lab.aliases else ""
        lines += wrap("%s%s -- %s: %s" % (lab.id, aliases, lab.title, ", ".join(lab_arm_names(lab))))
    lines += wrap("%s -- Custom selection: any other choice of arms (--arms A,B,...), a lab of its own" % CUSTOM_ID)
    return "\n".join(lines) + "\n"


def cmd_list(args: argparse.Namespace) -> int:
    from wakelab.commands.run import _load_user_arms
    from wakelab.formatting import escape_text

    _load_user_arms(args)  # as 'wakelab run --arm-file' loads them: a bad file is one line, exit status 2
    found = list_arms()
    # User-defined arms bring text of their own (paths, t0, errors): never raw to a terminal.
    sys.stdout.write(json.dumps(found.to_dict(), indent=2) + "\n" if args.json else escape_text(format_listing(found), multiline=True))
    return EXIT_OK
