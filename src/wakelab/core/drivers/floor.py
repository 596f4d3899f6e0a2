"""The floor driver: wakelab's wake experiments done in C, built on first use.

Measuring side: standard library only, Python 3.9+.

``wakelab_floor.c`` (shipped beside this file) does in C what the Python arms
do -- a condition variable, pipes, an eventfd, a socketpair, epoll, signals
to a spinning, a pausing, a selecting or a sigtimedwait-ing waiter,
sigaction installs, and the cross-process pipe, eventfd and kill wakes of a
forked child -- with the same definitions of ``t0`` and ``t1`` and the same
clock (``CLOCK_MONOTONIC``).  Its figures are the floor under the
interpreter's: how much of a wake is the kernel's, and how much is Python's.

This is the driver of the C arms (``Arm.driver == "floor"``): the C program
owns the whole wake loop -- handshake, settle, ``t0``, the planted waits, the
notify, ``t1``, lost and stale wakes -- the way :mod:`wakelab.core.drivers.thread`
owns it for a Python waiter thread.  Its timed step is chosen once per run and
is exactly ``t0 = clock(); notify();``, then the notifier blocks on its
completion handshake; ``t0`` is taken after the settle sleep.  The settles
are the Python drivers' own (:func:`~wakelab.core.drivers.settle_schedule_us`,
fixed part plus random part, wake for wake), handed to the binary on its
stdin (``settles=1``), so that a C floor sleeps what its Python arm sleeps and
the two reach the same idle states.  The self-test
step adds ``params.planted_delay_us`` between ``t0`` and the notify (it must
show in every sample) and ``params.planted_after_us`` right after the notify
(it must not); both sleep and spin only their last 200 µs, as
:func:`wakelab.core.drivers.planted_wait` does.  ``tests/test_timed_window.py``
proves the window clean for every C latency arm.  Closed loop only
(:data:`OPEN_LOOP` is False).

Building.  Nothing is compiled at import.  The first call of
:func:`unavailable_reason` or :func:`floor_binary` finds a C compiler (``$CC``
if set, else ``cc``, ``gcc`` or ``clang`` on ``PATH``), and compiles into a
per-user cache, ``$XDG_CACHE_HOME/wakelab/native/<key>/`` (default
``~/.cache``), where ``<key>`` hashes the source, the compiler, its version, the
flags and the machine type, so a changed source or compiler never reuses a
stale binary.  The compiler writes to a private temporary file which is then
renamed into place, so concurrent runs never see half a binary.  The outcome
-- a binary, or the reason there is none -- is remembered for the process.
Without a compiler the native arms are *unavailable*, with that reason; they
are skipped, never an error.

Running.  :func:`run_floor` runs the binary as a child process (no shell,
with a timeout); :func:`parse_latency_output` and :func:`parse_rate_output`
read its line format, which is documented at the top of the C source.  A crash, a timeout or output that is
not that format raises :class:`NativeFloorError`.  A wake the binary reports
as ``stale`` (its ``t1`` came before its ``t0``: it answered an older notify)
is counted lost, never a negative sample, and ``info["stale_wakes"]`` says
how many there were (warm-up wakes included, as the thread driver counts).

Scheduling.  A realtime request (:mod:`wakelab.core.realtime`: ``wakelab run
--policy``, ``--notifier-policy``, or an arm of its own) is handed to the
binary as ``waiter_policy=``/``waiter_priority=`` and
``notifier_policy=``/``notifier_priority=``; each side applies its own as it
takes its role, and ``info`` says what they were asked (``waiter_sched``).

Placement.  The binary is told the placement's CPUs (``notifier_cpu=`` and
``waiter_cpu=``, -1 for placement ``any``) and pins its own threads with
``pthread_setaffinity_np`` (the waiter child of a cross-process experiment
pins itself); it reports the CPU each side last ran on
(``sched_getcpu``), which :func:`parse_ran_on` reads and the raw record's
``info`` keeps as ``notifier_cpu_seen`` / ``waiter_cpu_seen``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
from typing import Dict, List, Mapping, Optional, Sequence, Tuple, Union

from wakelab.core import realtime
from wakelab.core.drivers import recording_t0, settle_schedule_us
from wakelab.core.model import LatencyCollector, MeasureParams, RawLatency, RawRate
from wakelab.core.placement import NOTIFIER, WAITER, cpu_for

SOURCE_NAME = "wakelab_floor.c"
BINARY_NAME = "wakelab_floor"
CFLAGS: Tuple[str, ...] = ("-O2", "-pthread", "-Wall")
#: Version of the binary's output format (first line: ``wakelab-floor 3 ...``), checked on
#: every run and by the build's self-test, so a stale binary is never read with the wrong rules.
#: History: 1 -- records and end line; 2 -- adds the ``ran-on`` line before the end line;
#: 3 -- adds ``stale`` records (a wake that answered an older notify), the ``planted_after_us``
#: key, and the socketpair, selector-pipe, pause-handler, wakeup-fd-select, pipe-process,
#: eventfd-fork and kill-sigwait-child experiments.
FLOOR_FORMAT = 3

#: The C floor honours closed-loop timing only (``params.mode == "closed"``).
OPEN_LOOP = False
FALLBACK_COMPILERS = ("cc", "gcc", "clang")
COMPILE_TIMEOUT_S = 120.0
PROBE_TIMEOUT_S = 30.0


class NativeFloorError(RuntimeError):
    """The native floor binary failed, timed out, or printed something unparseable."""


class NativeFloorUnavailable(NativeFloorError):
    """There is no native floor here (no compiler, compilation failed ...)."""


@dataclasses.dataclass(frozen=True)
class FloorBinary:
    """A built native floor: where it is and what built it."""

    path: str
    compiler: Tuple[str, ...]
    compiler_version: str
    cflags: Tuple[str, ...] = CFLAGS

    def info(self) -> Dict[str, object]:
        """Facts worth keeping in the evidence of a native arm."""
        return {
            "binary": self.path,
            "compiler": " ".join(self.compiler),
            "compiler_version": self.compiler_version,
            "cflags": " ".join(self.cflags),
            "clock": "CLOCK_MONOTONIC",
        }


def source_path() -> str:
    """The C source shipped with the package."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), SOURCE_NAME)


def cache_root() -> str:
    """``$XDG_CACHE_HOME/wakelab/native`` (``~/.cache/wakelab/native`` by default)."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):  # the XDG spec says: ignore relative paths
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "wakelab", "native")


def find_compiler() -> Tuple[Optional[Tuple[str, ...]], Optional[str]]:
    """``(argv, None)`` for the C compiler to use, or ``(None, reason)``.

    ``$CC`` wins when set (it may carry flags, e.g. ``"gcc -m64"``); a ``$CC``
    that cannot be found is reported, not silently replaced by another
    compiler.  Otherwise the first of cc, gcc, clang on ``PATH``.
    """
    cc = os.environ.get("CC", "").strip()
    if cc:
        try:
            argv = shlex.split(cc)
        except ValueError as exc:
            return None, "no C compiler found (CC=%r cannot be parsed: %s)" % (cc, exc)
        resolved = shutil.which(argv[0])
        if resolved is None:
            return None, (
                "no C compiler found (CC=%r is not an executable on PATH; "
                "set CC to a C compiler or install gcc)" % cc
            )
        return (resolved,) + tuple(argv[1:]), None
    for name in FALLBACK_COMPILERS:
        resolved = shutil.which(name)
        if resolved is not None:
            return (resolved,), None
    return None, "no C compiler found (set CC or install gcc)"


class _BuildFailed(Exception):
    pass


def _compiler_version(compiler: Sequence[str]) -> str:
    try:
        proc = subprocess.run(
            list(compiler) + ["--version"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=PROBE_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise _BuildFailed("C compiler %s does not run: %s" % (compiler[0], exc)) from None
    text = proc.stdout.decode("utf-8", "replace").strip()
    if proc.returncode != 0:
        raise _BuildFailed(
            "C compiler %s does not run (%s --version exited with status %d)"
            % (compiler[0], compiler[0], proc.returncode)
        )
    return text.splitlines()[0] if text else "unknown"


def _build_key(source: bytes, compiler: Sequence[str], version: str) -> str:
    digest = hashlib.sha256()
    for part in (
        source,
        "\0".join(compiler).encode(),
        version.encode(),
        "\0".join(CFLAGS).encode(),
        os.uname().machine.encode(),
        str(FLOOR_FORMAT).encode(),
    ):
        digest.update(part)
        digest.update(b"\xff")
    return digest.hexdigest()[:16]


def _tail(text: str, lines: int = 12) -> str:
    kept = text.strip().splitlines()[-lines:]
    return "\n".join(kept)


def _compile(compiler: Sequence[str], source: str, target: str) -> None:
    """Compile ``source`` into ``target`` via a temporary file and an atomic rename."""
    folder = os.path.dirname(target)
    try:
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix="." + BINARY_NAME + "-", suffix=".tmp", dir=folder)
        os.close(fd)
    except OSError as exc:
        raise _BuildFailed("cannot write the native floor cache %s: %s" % (folder, exc)) from None
    try:
        try:
            proc = subprocess.run(
                list(compiler) + list(CFLAGS) + ["-o", tmp, source],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                timeout=COMPILE_TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            raise _BuildFailed("C compiler %s failed to run: %s" % (compiler[0], exc)) from None
        if proc.returncode != 0:
            raise _BuildFailed(
                "compiling the native floor failed (%s exited with status %d):\n%s"
                % (" ".join(compiler), proc.returncode, _tail(proc.stdout.decode("utf-8", "replace")))
            )
        os.chmod(tmp, 0o755)
        os.replace(tmp, target)  # atomic: readers see the old name or a whole binary
    except OSError as exc:
        raise _BuildFailed("cannot install the native floor into %s: %s" % (folder, exc)) from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _probe(path: str) -> Optional[str]:
    """None if the binary at ``path`` runs and speaks our format, else why not."""
    expected = "wakelab-floor %d ok" % FLOOR_FORMAT
    try:
        proc = subprocess.run(
            [path, "selftest"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            timeout=PROBE_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return str(exc)
    if proc.returncode != 0 or proc.stdout.decode("utf-8", "replace").strip() != expected:
        return "selftest exited with status %d" % proc.returncode
    return None


def _build() -> FloorBinary:
    if not sys.platform.startswith("linux"):
        raise _BuildFailed("the native floor is built for Linux only (this is %s)" % sys.platform)
    compiler, reason = find_compiler()
    if compiler is None:
        raise _BuildFailed(reason or "no C compiler found")
    source = source_path()
    try:
        with open(source, "rb") as f:
            source_bytes = f.read()
    except OSError as exc:
        raise _BuildFailed("native floor source missing: %s" % exc) from None
    version = _compiler_version(compiler)
    target = os.path.join(cache_root(), _build_key(source_bytes, compiler, version), BINARY_NAME)
    if os.path.isfile(target) and _probe(target) is None:
        return FloorBinary(target, compiler, version)
    # Absent, or present but unusable (the cache was tampered with): build it.
    _compile(compiler, source, target)
    problem = _probe(target)
    if problem is not None:
        raise _BuildFailed("the compiled native floor %s does not run: %s" % (target, problem))
    return FloorBinary(target, compiler, version)


# Outcome of a build (a binary or the reason there is none), per environment:
# CC, PATH and the cache folder decide what a build would do.
_MEMO: Dict[Tuple[str, str, str], object] = {}
_MEMO_LOCK = threading.Lock()


def _memo_key() -> Tuple[str, str, str]:
    return (os.environ.get("CC", ""), os.environ.get("PATH", ""), cache_root())


def _ensure() -> object:
    key = _memo_key()
    with _MEMO_LOCK:
        if key not in _MEMO:
            try:
                _MEMO[key] = _build()
            except _BuildFailed as exc:
                _MEMO[key] = str(exc)
        return _MEMO[key]


def unavailable_reason() -> Optional[str]:
    """None when the native floor can run here (building it if needed), else why not."""
    outcome = _ensure()
    return None if isinstance(outcome, FloorBinary) else str(outcome)


def floor_binary() -> FloorBinary:
    """The built native floor; :class:`NativeFloorUnavailable` says why there is none."""
    outcome = _ensure()
    if isinstance(outcome, FloorBinary):
        return outcome
    raise NativeFloorUnavailable(str(outcome))


def _placement_cpu(params: MeasureParams, role: str) -> int:
    cpu = cpu_for(params.placement, params.notifier_cpu, params.waiter_cpu, role)
    return -1 if cpu is None else cpu


def _floor_args(params: MeasureParams, extra: Optional[Mapping[str, int]]) -> List[str]:
    values = {
        "n": params.n,
        "warmup": params.warmup,
        "settle_us": params.settle_us,
        # Round up: a timeout of 0.5 ms must not become "no timeout".
        "timeout_ms": max(1, int(math.ceil(params.timeout_s * 1000))),
        "planted_delay_us": params.planted_delay_us,
        "planted_after_us": params.planted_after_us,
        "install_n": params.install_n,
        "rounds": params.rounds,
        "warmup_rounds": params.warmup_rounds,
        # -1: not pinned (placement "any"); the binary pins its own threads otherwise.
        "notifier_cpu": _placement_cpu(params, NOTIFIER),
        "waiter_cpu": _placement_cpu(params, WAITER),
        # The binary dies with this process (PR_SET_PDEATHSIG), checked against this pid.
        "parent_pid": os.getpid(),
    }
    values.update(_scheduling_args())
    values.update(extra or {})
    return ["%s=%d" % (key, value) for key, value in values.items()]


def _scheduling_args() -> Dict[str, int]:
    """The waiter's and the notifier's scheduling policies for the binary (``waiter_policy=1
    waiter_priority=80``), from :mod:`wakelab.core.realtime`; nothing when none was asked for."""
    out: Dict[str, int] = {}
    for role, request in (("waiter", realtime.WAITER), ("notifier", realtime.NOTIFIER)):
        if request is not None:
            out[role + "_policy"] = realtime.policy_number(request.policy)
            out[role + "_priority"] = request.priority
    return out


def scheduling_info() -> Dict[str, object]:
    """What the binary's threads were asked to run under, for ``info`` (nothing when nothing was)."""
    out: Dict[str, object] = {}
    for role, request in (("waiter", realtime.WAITER), ("notifier", realtime.NOTIFIER)):
        if request is not None:
            out[role + "_sched"] = request.describe()
            if request.realtime:
                out["rt_budget"] = realtime.rt_budget()
    return out


def receiver_argv(experiment: str, params: MeasureParams, extra: Mapping[str, int]) -> List[str]:
    """The command line of a storm receiver of the binary (``storm-handler``, ``storm-sigwait``),
    which :mod:`wakelab.core.drivers.storm` runs and talks to itself; builds the binary if needed."""
    return [floor_binary().path, experiment] + _floor_args(params, extra)


def _run_timeout_s(experiment: str, params: MeasureParams) -> float:
    """A generous bound on the binary's run time; past it, it is killed."""
    if experiment == "native-sigaction-install":
        ops = (params.rounds + params.warmup_rounds) * params.install_n
        return 30.0 + ops * 20e-6
    planted_s = (params.planted_delay_us + params.planted_after_us) / 1e6
    per_wake = params.settle_max_s + params.timeout_s + planted_s + 0.05
    return 30.0 + params.total_wakes * per_wake


def run_floor(
    experiment: str,
    params: MeasureParams,
    extra: Optional[Mapping[str, int]] = None,
    stdin_text: Optional[str] = None,
) -> str:
    """Run the native floor's ``experiment`` and return its stdout.

    ``extra`` passes further ``key=value`` parameters (tests use ``lose_every``
    to make the notifier skip wakes); ``stdin_text``, when given, is the
    binary's stdin (the settles of ``settles=1``).  Raises
    :class:`NativeFloorError` if the binary cannot start, times out, or exits
    with an error.
    """
    binary = floor_binary()
    argv = [binary.path, experiment] + _floor_args(params, extra)
    timeout_s = _run_timeout_s(experiment, params)
    feed = None if stdin_text is None else stdin_text.encode("ascii")
    try:
        proc = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL if feed is None else None,
            input=feed,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise NativeFloorError(
            "native floor %s did not finish within %.0f s (killed)" % (experiment, timeout_s)
        ) from None
    except OSError as exc:
        raise NativeFloorError("cannot run the native floor %s: %s" % (binary.path, exc)) from None
    stderr = proc.stderr.decode("utf-8", "replace")
    if proc.returncode != 0:
        if proc.returncode < 0:
            how = "was killed by signal %d" % -proc.returncode
        else:
            how = "exited with status %d" % proc.returncode
        raise NativeFloorError(
            "native floor %s %s: %s"
            % (experiment, how, stderr.strip().splitlines()[0] if stderr.strip() else "(no message)")
        )
    return proc.stdout.decode("utf-8", "replace")


def _garbage(experiment: str, why: str, text: str) -> NativeFloorError:
    shown = text[:200] + ("..." if len(text) > 200 else "")
    return NativeFloorError(
        "unexpected output from the native floor %s (%s): %r" % (experiment, why, shown)
    )


def _sections(text: str, experiment: str, kind: str) -> Tuple[List[str], str]:
    """The record lines and the ran-on line of the binary's output, after checking header and end line."""
    lines = text.splitlines()
    if not lines:
        raise _garbage(experiment, "no output", text)
    header = lines[0].split()
    expected = ["wakelab-floor", str(FLOOR_FORMAT), kind, experiment]
    if len(header) != 5 or header[:4] != expected or not header[4].isdigit():
        raise _garbage(experiment, "bad header, expected %r" % " ".join(expected + ["COUNT"]), text)
    count = int(header[4])
    if len(lines) != count + 3 or lines[-1] != "end %d" % count:
        raise _garbage(experiment, "expected %d records, a ran-on line and an end line" % count, text)
    return lines[1:-2], lines[-2]


_RAN_ON_KEYS = {"notifier": "notifier_cpu_seen", "waiter": "waiter_cpu_seen"}


def parse_ran_on(text: str, experiment: str, kind: str = "latency") -> Dict[str, Optional[int]]:
    """Where each side of the experiment last ran: ``{"notifier_cpu_seen": 0, "waiter_cpu_seen": 1}``.

    Only the sides the experiment has are present (a single-threaded
    experiment has no waiter); a CPU the binary could not read is None.
    """
    line = _sections(text, experiment, kind)[1]
    fields = line.split(" ")
    if fields[0] != "ran-on" or len(fields) < 2:
        raise _garbage(experiment, "bad ran-on line %r" % line, text)
    seen: Dict[str, Optional[int]] = {}
    for field in fields[1:]:
        role, _, cpu = field.partition("=")
        key = _RAN_ON_KEYS.get(role)
        if key is None or key in seen or not cpu:
            raise _garbage(experiment, "bad ran-on line %r" % line, text)
        seen[key] = None if cpu == "-" else _int_field(cpu, experiment, text)
    if "notifier_cpu_seen" not in seen:
        raise _garbage(experiment, "bad ran-on line %r" % line, text)
    return seen


def _int_field(field: str, experiment: str, text: str) -> int:
    # int() alone would accept "+1", " 1", "1_0" or "-1"; the format is plain digits: a latency
    # is never negative (the binary prints "stale" for a wake that answered an older notify).
    if not (field.isascii() and field.isdigit()):
        raise _garbage(experiment, "bad record field %r" % field, text)
    return int(field)


def _cpu_field(field: str, experiment: str, text: str) -> int:
    """A CPU number in the cpus trailer: plain digits, or -1 (unknown)."""
    return -1 if field == "-1" else _int_field(field, experiment, text)


LOST = "lost"
STALE = "stale"


def parse_latency_records(text: str, experiment: str) -> List[Union[int, str]]:
    """A latency experiment's records as printed: a ns figure, :data:`LOST` or :data:`STALE` per wake."""
    return [
        line if line in (LOST, STALE) else _int_field(line, experiment, text)
        for line in _sections(text, experiment, "latency")[0]
    ]


def parse_latency_output(text: str, experiment: str) -> List[Optional[int]]:
    """Parse a latency experiment's output: one ns figure per wake, None for a lost or stale one.

    Warm-up wakes are included.  Anything but the exact format (documented in
    the C source) raises :class:`NativeFloorError`.
    """
    return [None if isinstance(r, str) else r for r in parse_latency_records(text, experiment)]


def parse_rate_output(text: str, experiment: str) -> List[Tuple[int, int]]:
    """Parse a rate experiment's output: ``(round_ns, baseline_ns)`` per round, warm-ups included."""
    rounds: List[Tuple[int, int]] = []
    for line in _sections(text, experiment, "rate")[0]:
        fields = line.split(" ")
        if len(fields) != 2:
            raise _garbage(experiment, "bad record %r" % line, text)
        rounds.append(
            (_int_field(fields[0], experiment, text), _int_field(fields[1], experiment, text))
        )
    return rounds


STAMPS_HEADER = "stamps"
STAMPS_END = "end stamps"
CPUS_HEADER = "cpus"
CPUS_END = "end cpus"


def split_cpus(text: str, experiment: str) -> Tuple[str, Optional[List[Tuple[int, int]]]]:
    """``(output, cpus)``: the binary's output without its ``cpus=1`` trailer, and each wake's
    ``(notifier CPU, waiter CPU)`` from it (-1 unknown; None when there is no trailer: the
    process and self-signal experiments do not record them)."""
    lines = text.splitlines()
    at = next((i for i, line in enumerate(lines) if line.startswith(CPUS_HEADER + " ")), None)
    if at is None:
        return text, None
    end = next((i for i in range(at + 1, len(lines)) if lines[i] == CPUS_END), None)
    if end is None:
        raise _garbage(experiment, "bad cpus trailer", text)
    count = _int_field(lines[at].split(" ", 1)[1], experiment, text)
    pairs: List[Tuple[int, int]] = []
    for line in lines[at + 1 : end]:
        fields = line.split(" ")
        if len(fields) != 2:
            raise _garbage(experiment, "bad cpus line", text)
        pairs.append((_cpu_field(fields[0], experiment, text), _cpu_field(fields[1], experiment, text)))
    if len(pairs) != count:
        raise _garbage(experiment, "expected %d cpu pairs" % count, text)
    return "\n".join(lines[:at] + lines[end + 1 :]) + "\n", pairs


def split_stamps(text: str, experiment: str) -> Tuple[str, Optional[Dict[str, object]]]:
    """``(output, stamps)``: the binary's output without its ``stamps=1`` trailer, and the trailer.

    The trailer (see the C source) gives both sides' kernel thread ids and
    each wake's ``t0``: ``{"notifier_tid": .., "waiter_tid": .., "t0_ns": [...]}``.
    ``stamps`` is None when the output has no trailer (the self-signal
    experiment has no waiter to trace).
    """
    lines = text.splitlines()
    at = next((i for i, line in enumerate(lines) if line.startswith(STAMPS_HEADER + " ")), None)
    if at is None:
        return text, None
    head = lines[at].split(" ")
    if (
        len(head) != 4
        or not head[1].startswith("notifier_tid=")
        or not head[2].startswith("waiter_tid=")
        or lines[-1] != STAMPS_END
    ):
        raise _garbage(experiment, "bad stamps trailer", text)
    count = _int_field(head[3], experiment, text)
    t0s = [_int_field(line, experiment, text) for line in lines[at + 1 : -1]]
    if len(t0s) != count:
        raise _garbage(experiment, "expected %d stamps" % count, text)
    return "\n".join(lines[:at]) + "\n", {
        "notifier_tid": _int_field(head[1].partition("=")[2], experiment, text) or None,
        "waiter_tid": _int_field(head[2].partition("=")[2], experiment, text) or None,
        "t0_ns": t0s,
    }


def measure_latency(
    experiment: str,
    params: MeasureParams,
    extra: Optional[Mapping[str, int]] = None,
) -> RawLatency:
    """Wake latencies (ns) of a native latency experiment, warm-ups dropped.

    Closed loop only: the binary has no open-loop mode (:data:`OPEN_LOOP`).
    In a traced run (:func:`~wakelab.core.drivers.recording_t0`) the binary
    is asked for its stamps too, and ``info`` keeps both sides' thread ids
    and ``wake_t0_ns`` (see :func:`split_stamps`).
    """
    if params.mode != "closed":
        raise NativeFloorError(
            "the native floor %s times closed loop only (mode %r asked)" % (experiment, params.mode)
        )
    binary = floor_binary()
    traced = recording_t0()
    extra = dict(extra or {}, cpus=1)  # each wake's CPUs, read outside the window (thread experiments)
    if traced:
        extra["stamps"] = 1
    settles = None
    if params.settle_jitter_us > 0:
        # The same random settles the Python drivers sleep, wake for wake (the module docstring).
        extra["settles"] = 1
        settles = " ".join(str(us) for us in settle_schedule_us(params)) + "\n"
    text, stamps = split_stamps(run_floor(experiment, params, extra, stdin_text=settles), experiment)
    text, cpus = split_cpus(text, experiment)
    records = parse_latency_records(text, experiment)
    wakes = [None if isinstance(r, str) else r for r in records]
    if len(wakes) != params.total_wakes:
        raise NativeFloorError(
            "native floor %s returned %d wakes, expected %d"
            % (experiment, len(wakes), params.total_wakes)
        )
    collector = LatencyCollector(params)
    if cpus is not None and len(cpus) == len(wakes):
        notifier_cpus_, waiter_cpus_ = collector.record_cpus()
        for index, (notifier_cpu, waiter_cpu) in enumerate(cpus):
            notifier_cpus_[index], waiter_cpus_[index] = notifier_cpu, waiter_cpu
    for latency_ns in wakes:
        collector.add(latency_ns)
    info = binary.info()
    info["settle_us"] = params.settle_us
    info["mode"] = "closed"
    info["stale_wakes"] = sum(1 for r in records if r == STALE)
    info.update(parse_ran_on(text, experiment))
    info.update(scheduling_info())
    if stamps is not None:
        info["notifier_tid"] = stamps["notifier_tid"]
        info["waiter_tid"] = stamps["waiter_tid"]
        t0s = stamps["t0_ns"]
        assert isinstance(t0s, list)
        if len(t0s) != len(wakes):
            raise NativeFloorError("native floor %s gave %d stamps for %d wakes" % (experiment, len(t0s), len(wakes)))
        info["wake_t0_ns"] = [t0s[i] for i in range(params.warmup, len(wakes)) if wakes[i] is not None]
    return collector.result(**info)


def measure_rate(experiment: str, params: MeasureParams) -> RawRate:
    """Round times (ns) of a native rate experiment and its empty-loop baseline."""
    binary = floor_binary()
    text = run_floor(experiment, params)
    rounds = parse_rate_output(text, experiment)
    expected = params.warmup_rounds + params.rounds
    if len(rounds) != expected:
        raise NativeFloorError(
            "native floor %s returned %d rounds, expected %d" % (experiment, len(rounds), expected)
        )
    counted = rounds[params.warmup_rounds:]
    info = binary.info()
    info.update(parse_ran_on(text, experiment, "rate"))
    return RawRate(
        n_per_round=params.install_n,
        round_ns=tuple(r[0] for r in counted),
        baseline_round_ns=tuple(r[1] for r in counted),
        warmup_rounds=params.warmup_rounds,
        info=info,
    )
