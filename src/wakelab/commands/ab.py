"""``wakelab ab BASE HEAD``: did a change make wakes slower?  One run, two sides taking turns, one gate.

The two sides (environments: an interpreter or venv, folders of code first on the workers' PYTHONPATH,
variables, arm files) are the two cells of one grid whose repetitions alternate, so a machine that
changes over the run reaches both alike; two separate runs cannot promise that.  The verdict is
compare's (:func:`wakelab.analysis.compare.compare_grid`), the gate :mod:`wakelab.analysis.abgate`'s.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import os
import re
import sys
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, TypeVar, TYPE_CHECKING

from wakelab.analysis.abgate import Gate, compare_sides, judge_gate
from wakelab.analysis.compare import (
    DEFAULT_ALPHA, DEFAULT_METRICS, DEFAULT_MIN_EFFECT_PCT, DEFAULT_RESAMPLES, DEFAULT_SEED, RunComparison, Settings,
    format_ratio_plain)
from wakelab.commands import EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, raise_if_interrupted
from wakelab.commands import compare as compare_command
from wakelab.commands import run as run_command
from wakelab.commands._options import path_value, suggest_long_options, utf8_text, whole_number
from wakelab.commands.compare import EXIT_REGRESSION, format_comparison, regression_items
from wakelab.errors import UsageError
from wakelab.evidence.model import Grid
from wakelab.formatting import escape_text, format_rate, format_us

if TYPE_CHECKING:
    from wakelab.core.model import Arm

AB_SCHEMA = "wakelab.ab"
AB_SCHEMA_VERSION = 1
ROLES = ("base", "head")
# The wake paths of threading and of file descriptors: what ab measures when no arm is named.
DEFAULT_ARMS = ("event", "queue", "pipe")
DEFAULT_LIMIT_PCT = 10.0
# A side's name is its cell's folder name and label (matrix.schema.json's pattern).
NAME_PATTERN = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

EPILOG = """\
sides (BASE and HEAD, each one of):
  a folder of code      put first on the workers' PYTHONPATH (its src/ when it has one): a checkout
                        of the code under test, run on this interpreter unless --python names another
  a virtual environment (a folder with pyvenv.cfg): its python, with its site-packages
  an interpreter        a path, a command on PATH or a release, as 'wakelab run --python' takes it
Options that take SIDE:VALUE apply to one side (SIDE: base, head, or a name given with --name);
without SIDE: to both.  Sides named with --name are named so in every output (text, --json,
--markdown, the bundle's cells and its HTML report).

The sides take turns in one run: base's first repetition, head's, head's second, base's ... (--repeat
R, default 5), in fresh workers each time, so that the machine's drift reaches both alike.  Arm files
are loaded by this interpreter too, to read their declarations (with the side's folders first on its
path): import the code under test inside the arm's path() if this interpreter cannot import it.

An A/B is not recorded in the history: its two sides run different code under one set of conditions,
and a history series must hold one wake path.  The bundle (-o) keeps everything; 'wakelab compare
FOLDER' and 'wakelab report FOLDER' read it.  There is no early stopping: every A/B takes its
repetitions in full, which is what the calibration's error rates are for.

gate (as 'wakelab compare --fail-on-regression'):
  fails (exit 1) when, at a --metric percentile (default p50,p99), head's verdict is "slower" (the
  interval of head/base lies above 1 + --min-effect) and the ratio exceeds 1 + PCT/100.
  Calibrated on a 2-vCPU VM: see the README's A/B calibration table (A/A failures, power at +10/25/50%).

exit status:
  0  pass: no gated percentile of any arm is slower beyond the limit
  1  regression: head is slower than base beyond the limit (the arms and percentiles are named)
  2  error: bad input, or the gate could not judge an arm (failed or skipped on a side, too few wakes)
  130, 143, 129  interrupted (Ctrl-C, SIGTERM, SIGHUP); the evidence so far is kept
"""


@dataclasses.dataclass(frozen=True)
class Side:
    """One side of the A/B as resolved: its role (base, head), its name, and its environment."""

    role: str
    name: str
    spec: str  # as given on the command line
    python: Optional[str]  # None: this interpreter
    python_label: Optional[str]
    pythonpath: Tuple[str, ...]  # folders of code, first on the workers' PYTHONPATH
    env: Tuple[Tuple[str, str], ...]
    arm_files: Tuple[str, ...]
    planted_delay_us: Optional[int] = None
    site_path: Tuple[str, ...] = ()  # the interpreter's site-packages entries (when arm files need them)

    def to_dict(self) -> Dict[str, object]:
        return dict(dataclasses.asdict(self), python=self.python or sys.executable, env=dict(self.env))


def register(sub: Any) -> None:
    ab = sub.add_parser(
        "ab",
        help="A/B: measure two environments (base, head) taking turns in one run, and gate on a regression",
        description=(
            "Measure the same arms in two environments -- BASE and HEAD: interpreters, virtual environments or "
            "checkouts of the code under test -- in one run whose sides take alternating turns, compare head "
            "with base arm by arm (ratio, interval, minimum detectable effect) and fail on a regression. "
            "Writes one bundle (a grid of two cells named after the sides)."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ab.add_argument("base", metavar="BASE", type=utf8_text(), help="the side compared against: a folder of code, a venv or an interpreter")
    ab.add_argument("head", metavar="HEAD", type=utf8_text(), help="the side under test, as BASE")
    sides = ab.add_argument_group("the sides (SIDE: base, head or a --name; without it, both sides)")
    sides.add_argument("--name", action="append", default=[], metavar="SIDE=NAME", type=utf8_text(),
                       help="name a side in every output (base=main, head=pr-123); letters, digits, '.', '_', '-'")
    sides.add_argument("--python", action="append", default=[], metavar="[SIDE:]PYTHON", type=utf8_text(),
                       help="the interpreter a side runs (default: the venv's, else this one)")
    sides.add_argument("--path", action="append", default=[], metavar="[SIDE:]DIR", type=utf8_text(),
                       help="another folder to put first on a side's PYTHONPATH (repeatable)")
    sides.add_argument("--env", action="append", default=[], metavar="[SIDE:]NAME=VALUE", type=utf8_text(),
                       help="an environment variable for a side's workers (repeatable)")
    sides.add_argument("--arm-file", action="append", default=[], metavar="[SIDE:]PATH", type=utf8_text(),
                       help="load arms from this file (both sides, or one side's own; the same arm names on both)")
    sides.add_argument("--planted-delay-us", action="append", default=[], metavar="SIDE:US", type=utf8_text(),
                       help="self-test: wait US µs between t0 and every notify on one side (sleeping, spinning only its last "
                            "200 µs, as 'wakelab run' does); the gate must find it")
    measure = ab.add_argument_group("what is measured (as 'wakelab run')")
    measure.add_argument("--arms", type=utf8_text(), metavar="A,B,...",
                         help="arms to measure (default: the arm files' arms, else %s)" % ",".join(DEFAULT_ARMS))
    measure.add_argument("-n", "--n", type=whole_number(*run_command.LIMITS["n"]), metavar="N",
                         help="counted wakes per latency arm and side (default 200)")
    measure.add_argument("--repeat", type=whole_number(*run_command.LIMITS["repeat"]), metavar="R",
                         help="turns per side: the sides' repetitions alternate (default 5)")
    measure.add_argument("--workers", type=whole_number(*run_command.LIMITS["workers"]), metavar="N",
                         help="fresh worker processes per arm and side, spread over the turns (default 3, and never fewer "
                              "than the turns: 5 with the default --repeat 5)")
    measure.add_argument("--rigorous", action="store_true",
                         help="compare-grade: %d times the wakes and %d workers per turn (smaller changes told apart)"
                              % (run_command.RIGOROUS_FACTOR, run_command.RIGOROUS_WORKERS_PER_REPETITION))
    measure.add_argument("--placement", type=run_command._placement, metavar="P",
                         help="any (default), same or split: where notifier and waiter run, on both sides")
    measure.add_argument("--cpus", type=run_command._list_of(run_command._whole_number("cpu"), "CPU numbers"),
                         metavar="A[,B]", help="the CPU(s) of --placement same or split")
    measure.add_argument("--settle-us", type=whole_number(*run_command.LIMITS["settle_us"]), metavar="US",
                         help="quiet time before each notify (default 1000)")
    measure.add_argument("--seed", type=whole_number(*run_command.LIMITS["seed"]), metavar="N",
                         help="seed of the random settles (default: drawn and recorded)")
    gate = ab.add_argument_group("the gate (as 'wakelab compare')")
    gate.add_argument("--fail-on-regression", type=compare_command._percent, default=DEFAULT_LIMIT_PCT, metavar="PCT",
                      help="exit 1 when head is slower than base by more than PCT percent at a --metric percentile, "
                           "its interval clear of --min-effect (default: %(default)g)")
    gate.add_argument("--metric", type=compare_command._metrics, default=DEFAULT_METRICS, metavar="P[,P]",
                      help="the percentiles the gate looks at: p50, p99, p99.9 (default: %s)" % ",".join(DEFAULT_METRICS))
    gate.add_argument("--min-effect", type=compare_command._min_effect, default=DEFAULT_MIN_EFFECT_PCT, metavar="PCT",
                      help="the smallest change worth a verdict, percent (default: %(default)g)")
    gate.add_argument("--alpha", type=compare_command._alpha, default=DEFAULT_ALPHA, metavar="A",
                      help="intervals are at 1 - A (default: %(default)s)")
    gate.add_argument("--resamples", type=whole_number(*compare_command.RESAMPLES_LIMITS), default=DEFAULT_RESAMPLES,
                      metavar="N", help="bootstrap resamples per arm (default: %(default)s)")
    out = ab.add_argument_group("output")
    out.add_argument("-o", "--output", metavar="DIR", type=path_value("a folder", run_command.FOLDER_AS_TEXT),
                     help="the bundle (a grid folder; default: a new folder under ./%s/)" % run_command.DEFAULT_RUNS_DIR)
    out.add_argument("--json", action="store_true", help="print a JSON document (schema wakelab.ab) instead of the text")
    out.add_argument("--markdown", metavar="FILE", type=utf8_text(),
                     help="also write a Markdown summary to FILE ('-': stdout), e.g. \"$GITHUB_STEP_SUMMARY\"")
    out.add_argument("--note", type=utf8_text(), help="free text recorded in the evidence")
    out.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    ab.set_defaults(handler=cmd_ab, compare_seed=DEFAULT_SEED, looks_again=True)
    suggest_long_options(ab)


def _names(args: argparse.Namespace) -> Dict[str, str]:
    names = {"base": "base", "head": "head"}
    for item in args.name:
        role, sep, name = item.partition("=")
        if not sep or role not in ROLES:
            raise UsageError("--name %s: expected base=NAME or head=NAME" % item)
        if not NAME_PATTERN.match(name):
            raise UsageError("--name %s: a name is 1 to 64 letters, digits, '.', '_' or '-' (it names a folder)" % item)
        names[role] = name
    if names["base"] == names["head"]:
        raise UsageError("--name: the two sides need different names (both are %s)" % names["base"])
    return names


def _split_side(value: str, option: str, names: Dict[str, str], need_side: bool = False) -> Tuple[Tuple[str, ...], str]:
    """``"head:x"`` -> ``(("head",), "x")``; no known side before a colon: both sides."""
    side, sep, rest = value.partition(":")
    by_name = {name: role for role, name in names.items()}
    by_name.update({role: role for role in ROLES})
    if sep and side in by_name:
        return (by_name[side],), rest
    if need_side:
        raise UsageError("%s %s: expected SIDE:VALUE, SIDE one of %s" % (option, value, ", ".join(sorted(set(by_name)))))
    return ROLES, value


T = TypeVar("T")


def _usage(parse: Callable[..., T], *args: Any) -> T:
    """``parse(*args)``, its ValueError (or OSError) one line of a UsageError."""
    try:
        return parse(*args)
    except (ValueError, OSError) as exc:
        raise UsageError(str(exc)) from None


def _resolve_python(value: str, candidates: Callable[[], Any]) -> Tuple[str, str]:
    from wakelab.harness.interpreters import resolve_python

    path, interpreter = _usage(resolve_python, value, candidates)
    return os.path.abspath(path) if os.sep in path else path, interpreter.label


def _existing(exists: Callable[[str], bool], what: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if not exists(text):
            raise ValueError("%s is not a %s" % (text, what))
        return os.path.abspath(text)

    return parse


def _env_pair(text: str) -> Tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not ENV_NAME.match(key):
        raise ValueError("expected [SIDE:]NAME=VALUE")
    if key == "PYTHONPATH":
        raise ValueError("give a side's folders with --path [SIDE:]DIR (or as BASE/HEAD)")
    return key, value


def resolve_sides(args: argparse.Namespace) -> List[Side]:
    """Both sides from BASE, HEAD and the per-side options (UsageError naming what is wrong)."""
    from wakelab.harness.interpreters import side_of, site_path, survey

    names = _names(args)
    candidates = functools.lru_cache(maxsize=None)(survey)  # one interpreter survey, only if a value needs it
    specs = dict(zip(ROLES, (args.base, args.head)))
    python: Dict[str, Optional[Tuple[str, str]]] = {}
    code: Dict[str, Tuple[str, ...]] = {}
    for role, spec in specs.items():
        value, code[role] = _usage(side_of, spec)
        python[role] = None if value is None else _resolve_python(value, candidates)

    def per_side(values: Sequence[str], flag: str, parse: Callable[[str], Any], need_side: bool = False) -> Dict[str, List[Any]]:
        """Each ``[SIDE:]VALUE`` of ``flag``, parsed, onto its sides' lists (in order: the last one given wins)."""
        out: Dict[str, List[Any]] = {role: [] for role in ROLES}
        for value in values:
            roles, text = _split_side(value, flag, names, need_side)
            try:
                parsed = parse(text)
            except (ValueError, argparse.ArgumentTypeError) as exc:
                raise UsageError("%s %s: %s" % (flag, value, exc)) from None
            for role in roles:
                out[role].append(parsed)
        return out

    pythons = per_side(args.python, "--python", lambda text: _resolve_python(text, candidates))
    folders = per_side(args.path, "--path", _existing(os.path.isdir, "folder"))
    envs = per_side(args.env, "--env", _env_pair)
    files = per_side(args.arm_file, "--arm-file", _existing(os.path.isfile, "file"))
    planted = per_side(args.planted_delay_us, "--planted-delay-us", whole_number(0, 1_000_000), need_side=True)
    sides = []
    for role, spec in specs.items():
        path, label = (pythons[role] or [python[role]])[-1] or (None, None)
        if path is not None and os.path.abspath(path) == os.path.abspath(sys.executable):
            path = None  # this very interpreter (a venv's python is another: its own prefix, its own packages)
        env = dict(envs[role])
        sides.append(Side(role=role, name=names[role], spec=spec, python=path, python_label=label,
                          pythonpath=(*code[role], *folders[role]), env=tuple(sorted(env.items())),
                          arm_files=tuple(files[role]), planted_delay_us=(planted[role] or [None])[-1],
                          site_path=_usage(site_path, path or sys.executable, env) if files[role] else ()))
    return sides


def load_arms(sides: Sequence[Side]) -> Dict[str, Dict[str, Dict[str, object]]]:
    """Load each side's arm files (its folders first on this interpreter's path); per side, each user
    arm's origin as its workers load it.  The base side's arms stay registered (their declarations
    describe both sides: they must agree, UsageError otherwise)."""
    from wakelab.core import registry
    from wakelab.core.user_arms import ArmFileError, UserArm, load_arm_file

    declared: Dict[str, Dict[str, Arm]] = {}
    origins: Dict[str, Dict[str, Dict[str, object]]] = {}
    for side in sorted(sides, key=lambda s: s.role != "head"):  # head first: base's arms stay registered
        registry.forget_user_arms()
        saved = list(sys.path)
        sys.path[:0] = [p for p in side.pythonpath if p not in sys.path]
        try:
            arms = [arm for path in side.arm_files for arm in load_arm_file(path)]
        except ArmFileError as exc:
            raise UsageError("%s (side %s)" % (exc, side.name)) from None
        finally:
            sys.path[:] = saved
        declared[side.role] = {arm.name: arm for arm in arms}
        # The side's workers find its code on their PYTHONPATH: no folder of this interpreter's.
        origins[side.role] = {arm.name: dataclasses.replace(arm.loaded_from, sys_path=()).to_dict()
                              for arm in arms if isinstance(arm, UserArm)}
    base, head = declared["base"], declared["head"]
    for name in (name for name in base if name in head):  # an arm on one side only: see choose_arms
        a, b = base[name], head[name]
        for field in ("family", "kind", "waiter", "scope", "t0", "t1"):
            if getattr(a, field) != getattr(b, field):
                raise UsageError("arm %s differs in %s between the sides (%s in base, %s in head): not the same "
                                 "experiment" % (name, field, getattr(a, field), getattr(b, field)))
    return origins


def choose_arms(args: argparse.Namespace, sides: Sequence[Side], origins: Mapping[str, Mapping[str, object]]) -> List[str]:
    from wakelab.core.registry import arm_names, unknown_name_message

    declared = list(dict.fromkeys([*origins["base"], *origins["head"]]))
    if args.arms is None:
        names = declared or list(DEFAULT_ARMS)
    else:
        names = [n.strip() for n in args.arms.split(",") if n.strip()]
        if not names:
            raise UsageError("--arms needs at least one arm name")
        if len(set(names)) != len(names):
            raise UsageError("--arms names an arm twice")
        valid = arm_names()
        for name in names:
            if name not in valid:
                raise UsageError(unknown_name_message("arm", name, valid))
    for name in names:
        on = [side.name for side in sides if name in origins[side.role]]
        if on and len(on) != len(sides):
            raise UsageError("arm %s is declared on side %s only: both sides need it (give the arm file to both, "
                             "or each side its own)" % (name, on[0]))
    return names


def _run_args(args: argparse.Namespace) -> argparse.Namespace:
    """``args`` with every attribute 'wakelab run''s helpers read: run's own defaults (taken from its
    parser, so that an option run gains is never missing here), then what ab sets."""
    parser = argparse.ArgumentParser(add_help=False)
    run_command.register(parser.add_subparsers())
    merged = vars(parser.parse_args(["run"]))
    for key, value in vars(args).items():
        if key in ("n", "repeat", "workers", "rigorous", "cpus", "seed") or key not in merged:
            merged[key] = value
    merged["placement"] = [args.placement] if args.placement else None
    merged["planted_delay_us"] = None  # ab plants per side (Cell.planted_delay_us)
    merged["python"] = None
    return argparse.Namespace(**merged)


def cmd_ab(args: argparse.Namespace) -> int:
    from wakelab.extras import require

    require("compare", "wakelab ab")  # the verdict needs numpy and scipy: say so before measuring anything
    from wakelab.harness import grid
    from wakelab.harness.conditions import ConditionError
    from wakelab.harness.runner import RunInterrupted, RunPlan
    from wakelab.harness.workers import InterpreterError
    from wakelab.labs import RunShape, get_lab, lab_for_run
    from wakelab.progress import HEARTBEAT_S, make_progress
    from wakelab.report.matrix_text import format_matrix
    from wakelab.report.text import format_summary

    raise_if_interrupted()
    run_command._check_command_line(list(args.argv))
    sides = resolve_sides(args)
    origins = load_arms(sides)
    arm_names = choose_arms(args, sides, origins)
    rargs = _run_args(args)
    preset = get_lab(run_command.DEFAULT_LAB)
    params = run_command._params(rargs, preset.params)
    if args.settle_us is not None:
        params = dataclasses.replace(params, settle_us=args.settle_us)
    execution = run_command._execution(rargs)
    [(placement, notifier_cpu, waiter_cpu)] = run_command._placements(rargs, preset)
    lab = lab_for_run(preset, arm_names, RunShape(in_process=False, workers=execution.workers, placements=(placement,),
                                                  repeat=execution.repeat))
    cells = [
        grid.Cell(label=side.name, python=side.python, python_label=side.python_label, placement=placement,
                  notifier_cpu=notifier_cpu, waiter_cpu=waiter_cpu, settle_us=params.settle_us, cpu_threads=0,
                  side=side.name, pythonpath=side.pythonpath + side.site_path, env=side.env,
                  arm_origins={n: o for n, o in origins[side.role].items() if n in arm_names},
                  planted_delay_us=side.planted_delay_us)
        for side in sides
    ]
    folder = run_command._output_folder(args, "ab-%s-vs-%s" % (sides[0].name, sides[1].name))
    base_plan = RunPlan(lab=lab, arm_names=arm_names, params=params, folder=folder, command=["wakelab"] + list(args.argv),
                        note=args.note, execution=execution, render_text=format_summary)
    try:
        with make_progress(len(arm_names) * len(cells) * execution.repeat, quiet=args.quiet, heartbeat_s=HEARTBEAT_S) as shown:
            grid.run_grid(base_plan, cells, shown, render_matrix=format_matrix)
    except RunInterrupted as exc:
        sys.stderr.write("wakelab: interrupted; the evidence so far (complete: false) is in %s\n" % exc.folder)
        return EXIT_INTERRUPTED
    except (InterpreterError, ConditionError) as exc:
        run_command._remove_if_empty(folder)
        raise UsageError(str(exc)) from None
    settings = Settings(alpha=args.alpha, resamples=args.resamples, seed=args.compare_seed, min_effect_pct=args.min_effect)
    comparison, skipped = compare_sides(Grid.load(folder), sides[0].name, settings,
                                        planted_delay=any(s.planted_delay_us for s in sides))
    if comparison is None:
        raise UsageError("%s: the head side has no evidence (%s)" % (folder, "; ".join(why for _, why in skipped) or "not run"))
    gate = judge_gate(comparison, args.fail_on_regression, args.metric, args.min_effect, arm_names)
    status = {"pass": EXIT_OK, "regression": EXIT_REGRESSION}.get(gate.result, EXIT_USAGE)
    if args.markdown:
        text = format_markdown(sides, gate, folder, args)
        if args.markdown == "-":
            sys.stdout.write(text)
        else:
            try:
                with open(args.markdown, "a", encoding="utf-8") as fh:  # appended: $GITHUB_STEP_SUMMARY gathers steps
                    fh.write(text)
            except OSError as exc:
                raise UsageError("cannot write --markdown %s: %s" % (args.markdown, exc.strerror or exc)) from None
    if args.json:
        doc = format_json(sides, gate, comparison, folder, settings, status)
        sys.stdout.write(json.dumps(doc, indent=2, sort_keys=True, allow_nan=False) + "\n")
    elif args.markdown != "-":
        sys.stdout.write(format_text(sides, gate, comparison, folder, settings))
    if gate.result == "error":
        sys.stderr.write("wakelab: error: the gate cannot answer: %s\n" % escape_text("; ".join(gate.errors)))
    return status


def _side_line(side: Side) -> str:
    parts = ["python %s" % (side.python or sys.executable)]
    if side.pythonpath:
        parts.append("PYTHONPATH %s" % os.pathsep.join(side.pythonpath))
    if side.site_path:
        parts.append("site-packages %s" % os.pathsep.join(side.site_path))
    if side.env:
        parts.append("env %s" % " ".join("%s=%s" % kv for kv in side.env))
    if side.arm_files:
        parts.append("arm file%s %s" % ("" if len(side.arm_files) == 1 else "s", ", ".join(side.arm_files)))
    if side.planted_delay_us:
        parts.append("planted delay %d µs (self-test)" % side.planted_delay_us)
    return "%s (%s): %s" % (side.name, side.role, "; ".join(parts))


def format_text(sides: Sequence[Side], gate: Gate, comparison: RunComparison, folder: str, settings: Settings) -> str:
    """The text report: the sides, compare's block for head against base, the gate, where the evidence is."""
    from wakelab.report.text import bullets, wrap

    base, head = sides[0].name, sides[1].name
    out = ["wakelab ab: %s against %s, measured in one run whose sides took turns" % (head, base), ""]
    for side in sides:
        out.extend(wrap(_side_line(side)))
    out += ["", *format_comparison(comparison), "", "GATE (--fail-on-regression %g, --metric %s, --min-effect %g): %s"
            % (gate.limit_pct, ",".join(gate.metrics), gate.min_effect_pct, gate.result.upper())]
    out += bullets(regression_items(gate.regressions, gate.base, gate.limit_pct, gate.metrics, gate.unchecked, gate.errors,
                                    gate.head))
    out += ["", *wrap("Ratios are %s over %s (above 1: slower), with their %g%% interval from a two-level bootstrap "
                      "(worker slices, then wakes); MDE: the smallest change this A/B could call slower. 'wakelab "
                      "compare --help' says how to read them." % (head, base, 100 * settings.confidence)),
            "evidence: %s (wakelab report -o report.html %s for the HTML page)" % (folder, folder), ""]
    return escape_text("\n".join(out), multiline=True)


def _code(text: str) -> str:
    """Text for a Markdown code span: taken literally, so only a backtick needs keeping out."""
    return "`%s`" % escape_text(str(text)).replace("`", "'").replace("\n", " ")


def format_markdown(sides: Sequence[Side], gate: Gate, folder: str, args: argparse.Namespace) -> str:
    """The Markdown summary for a CI job page ($GITHUB_STEP_SUMMARY): the result, one table, the sides."""
    from wakelab.export.markdown import escape as _md

    base, head = sides[0].name, sides[1].name
    mark = {"pass": "✅ pass", "regression": "❌ regression", "error": "⚠️ error"}[gate.result]
    out = ["## wakelab A/B: %s against %s — %s" % (_md(head), _md(base), mark), ""]
    if gate.regressions:
        out += ["- **%s** is slower in %s: %s× at %s (limit %s×)" % (_md(r.arm), _md(head), format_ratio_plain(r.slowdown), _md(r.metric),
                                                                      format_ratio_plain(1 + gate.limit_pct / 100.0)) for r in gate.regressions]
    elif gate.result == "pass":
        out.append("No arm of %s is slower than %s by more than %g%% at %s." % (_md(head), _md(base), gate.limit_pct,
                                                                             ", ".join(gate.metrics)))
    out += ["- error: %s" % _md(e) for e in gate.errors]
    level = round(100 * (gate.rows[0].ci.confidence if gate.rows else 0.95))
    out += ["", "| arm | at | %s | %s | %s/%s (%d%% CI) | verdict | MDE | gate |" % (_md(base), _md(head), _md(head), _md(base), level),
            "| --- | --- | ---: | ---: | ---: | --- | ---: | --- |"]
    for row in gate.rows:
        ci = "%s× (%s–%s)" % tuple(format_ratio_plain(x) for x in (row.ci.ratio, row.ci.low, row.ci.high))
        mde = "-" if row.mde_pct is None else ("%.0f%%" % row.mde_pct if row.mde_pct >= 10 else "%.1f%%" % row.mde_pct)
        state = "**FAIL**" if row.failed else ("pass" if row.gated else "not gated")
        figure, unit = (format_us, " µs") if row.kind == "latency" else (format_rate, " ops/s")
        out.append("| %s | %s | %s%s | %s%s | %s | %s | %s | %s |" % (
            _md(row.arm), row.label, figure(row.ci.baseline), unit, figure(row.ci.other), unit, ci, row.verdict, mde, state))
    out += ["", "Gate: head/base slower at %s with its interval above %g%% and the ratio above +%g%% "
            "(`--fail-on-regression %g --min-effect %g`). The sides took turns in one run." % (
                ", ".join(gate.metrics), gate.min_effect_pct, gate.limit_pct, gate.limit_pct, gate.min_effect_pct), ""]
    out += ["<details><summary>sides and evidence</summary>", ""]
    out += ["- %s" % _md(_side_line(side)) for side in sides]
    out += ["- evidence: %s" % _code(folder), "- command: %s" % _code(" ".join(["wakelab"] + list(args.argv))), "", "</details>", ""]
    return "\n".join(out)


def format_json(sides: Sequence[Side], gate: Gate, comparison: RunComparison, folder: str, settings: Settings,
                status: int) -> Dict[str, object]:
    """The ``--json`` document (schema ``wakelab.ab``): the sides, the bundle's folder, compare's settings and comparison of
    head against base, the gate and the exit status."""
    return {
        "schema": AB_SCHEMA, "schema_version": AB_SCHEMA_VERSION, "sides": [side.to_dict() for side in sides],
        "base": sides[0].name, "head": sides[1].name, "folder": folder, "settings": settings.to_dict(),
        "comparison": comparison.to_dict(), "gate": gate.to_dict(), "exit_status": status,
    }
