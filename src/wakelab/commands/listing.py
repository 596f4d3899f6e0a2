"""``wakelab list``: every arm with its availability here, and the labs."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Dict, List

from wakelab.commands import EXIT_OK


def register(sub: Any) -> None:
    lister = sub.add_parser("list", help="list arms (with availability here) and labs",
                            description="List every arm with its family, waiter state, scope, availability on this machine, and what t0 and t1 are; then the labs.")
    lister.add_argument("--json", action="store_true", help="print the listing as JSON")
    lister.set_defaults(handler=cmd_list)


def listing() -> Dict[str, Any]:
    """Arms and labs as plain data (what ``wakelab list --json`` prints)."""
    from wakelab.core.registry import all_arms
    from wakelab.labs import all_labs, lab_arm_names

    arms = []
    for arm in all_arms():
        entry = dict(arm.describe())
        reason = arm.unavailable_reason()
        entry["available"] = reason is None
        entry["reason"] = reason
        arms.append(entry)
    labs = [{"id": lab.id, "title": lab.title, "arms": lab_arm_names(lab), "aliases": list(lab.aliases)} for lab in all_labs()]
    return {"arms": arms, "labs": labs}


def format_listing(data: Dict[str, Any]) -> str:
    from wakelab.labs import CUSTOM_ID
    from wakelab.report.text import format_arm_definitions, format_table, wrap

    arms: List[Dict[str, Any]] = data["arms"]
    rows = [
        [str(a["name"]), str(a["family"]), str(a["kind"]), str(a["waiter"]), str(a["scope"]),
         "yes" if a["available"] else "no: %s" % a["reason"]]
        for a in arms
    ]
    lines = ["ARMS"] + format_table(["arm", "family", "kind", "waiter", "scope", "available here"], rows, align_left=6)
    lines += ["", "WHAT EACH ARM TIMES"] + format_arm_definitions(data)
    lines += ["", "LABS"]
    for lab in data["labs"]:
        aliases = " (also: %s)" % ", ".join(lab["aliases"]) if lab["aliases"] else ""
        lines += wrap("%s%s -- %s: %s" % (lab["id"], aliases, lab["title"], ", ".join(lab["arms"])))
    lines += wrap("%s -- Custom selection: any other choice of arms (--arms A,B,...), a lab of its own" % CUSTOM_ID)
    return "\n".join(lines) + "\n"


def cmd_list(args: argparse.Namespace) -> int:
    data = listing()
    sys.stdout.write(json.dumps(data, indent=2) + "\n" if args.json else format_listing(data))
    return EXIT_OK
