"""The chaos suite, fast part (issue 14): abuse that must stay harmless, kept in the test suite.

The long version is ``bench/chaos.py`` (thousands of cases and a table); these
tests use its case builders and checks, at counts that fit a test run, and
cover what the per-feature tests (test_bad_arguments, test_hostile_evidence,
test_fuzz_evidence, test_parent_death, test_output_folder,
test_worker_liveness) do not:

- Hypothesis over whole command lines of every command: a bad fragment (a
  value out of range, an unknown option, a missing argument, raw bytes that
  are not UTF-8, control characters) mixed with good ones must give exit 2,
  one ``wakelab...: error:`` line, nothing on stdout, nothing written
  anywhere (working folder, history, data, config and cache folders), and no
  raw control character on stderr.  Cases run ``wakelab.cli.main`` in a
  forked child (``chaos.ForkPool``); a few go through a real ``python -m
  wakelab`` with bytes arguments.
- One bundle of each hostile kind (``chaos.FIXED_CORPUS``: truncated,
  wrong types, 1e400 and NaN, 5000-digit integers, nesting 100,000 deep,
  FIFOs, /dev/zero, links out of the bundle and in a loop, markup and escape
  sequences in every free-text field, a grid's matrix.json) fed to every
  reading command; plus random ones from the bench's generator.
- ENOSPC on a small tmpfs at a few points of a catalogue run, and under a
  report (root and mount needed, skipped otherwise); three runs into one
  folder at once; SIGINT, SIGTERM, SIGHUP and SIGKILL at seeded random points
  from start-up to measuring.

Everything is seeded (Hypothesis derandomized): the same cases every run.
"""

from __future__ import annotations

import os
import random
import re
import signal
import sys
import tempfile
from typing import Iterator, List, Tuple

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import chaos  # noqa: E402  (bench/chaos.py: the long version, whose builders these tests share)

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forks, reads /proc, mounts tmpfs: Linux")

CHAOS = settings(max_examples=25, deadline=None, derandomize=True, database=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def scratch() -> Iterator[str]:
    folder = tempfile.mkdtemp(prefix="wakelab-test-chaos-")
    os.makedirs(os.path.join(folder, "io"))
    chaos.preload()
    try:
        yield folder
    finally:
        import shutil

        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def pool(scratch: str) -> "chaos.ForkPool":
    return chaos.ForkPool(2, os.path.join(scratch, "io"))


def failures(outcomes: List["chaos.Outcome"]) -> List[str]:
    return ["%s: %s" % (o.case, o.failures) for o in outcomes if o.failures]


_serial = [0]


def sandboxes(scratch: str, count: int) -> List["chaos.Sandbox"]:
    boxes = []
    for _ in range(count):
        _serial[0] += 1
        boxes.append(chaos.make_sandbox(scratch, "box-%d" % _serial[0]))
    return boxes


def refused_everywhere(pool: "chaos.ForkPool", scratch: str, argvs: List[List[str]]) -> List[str]:
    """Each command line run in its own sandbox; what failed the bad-cli checks."""
    boxes = sandboxes(scratch, len(argvs))
    results = pool.run([(argv, box.cwd, box.env) for argv, box in zip(argvs, boxes)])
    return failures([chaos.check_bad_cli(result, box) for result, box in zip(results, boxes)])


# ---------------------------------------------------------------------------------------------
# Bad command lines


@pytest.mark.parametrize("command", sorted(chaos.CLI_TABLE), ids=lambda c: c or "top-level")
def test_every_bad_fragment_alone_is_refused(pool, scratch, command) -> None:
    """The generator's own ground truth: each bad fragment, on its own, is refused cleanly."""
    _, bad = chaos.CLI_TABLE[command]
    argvs = [([command] if command else []) + list(fragment) for fragment in bad]
    assert refused_everywhere(pool, scratch, argvs) == []


fragments = st.sampled_from(sorted(chaos.CLI_TABLE)).flatmap(
    lambda command: st.tuples(
        st.just(command),
        st.sampled_from(chaos.CLI_TABLE[command][1]),
        st.lists(st.sampled_from(chaos.CLI_TABLE[command][0]), max_size=4, unique=True) if chaos.CLI_TABLE[command][0]
        else st.just([]),
        st.randoms(use_true_random=False),
    )
)


def _command_line(case: Tuple[str, Tuple[str, ...], List[Tuple[str, ...]], random.Random]) -> List[str]:
    command, bad, good, rng = case
    parts = [bad] + list(good)
    rng.shuffle(parts)
    argv = [command] if command else []
    for part in parts:
        argv.extend(part)
    return argv


@CHAOS
@given(st.lists(fragments, min_size=6, max_size=6))
def test_bad_command_lines_are_refused(pool, scratch, cases) -> None:
    """Any command line holding a bad fragment among good ones: exit 2, one line, nothing written."""
    assert refused_everywhere(pool, scratch, [_command_line(c) for c in cases]) == []


# Options whose value is kept as text: raw bytes that are not UTF-8 must be refused up front.
TEXT_OPTIONS = [
    ["run", "--arms", "event", "-n", "5", "--in-process", "--note"],
    ["run", "--arms", "event", "-n", "5", "--in-process", "-o"],
    ["run", "-n", "5", "--in-process", "--arms"],
    ["run", "-n", "5", "--in-process", "--lab"],
    ["run", "-n", "5", "--in-process", "--python"],
    ["run", "--arms", "event", "-n", "5", "--in-process", "--history"],
    ["history", "--arm"],
    ["history", "--host"],
    ["history", "--lab"],
    ["history", "--python"],
    ["history", "--history"],
    ["history", "add"],
]


def _not_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
        return False
    except UnicodeDecodeError:
        return True


not_utf8 = st.binary(min_size=1, max_size=12).filter(lambda b: b"\0" not in b and _not_utf8(b) and not b.startswith(b"-"))


@settings(CHAOS, max_examples=20)
@given(st.lists(st.tuples(st.sampled_from(TEXT_OPTIONS), not_utf8), min_size=4, max_size=4))
def test_arguments_that_are_not_utf8_are_refused(pool, scratch, cases) -> None:
    """As a shell hands ``$'\\xff'`` over: Python's lone surrogates (surrogateescape)."""
    found = refused_everywhere(pool, scratch, [prefix + [os.fsdecode(raw)] for prefix, raw in cases])
    assert found == []


@settings(CHAOS, max_examples=4)
@given(st.tuples(st.sampled_from(TEXT_OPTIONS), not_utf8))
def test_arguments_that_are_not_utf8_are_refused_by_the_real_command(scratch, case) -> None:
    """The same through ``python -m wakelab`` with bytes in its argv."""
    prefix, raw = case
    [box] = sandboxes(scratch, 1)
    result = chaos.run_subprocess([os.fsencode(a) for a in prefix] + [raw], box.cwd, box.env, 120)
    assert failures([chaos.check_bad_cli(result, box)]) == []


# What a terminal must never get raw, put where argparse echoes an argument back.
controls = st.sampled_from(["\x1b[2J", "\x1b]0;pwned\x07", "\x9b31m", "\r", "\x08", "\x7f", "\u202e"])
echoed = st.tuples(st.sampled_from(["--bogus", "--arsm", "extra"]), st.text(max_size=6), controls, st.text(max_size=6))


@settings(CHAOS, max_examples=10)
@given(st.sampled_from(["run", "show", "compare", "export", "history", "list", "check", ""]), echoed)
def test_an_echoed_argument_reaches_stderr_escaped(pool, scratch, command, case) -> None:
    """argparse's "unrecognized arguments: ..." names the argument: escaped (found by this suite, fixed in ce4d361)."""
    kind, before, control, after = case
    extra = [kind + before + control + after] if kind != "extra" else [before + control + after]
    argv = ([command] if command else []) + extra
    if command in ("show", "export"):
        argv = [command] + (["-f", "csv"] if command == "export" else []) + [chaos.GOOD] + extra
    assert refused_everywhere(pool, scratch, [argv]) == []


# ---------------------------------------------------------------------------------------------
# Hostile evidence to every reading command


def read_corpus(pool: "chaos.ForkPool", scratch: str, names: List[str]) -> List["chaos.Outcome"]:
    """Every reader on one bundle of each of ``names`` (chaos.FIXED_CORPUS); the outcomes."""
    outcomes: List[chaos.Outcome] = []
    good = chaos.prepare_good(scratch)
    [box] = sandboxes(scratch, 1)
    bundles = [chaos.build_fixed(name, box.root) for name in names]
    count = chaos.read_bundles(bundles, good, pool, box.env, outcomes.append, READERS)
    assert count == len(outcomes) >= len(names) * len(READERS)
    return outcomes


# What the per-feature tests leave out (test_hostile_evidence has FIFOs, /dev/zero and links out
# for the summary and event's samples; test_fuzz_evidence has broken JSON for show): here every
# reader gets each.  The bench runs the whole corpus.
SPECIAL = ["summary-loop", "rate-samples-fifo", "samples-dir-link-out", "grid-fifo"]
BROKEN = ["summary-truncated", "summary-wrong-type", "summary-huge-int", "summary-deep", "summary-non-utf8",
          "samples-wrong-type", "samples-short", "samples-file-path-out"]
STRINGS = ["strings-everywhere", "strings-reason", "strings-names", "samples-strings", "grid-strings"]
# Bundles that every reader must take (exit 0): the escape checks mean something only where the
# evidence was rendered.
TAKEN = {"strings-everywhere", "strings-reason"}
# Every reading command, once each way it reads (the bench runs the other variants too: show of
# summary.json, compare --json, a two-run report, csv to a file).
READERS = [r for r in chaos.READERS if r.args not in {
    ("show", "BAD/summary.json"), ("compare", "--json", "--resamples", "200", "GOOD", "BAD"),
    ("report", "GOOD", "BAD", "-q", "-o", "OUT/two.html"), ("export", "-f", "csv", "BAD", "-o", "OUT/e.csv")}]
assert len(READERS) == len(chaos.READERS) - 4


@pytest.mark.parametrize("names", [SPECIAL, BROKEN, STRINGS], ids=["special-files", "broken-json", "markup-and-escapes"])
def test_every_reader_survives_the_hostile_corpus(pool, scratch, names) -> None:
    """No traceback, no hang, exit 0 or 2 (then one line, nothing written), no raw control character
    on stdout or stderr, no markup from the evidence in HTML."""
    outcomes = read_corpus(pool, scratch, names)
    assert failures(outcomes) == []
    refused = [o.case for o in outcomes if o.exit != 0 and o.case.split("[")[1].split(":")[0] in TAKEN]
    assert refused == []
    if names is STRINGS:  # history add took them, and the history readers ran on what it recorded
        assert sum(1 for o in outcomes if o.case.startswith("history --history")) >= len(TAKEN) * len(chaos.HISTORY_READERS)


def test_random_hostile_bundles(pool, scratch) -> None:
    rng = random.Random(1414)
    outcomes: List[chaos.Outcome] = []
    good = chaos.prepare_good(scratch)
    [box] = sandboxes(scratch, 1)
    bundles = []
    for i in range(3):
        bad, _, what = chaos.build_bundle(rng, box.root, i)
        bundles.append((bad, what))
    chaos.read_bundles(bundles, good, pool, box.env, outcomes.append, READERS)
    assert failures(outcomes) == []


def test_report_to_stdout_escapes_bidi_controls_from_the_evidence(pool, scratch) -> None:
    """The charts' JSON too (found by this suite: json_for_script let U+202A-202E and U+2066-2069 through)."""
    [box] = sandboxes(scratch, 1)
    bad, what = chaos.build_fixed("strings-everywhere", box.root)
    reader = next(r for r in chaos.READERS if r.html_stdout)
    out = os.path.join(box.root, "out")
    os.makedirs(out)
    [result] = pool.run([(chaos.reader_argv(reader, bad, chaos.GOOD, out), box.cwd, box.env)])
    assert result.returncode == 0, result.stderr
    assert chaos.check_reader(reader, result, out, what).failures == {}
    assert re.search("[\u202a-\u202e\u2066-\u2069]", result.stdout.decode("utf-8")) is None


def test_report_to_stdout_is_free_of_raw_control_characters(pool, scratch) -> None:
    """The whole page, its own scripts included: plotly.js as it ships holds a raw SUB (0x1a), which the
    page must carry escaped (found by this suite)."""
    [box] = sandboxes(scratch, 1)
    [result] = pool.run([(["report", chaos.GOOD, "-o", "-"], box.cwd, box.env)])
    assert result.returncode == 0, result.stderr
    raw = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]").findall(result.stdout.decode("utf-8"))
    assert raw == []


# ---------------------------------------------------------------------------------------------
# Real processes: ENOSPC, one folder, signals


def _needs_tmpfs() -> None:
    why = chaos.can_mount_tmpfs()
    if why:
        pytest.skip(why)


# 96k: room for the first summary (~45 KB for the catalogue) and the first arm's samples, not for the
# summary's atomic replacement (a second copy) after it.
# (It once left every arm pending and samples/event.json unnamed while the history said event was
# ok: the samples no arm names are now removed, and the history records what the disk holds.)
FILLS_AT_THE_FIRST_ARM = pytest.param("size=96k", id="fills-at-the-first-arm")


@pytest.mark.parametrize("options", [FILLS_AT_THE_FIRST_ARM, "size=200k", "size=2m,nr_inodes=20"],
                         ids=["fills-at-the-first-arm", "fills-late", "out-of-inodes"])
def test_a_catalogue_run_onto_a_disk_that_fills(scratch, options) -> None:
    """No traceback; exit 1 with the disk-full line (2 if nothing could be written); a valid incomplete
    bundle of the arms measured before; the run in the history."""
    _needs_tmpfs()
    outcome = chaos.enospc_case(options, scratch, len(os.listdir(scratch)))
    assert outcome.failures == {}, outcome.case
    assert "arms kept" in outcome.case or "nothing measured" in outcome.case, outcome.case


def test_exports_and_reports_onto_a_full_disk_write_all_or_nothing(scratch) -> None:
    _needs_tmpfs()
    rng = random.Random(7)
    outcomes = [chaos.enospc_export_case(rng, scratch, 100 + i, chaos.GOOD) for i in range(3)]
    assert failures(outcomes) == []


def test_three_runs_into_one_folder_at_once(scratch) -> None:
    """One wins whole, the others are refused with one line; one history row per winner."""
    outcome = chaos.concurrent_case(0.0, scratch, len(os.listdir(scratch)), n=200, runs=3)
    assert outcome.failures == {}, outcome.case


# Seeded points from start-up to measuring.  SIGINT strikes once wakelab runs: in the first ~0.3 s,
# about one Ctrl-C in five ends the process by the signal itself (exit -2, after its one line)
# rather than with 130 -- a known finding (see the chaos report), which a test could only flake on.
SIGNAL_POINTS = [(signal.SIGINT, random.Random(1).uniform(0.6, 3.0)), (signal.SIGTERM, random.Random(2).uniform(0.3, 1.5)),
                 (signal.SIGHUP, random.Random(3).uniform(1.0, 3.0)), (signal.SIGKILL, random.Random(4).uniform(1.0, 3.0))]


@pytest.mark.parametrize("signum, delay_s", SIGNAL_POINTS, ids=[s.name for s, _ in SIGNAL_POINTS])
def test_a_signal_at_a_random_point_of_a_run(scratch, signum, delay_s) -> None:
    """The signal's exit status, every process of the run gone within 2 s, the bundle valid and interrupted."""
    outcome = chaos.signal_case(signum, delay_s, scratch, len(os.listdir(scratch)))
    assert outcome.failures == {}, outcome.case
