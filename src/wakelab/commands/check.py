"""``wakelab check``: what on this machine will make the numbers noisy, and how to fix it."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import Any

from wakelab.commands import EXIT_OK


def register(sub: Any) -> None:
    parser = sub.add_parser("check", help="show what on this machine will make results noisy, and how to fix it (changes nothing)",
                            description="Inspect load, idle states, frequency scaling, CPU isolation, the clocksource, the timer floor "
                                        "and virtualization, and say how each affects wake latency and how to fix it. Reads only.")
    parser.add_argument("--json", action="store_true", help="print the facts and findings as JSON")
    parser.set_defaults(handler=cmd_check)


def cmd_check(args: argparse.Namespace) -> int:
    from wakelab.harness.check import evaluate, format_findings, gather_facts

    facts = gather_facts()
    findings = evaluate(facts)
    if args.json:
        doc = {"facts": facts, "findings": [dataclasses.asdict(f) for f in findings]}
        sys.stdout.write(json.dumps(doc, indent=2, default=str) + "\n")
    else:
        sys.stdout.write(format_findings(findings))
    return EXIT_OK
