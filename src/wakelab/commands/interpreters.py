"""``wakelab interpreters``: the Python interpreters found here; ``interpreters build``: fill the cache."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from wakelab.commands import EXIT_OK
from wakelab.commands._options import usage_errors
from wakelab.errors import UsageError

def register(sub: Any) -> None:
    parser = sub.add_parser(
        "interpreters", help="list the Python interpreters found here (for run --python); 'interpreters build' builds one",
        description="List the Python 3 interpreters (CPython, free-threaded CPython, PyPy) on PATH, in pyenv-style folders, "
        "among uv's managed Pythons, in conda and mamba environments, in the folders named by $WAKELAB_INTERPRETERS (separated "
        "by ':') and in wakelab's interpreter cache, each labelled by what it says it is, with implementation, version, build, "
        "GIL state, JIT, cyclic GC, multiprocessing's default start method and why any cannot be used. 'run --python' takes a "
        "label from the list (or 3.14, 3.14t, pypy); 'run --python all' measures every usable one.",
    )
    parser.add_argument("--json", action="store_true", help="print the list as JSON")
    parser.set_defaults(handler=cmd_interpreters)
    actions = parser.add_subparsers(dest="action", metavar="{build}")
    build = actions.add_parser(
        "build", help="build CPython into wakelab's interpreter cache",
        description="Build CPython from Debian's source package into wakelab's interpreter cache ($WAKELAB_CACHE, else "
        "$XDG_CACHE_HOME/wakelab, else ~/.cache/wakelab). 3.13t is the free-threaded build; it is built together with the "
        "default (GIL) build of the same source and flags, for a fair A/B (--only builds just the one named). The source is "
        "fetched with 'apt-get source --download-only' through a private source list in the cache (the Debian release that "
        "carries that CPython, the machine's own Debian URIs): no system file is changed and nothing is installed. Needs a C "
        "compiler and make; about 6 minutes per build on 2 free cores.",
    )
    build.add_argument("specs", nargs="+", metavar="RELEASE", help="3.13t (free-threaded) or 3.13 (with the GIL)")
    build.add_argument("--only", action="store_true", help="build only the builds named, not the GIL build beside a free-threaded one")
    build.add_argument("--source", metavar="PATH", help="a CPython source tarball or folder to build instead of Debian's source package")
    build.add_argument("--suite", metavar="NAME", help="the Debian release to take the source package from (default: the one "
                                                       "that carries the release, trixie for 3.13)")
    build.add_argument("--jobs", type=int, metavar="N", help="parallel make jobs (default: the number of CPUs)")
    build.add_argument("--rebuild", action="store_true", help="build again what is in the cache already")
    build.set_defaults(handler=cmd_build)


def cmd_interpreters(args: argparse.Namespace) -> int:
    from wakelab.formatting import escape_text
    from wakelab.harness.interpreters import cache_dir, format_jit, survey
    from wakelab.report.text import format_table

    found = survey()
    if args.json:
        sys.stdout.write(json.dumps([cand.to_dict() for cand in found], indent=2) + "\n")
        return EXIT_OK
    table = []
    for cand in found:
        i = cand.interpreter
        if i is None:
            described = ["?", "-", "-", "-", "-", format_jit(None, None), "-", "-"]
        else:
            gil = "on (PYTHON_GIL)" if i.free_threaded and i.gil else "on" if i.gil else "off"  # Interpreter.gil is never None
            described = [i.label or "?", i.implementation or "-", i.version_text or "-", i.build_text or "-", gil, i.jit_text,
                         i.gc or "-", i.start_method or "-"]
        table.append([escape_text(str(text)) for text in described + [cand.origin, cand.path]]
                     + ["yes" if cand.usable else "no: %s" % escape_text(str(cand.reason))])
    headers = ["interpreter", "implementation", "version", "build", "GIL", "JIT", "GC", "mp start", "found in", "path", "usable"]
    lines = format_table(headers, table, align_left=len(headers)) if found else ["  none found"]
    if found and not any(cand.usable for cand in found):
        lines.append("  none found that can run the measuring code")
    lines += ["", "cache: %s ('wakelab interpreters build 3.13t' adds a free-threaded CPython and its GIL twin)" % escape_text(cache_dir())]
    sys.stdout.write("\n".join(lines) + "\n")
    return EXIT_OK


def cmd_build(args: argparse.Namespace) -> int:
    from wakelab.formatting import escape_text
    from wakelab.harness.build import BuildError, build, parse_spec, with_gil_twin

    started = time.monotonic()

    def say(text: str) -> None:
        sys.stderr.write("wakelab: [%4.0fs] %s\n" % (time.monotonic() - started, escape_text(text)))
        sys.stderr.flush()

    if args.jobs is not None and not 1 <= args.jobs <= 256:
        raise UsageError("--jobs must be between 1 and 256, got %d" % args.jobs)
    with usage_errors(BuildError):
        specs = [parse_spec(text) for text in args.specs]
        if not args.only:
            specs = with_gil_twin(specs)
        results = build(specs, say=say, source_path=args.source, suite=args.suite, jobs=args.jobs, rebuild=args.rebuild)
    for spec, path, built in results:
        sys.stdout.write("%s\t%s\t%s\n" % (spec.name, escape_text(path), "built" if built else "cached"))
    return EXIT_OK
