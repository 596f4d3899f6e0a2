"""``wakelab export``: a run's evidence as CSV, Markdown, JSON or pyperf files."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from wakelab.commands import EXIT_OK


def register(sub: Any) -> None:
    from wakelab.export import EXPORTERS

    export = sub.add_parser(
        "export",
        help="export a run as csv, markdown, json or pyperf files",
        description=(
            "Export the evidence of a run. csv, markdown and json go to stdout unless -o names a file; "
            "pyperf writes one file per arm into a folder, for 'python -m pyperf stats|hist|compare_to'."
        ),
        epilog="Formats: " + "; ".join("%s: %s" % (e.name, e.help) for e in EXPORTERS.values()) + ".",
    )
    export.add_argument("run", metavar="RUN", help="an evidence folder or its summary.json")
    export.add_argument("-f", "--format", required=True, choices=list(EXPORTERS), help="output format")
    export.add_argument(
        "-o", "--output", metavar="PATH",
        help="file to write (csv, markdown, json; default: stdout) or folder (pyperf; default: ./<run folder>-pyperf/); "
        "replaced atomically if it exists",
    )
    export.set_defaults(handler=cmd_export)


def cmd_export(args: argparse.Namespace) -> int:
    from wakelab.export import default_folder, get_exporter, load_evidence, write_export

    exporter = get_exporter(args.format)
    evidence = load_evidence(args.run)
    export = exporter.serialize(evidence)
    for note in export.notes:
        sys.stderr.write("wakelab: %s\n" % note)
    if exporter.per_arm:
        folder = args.output or default_folder(evidence, exporter)
        paths = write_export(export, exporter, folder)
        sys.stderr.write("wakelab: wrote %d %s file%s to %s (try: python -m pyperf stats %s)\n" % (
            len(paths), exporter.name, "" if len(paths) == 1 else "s", folder, paths[0]))
    elif args.output:
        write_export(export, exporter, args.output)
    else:
        from wakelab.formatting import escape_text

        sys.stdout.write(escape_text(export.files[0].text, multiline=True))
        sys.stdout.flush()
    return EXIT_OK
