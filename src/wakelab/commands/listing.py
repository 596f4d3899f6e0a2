"""``wakelab list``: every arm with its availability here, and the labs.

User-defined arms are listed beside the built-in ones: those of every
``--arm-file`` (loaded as ``wakelab run`` loads them, with the same one-line
errors) and those the installed packages offer in the ``wakelab.arms``
entry-point group.  An entry point that cannot be loaded does not fail the
listing: it is listed under "not loaded", with its one-line reason (``wakelab
run --arms NAME`` would refuse it with that line).

Availability is what can be known without importing an optional library (the
async libraries' arms: :data:`wakelab.core.families.asynclibs.LISTING_CHECKS`);
the full check runs where an arm is measured.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Dict, List, Optional

from wakelab.commands import EXIT_OK
from wakelab.commands._options import path_value
from wakelab.commands.run import ARM_FILE_AS_TEXT
from wakelab.evidence.model import ArmOrigin, ArmRecord

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


def _availability(arm: Any, user_defined: bool) -> Optional[str]:
    """None when ``arm`` can run here, else why not -- without importing an optional library.

    A family module's ``LISTING_CHECKS`` (arm name -> check) stands in for an
    arm's ``requires`` where that would import a library; the full check runs
    when the arm is measured.
    """
    import importlib

    from wakelab.core.registry import FAMILY_MODULES

    if not user_defined:
        module = importlib.import_module("wakelab.core.families." + FAMILY_MODULES[arm.family])
        check = getattr(module, "LISTING_CHECKS", {}).get(arm.name)
        if check is not None:
            reason: Optional[str] = check()
            return reason
    return arm.unavailable_reason()


def load_entry_point_arms() -> List[Dict[str, str]]:
    """Load every arm the installed packages offer in the ``wakelab.arms`` group (once per process);
    the ones that cannot be loaded, as ``{"name": ..., "error": one line}``."""
    from wakelab.core.registry import user_arm_origin
    from wakelab.core.user_arms import ArmFileError, entry_point_names, load_entry_point

    failed: List[Dict[str, str]] = []
    for name in entry_point_names():
        origin = user_arm_origin(name)
        if origin is not None and origin.get("source") == "entry-point":
            continue  # loaded already (a second listing in this process)
        try:
            load_entry_point(name)
        except ArmFileError as exc:
            failed.append({"name": name, "error": str(exc)})
    return failed


def listing(entry_points: bool = True) -> Dict[str, Any]:
    """Arms and labs as plain data (what ``wakelab list --json`` prints).

    Lists the arms registered so far (the built-in ones, and those of the arm
    files loaded already); ``entry_points`` loads the installed packages'
    arms first.  Each arm says whether it is ``user_defined`` and its
    ``source``: ``"built-in"``, ``"arm file PATH (sha256 PREFIX)"`` or
    ``"entry point NAME = MODULE:ATTR (DISTRIBUTION VERSION)"``.
    """
    from wakelab.core.registry import all_arms
    from wakelab.labs import all_labs, lab_arm_names
    from wakelab.report.text import origin_text

    not_loaded = load_entry_point_arms() if entry_points else []
    arms = []
    for arm in all_arms():
        entry = dict(arm.describe())
        user_defined = bool(entry.get("user_defined"))
        entry["user_defined"] = user_defined
        origin = entry.get("origin")
        entry["source"] = origin_text(origin if isinstance(origin, dict) else {}) if user_defined else BUILT_IN
        reason = _availability(arm, user_defined)
        entry["available"] = reason is None
        entry["reason"] = reason
        arms.append(entry)
    labs = [{"id": lab.id, "title": lab.title, "arms": lab_arm_names(lab), "aliases": list(lab.aliases)} for lab in all_labs()]
    return {"arms": arms, "labs": labs, "not_loaded": not_loaded}


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


def format_listing(data: Dict[str, Any]) -> str:
    from wakelab.labs import CUSTOM_ID
    from wakelab.report.text import format_arm_definitions, format_table, wrap

    arms: List[Dict[str, Any]] = data["arms"]
    header = ["arm", "family", "kind", "waiter", "scope", "available here"]
    rows = [
        [str(a["name"]), str(a["family"]), str(a["kind"]), str(a["waiter"]), str(a["scope"]),
         "yes" if a["available"] else "no: %s" % a["reason"]]
        for a in arms
    ]
    if any(a.get("user_defined") for a in arms):  # the column only when there is something to tell apart
        header.insert(5, "defined by")
        for row, a in zip(rows, arms):
            row.insert(5, _defined_by(ArmRecord.from_dict(a)))
    lines = ["ARMS"] + format_table(header, rows, align_left=len(header))
    lines += ["", "WHAT EACH ARM TIMES"] + format_arm_definitions(data)
    if data.get("not_loaded"):
        lines += ["", "NOT LOADED (entry points in the 'wakelab.arms' group)"]
        for failed in data["not_loaded"]:
            lines += wrap("%s -- %s" % (failed["name"], failed["error"]))
    lines += ["", "LABS"]
    for lab in data["labs"]:
        aliases = " (also: %s)" % ", ".join(lab["aliases"]) if lab["aliases"] else ""
        lines += wrap("%s%s -- %s: %s" % (lab["id"], aliases, lab["title"], ", ".join(lab["arms"])))
    lines += wrap("%s -- Custom selection: any other choice of arms (--arms A,B,...), a lab of its own" % CUSTOM_ID)
    return "\n".join(lines) + "\n"


def cmd_list(args: argparse.Namespace) -> int:
    from wakelab.commands.run import _load_user_arms
    from wakelab.formatting import escape_text

    _load_user_arms(args)  # as 'wakelab run --arm-file' loads them: a bad file is one line, exit status 2
    data = listing()
    # User-defined arms bring text of their own (paths, t0, errors): never raw to a terminal.
    sys.stdout.write(json.dumps(data, indent=2) + "\n" if args.json else escape_text(format_listing(data), multiline=True))
    return EXIT_OK
