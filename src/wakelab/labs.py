"""Labs: named presets of arms, parameters, comparisons and the prose around them.

Lab 135 reproduces the original "signal vs threading.Event wakeup" lab with
its original parameters.  Later labs widen the question; each names the
pairs of arms whose ratio answers it.  Whether a pair is like for like is
never asserted here: the analysis derives it from the arms' waiter state,
scope and what the waiter does at t0 (:func:`wakelab.analysis.caveats.pair_arms`),
and a test holds every pair of :data:`MATCHED_PAIRS` to it.

A run records :func:`lab_for_run`, not the preset itself: arms chosen with
``--arms`` that are not the lab's own make a lab of their own (``custom``),
and the sentences that speak of how the run was made (one process or worker
processes, pinned or not, closed or open loop) are worded for the run.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from wakelab.core.registry import all_arms, unknown_name_message
from wakelab.core.model import MeasureParams
from wakelab.errors import UsageError

CUSTOM_ID = "custom"


@dataclasses.dataclass(frozen=True)
class Comparison:
    """Arm ``a`` against arm ``b``: the report gives ``a / b`` at p50 and p99."""

    a: str
    b: str


@dataclasses.dataclass(frozen=True)
class LabGrid:
    """The grid a lab runs across when the command line names none of these dimensions.

    ``pythons``: ``""`` (this interpreter) or ``"free-threading"`` (a CPython
    release's GIL build, its free-threaded build, and the free-threaded build
    with ``PYTHON_GIL=1``: :func:`wakelab.harness.interpreters.free_threading_pythons`).
    """

    pythons: str = ""
    cpu_threads: Tuple[int, ...] = ()
    placements: Tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Lab:
    """A preset: which arms, with which parameters, answering which question."""

    id: str
    title: str
    question: str
    arms: Tuple[str, ...]
    params: MeasureParams = MeasureParams()
    comparisons: Tuple[Comparison, ...] = ()
    methodology: Tuple[str, ...] = ()
    limits: Tuple[str, ...] = ()
    reproduce_script: Optional[str] = None
    aliases: Tuple[str, ...] = ()
    # A custom selection: the preset whose arms it replaced (its parameters and comparisons).
    based_on: Optional[str] = None
    # The grid it runs across by default (None: one cell unless the command line asks for more).
    grid: Optional[LabGrid] = None
    # The lab's own verdict over a grid's matrix document, by name (wakelab.analysis.lab_ab.MATRIX_VERDICTS: the
    # free-threading lab's GIL A/B, the realtime lab's FIFO A/B); None: the per-arm tables only.
    matrix_verdict: Optional[str] = dataclasses.field(default=None, compare=False)


@dataclasses.dataclass(frozen=True)
class RunShape:
    """How a run is made, as far as a lab's prose speaks of it."""

    in_process: bool
    workers: int  # fresh worker processes per arm (ignored in process)
    placements: Tuple[str, ...] = ("any",)  # one per cell: any, same or split
    open_loop: bool = False
    repeat: int = 1  # repetitions per arm (wakelab run --repeat)


def _processes(shape: RunShape) -> str:
    """Where each arm ran, as a clause: 'in the runner's own process' or 'in 3 fresh worker processes'."""
    if shape.in_process:
        return "in the runner's own process" + ("" if shape.repeat == 1 else ", %d times" % shape.repeat)
    if shape.repeat > 1:
        return ("in %d repetitions (one pass over all the arms after another), in %d fresh worker processes spread "
                "over them, its wakes split between them and pooled" % (shape.repeat, max(shape.workers, shape.repeat)))
    if shape.workers == 1:
        return "in a fresh worker process of its own"
    return "in %d fresh worker processes, its wakes split between them and pooled" % shape.workers


# The sentences below speak of how a run is made.  The presets hold them as written for the
# original lab; :func:`lab_for_run` rewords each for the run at hand (see _REWORDED).
_ONE_PROCESS = "One machine, one process, one interpreter per run."


def _one_process_for(shape: RunShape) -> str:
    return "One machine and one interpreter per run; each arm ran %s." % _processes(shape)


LAB_135 = Lab(
    id="135-signal-vs-event-wakeup",
    title="Lab 135: signal vs threading.Event wakeup",
    question=(
        "How long does threading.Event take to wake a worker thread, compared with a "
        "SIGUSR1 self-signal reaching its Python handler, and what does installing a "
        "signal handler cost?"
    ),
    arms=("event", "sigusr1-self", "signal-install"),
    params=MeasureParams(n=200, install_n=20000, rounds=7),
    comparisons=(Comparison("event", "sigusr1-self"),),
    methodology=(
        "The sigusr1-self arm spins in the main thread until its handler has run: no "
        "thread sleeps, so no scheduler wake-up is in its figure. The event arm's "
        "worker is asleep in the kernel and must be scheduled back in, so its figure "
        "includes a thread wake-up. Read the ratio as 'a self-signal round trip "
        "against an Event wake-up', not as 'signals beat threads'.",
        "Python runs signal handlers only in the main thread, and only when that "
        "thread next checks for pending signals; a busy-waiting main thread checks "
        "almost at once, a blocked or computing one may not.",
    ),
    limits=(
        _ONE_PROCESS,
        "Not a multi-process signal storm, and no real-time guarantee.",
        "Figures taken in a VM include the hypervisor's idle and wake-up behaviour.",
    ),
    reproduce_script="lab-evidence/135-signal-vs-event-wakeup/results/run_lab.py",
    aliases=("135", "lab135"),
)

# Pairs that answer Lab 135's question like for like: the same waiter state, the same scope and
# the same waiter at t0 on both sides.  There is no spinning pair: sigusr1-self signals its own
# thread, and the spinning thread arms (event-spin, queue-spin) wake another thread which, under
# a GIL, waits for the GIL at t0 instead of polling.
MATCHED_PAIRS = (
    Comparison("pause-handler", "event"),
    Comparison("sigwait-thread-to-main", "event"),
    Comparison("wakeup-fd-select", "pipe"),
)

_UNPINNED = "Figures taken in a VM include the hypervisor's idle and wake-up behaviour; where each side ran is not pinned."


def _unpinned_for(shape: RunShape) -> str:
    vm = "Figures taken in a VM include the hypervisor's idle and wake-up behaviour"
    pinned = [p != "any" for p in shape.placements]
    if not any(pinned):
        return _UNPINNED
    if all(pinned):
        return vm + "; --placement pins the notifier and waiter to virtual CPUs, not to physical ones."
    return vm + "; some cells pin the notifier and waiter (--placement), others leave them unpinned."


_COMMON_LIMITS = (
    "One machine and one interpreter per run; compare interpreters or machines side by side, never across days.",
    _UNPINNED,
)

LAB_MATCHED = Lab(
    id="matched",
    title="Matched pairs: signal vs threading.Event, like for like",
    question=(
        "Lab 135 compared a blocked Event waiter with a spinning signal waiter. With the waiter "
        "state held equal, how do signal wake paths compare with threading.Event and a pipe, and "
        "how far is each above the same experiment in C?"
    ),
    arms=(
        "event", "pause-handler", "sigwait-thread-to-main", "pipe", "wakeup-fd-select",
        "event-spin", "sigusr1-self", "signal-install",
        "native-condvar", "native-sigwait", "native-pipe", "native-self-signal", "native-sigaction-install",
        "native-pause-handler", "native-wakeup-fd-select",
    ),
    comparisons=MATCHED_PAIRS,
    methodology=(
        "Each comparison pairs two arms that are the same experiment but for the mechanism: the "
        "same waiter state, the same scope, and the waiter doing the same thing at t0. A blocked "
        "signal waiter has to be woken by another thread, so the pairs are all blocked and "
        "cross-thread: both waiters parked in the kernel.",
        "sigusr1-self, the spinning signal arm, has no like-for-like Event counterpart. It signals "
        "its own thread, and a thread cannot wait on an Event it sets itself; event-spin wakes "
        "another thread, which under a GIL is not polling at t0 but waiting for the GIL the "
        "notifier holds. sigusr1-self is compared with its C floor only.",
        "The 'vs C' column divides each Python arm's p50 by the p50 of its C floor, run in this "
        "run. Where the C experiment is the same (same scope, waiter state and t1) the ratio is the "
        "interpreter's share; where there is only a nearest floor, the column says so and the ratio "
        "is not the interpreter's share.",
    ),
    limits=_COMMON_LIMITS,
)

_IN_ONE_PROCESS = ", in one process,"


def _in_one_process_for(shape: RunShape) -> str:
    if shape.in_process:
        return "%s, in the runner's own process," % ("" if shape.repeat == 1 else " %d times" % shape.repeat)
    if shape.repeat > 1:
        return (" %d times (one pass over all the arms after another), in %d fresh worker processes of its own "
                "spread over them," % (shape.repeat, max(shape.workers, shape.repeat)))
    if shape.workers == 1:
        return ", in a fresh worker process of its own,"
    return ", in %d fresh worker processes of its own," % shape.workers


_SETTLE = "Blocked waiters announce their wait and are left to settle before t0; spinning waiters poll."


def _settle_for(shape: RunShape) -> str:
    if shape.open_loop:
        return ("Notifies go out on a fixed schedule (open loop) and each latency is taken from the scheduled "
                "instant; waiters are not left to settle first.")
    return _SETTLE


_CATALOGUE_RUNS = "Every arm available here runs in turn%s with the same parameters. %s" % (_IN_ONE_PROCESS, _SETTLE)


LAB_CATALOGUE = Lab(
    id="catalogue",
    title="The wake-mechanism catalogue",
    question=(
        "How long does each common way of waking a waiter in Python take on this machine -- threads, "
        "signals, file descriptors, asyncio and processes -- and how far above the native floor is each?"
    ),
    arms=("*",),
    comparisons=MATCHED_PAIRS,
    methodology=(
        _CATALOGUE_RUNS,
        "Arms are grouped by family. Compare within one waiter state; the verdict's ratios are the "
        "matched pairs that answer Lab 135's question fairly. 'vs C' is each arm's p50 over its C "
        "floor's: the interpreter's share where the floor is the same experiment, and marked "
        "'nearest floor' where it is only the closest one.",
    ),
    limits=_COMMON_LIMITS,
)

_CHILDREN_STARTED = "Children are started once per arm; start-up is in no sample."


def _children_started_for(shape: RunShape) -> str:
    if shape.in_process or shape.workers == 1:
        return _CHILDREN_STARTED
    return "Children are started once per arm in each worker process; start-up is in no sample."


LAB_PROCESSES = Lab(
    id="processes",
    title="Waking another process",
    question=(
        "How long does it take to wake a waiter in another process -- by signal, pipe, eventfd or "
        "multiprocessing -- compared with waking a thread?"
    ),
    arms=(
        "kill-sigwait-child", "pipe-process", "eventfd-fork", "mp-event", "mp-queue",
        "event", "pipe", "native-kill-sigwait-child", "native-pipe-process", "native-eventfd-fork",
        "native-condvar", "native-pipe",
    ),
    comparisons=(Comparison("pipe-process", "pipe"), Comparison("mp-event", "event")),
    methodology=(
        "t0 is taken in the parent and t1 in the child. Both are perf_counter_ns(), which on Linux "
        "reads CLOCK_MONOTONIC: one clock for every process of the machine, so the difference is "
        "meaningful across processes. " + _CHILDREN_STARTED,
    ),
    limits=_COMMON_LIMITS,
)

# -- the hand-off lab ----------------------------------------------------------------------------

HANDOFF_ID = "handoff"

LAB_HANDOFF = Lab(
    id=HANDOFF_ID,
    title="Hand-offs: threads, subinterpreters or processes",
    question=(
        "To hand work to another thread, another interpreter or another process, what does the hand-off cost -- "
        "from deciding to submit to the first statement on the other side -- and what does waking a subinterpreter "
        "cost by its queue against a pipe?"
    ),
    arms=(
        "thread-pool-submit", "interp-pool-submit", "process-pool-submit",
        "interp-queue", "interp-pipe", "queue", "pipe",
        "native-condvar", "native-pipe", "native-pipe-process",
    ),
    comparisons=(
        Comparison("interp-pool-submit", "thread-pool-submit"),
        Comparison("process-pool-submit", "thread-pool-submit"),
        Comparison("interp-queue", "interp-pipe"),
        Comparison("interp-pipe", "pipe"),
    ),
    methodology=(
        "Each executor has one worker, started and warmed up before the first counted wake: a sample is "
        "executor.submit(task) to the task's first statement on an idle worker, whatever the executor does in "
        "between (queueing, pickling, a feeder thread, a pipe, an interpreter switch). The process pool uses the "
        "interpreter's default start method, forkserver where that default is fork (the measuring process has "
        "threads); the evidence records which.",
        "interp-queue and interp-pipe wake a thread running inside a subinterpreter (concurrent.interpreters). "
        "concurrent.interpreters.Queue.get() polls every 10 ms instead of blocking in the kernel, so its settle has "
        "a random part of at least 20 ms: a fixed settle would lock onto the poll's phase and report a constant. "
        + _CHILDREN_STARTED,
    ),
    limits=_COMMON_LIMITS + (
        "Subinterpreters and InterpreterPoolExecutor need CPython 3.14 or newer: elsewhere their arms are skipped "
        "with the reason (wakelab run --python 3.14 runs them).",
    ),
    aliases=("interpreters", "executors"),
)

# -- the free-threading lab -----------------------------------------------------------------------

FREE_THREADING_ID = "free-threading"

LAB_FREE_THREADING = Lab(
    id=FREE_THREADING_ID,
    title="Free-threading: the same CPython with the GIL on and off",
    question=(
        "What does removing the GIL do to wake latency -- p50, p99 and the worst case -- for thread, queue and fd "
        "wake-ups, with and without busy Python threads beside the waiter, on one CPU or two?"
    ),
    arms=("event", "lock-handoff", "queue", "simplequeue", "pipe", "eventfd"),
    params=MeasureParams(n=300),
    methodology=(
        "Every CPython release found with both builds (3.13 and 3.13t, 3.14 and 3.14t ...) three ways, by default: "
        "its GIL build, its free-threaded build (GIL off), and the free-threaded build run with PYTHON_GIL=1 (its GIL "
        "back on); wakelab interpreters build 3.13t makes the first two from one source with the same flags. Each is "
        "a column of the table, a free-threaded build only ever set beside its own release's GIL build; each cell of "
        "the grid is a complete run of its own under cells/.",
        "Busy threads (0, 1, 2) are pure-Python loops in the measuring process, started before the arm: under a GIL "
        "they compete with the waiter for it; without one they compete for CPUs only. Placement same pins the "
        "notifier, the waiter and the busy threads to one CPU; split puts the waiter on a second CPU, the busy "
        "threads staying with the notifier (they inherit its CPU mask).",
        "The table pairs cells by the interpreter each recorded (free-threaded build, GIL on as it ran), never by "
        "name: ratios are the free-threaded build's figure over the GIL build's, under the same conditions. Each "
        "arm's summary.txt in its cell says where each wake's notifier and waiter ran.",
    ),
    limits=_COMMON_LIMITS + (
        "The GIL and free-threaded builds differ by more than the GIL (reference counting, allocator, "
        "specialization); the PYTHON_GIL=1 column separates the GIL itself from the rest.",
    ),
    aliases=("ft", "nogil"),
    grid=LabGrid(pythons=FREE_THREADING_ID, cpu_threads=(0, 1, 2), placements=("same", "split")),
    matrix_verdict="gil-ab",
)


# -- beyond the original lab's limits: signal storms and realtime scheduling -----------------------

STORM_ARMS = tuple("storm-%s-%s" % (signal, receiver) for receiver in ("handler", "sigwait", "wakeup-fd", "c-handler", "c-sigwait")
                   for signal in ("usr1", "rt")) + ("storm-usr1-handler-threads", "storm-rt-handler-threads")

LAB_STORMS = Lab(
    id="storms",
    title="Signal storms: how much of a storm reaches the code",
    question=(
        "When many processes signal one Python program at once, how many of the signals does the program's code "
        "see -- for a standard signal (SIGUSR1) and a real-time one (SIGRTMIN), received by a Python handler, by "
        "a thread in sigtimedwait, through the wakeup fd, and in C -- how soon does it react, and how much of its "
        "main thread's work does the storm cost?"
    ),
    arms=STORM_ARMS,
    params=MeasureParams(n=200),
    methodology=(
        "Four sender processes (the -threads arms: four threads of the receiving process) each call os.kill on the "
        "receiver as fast as they can, 100 sends for every counted probe (at most 200,000 each, and for at most "
        "30 s); in open loop (--mode open) each sends one signal every --interval-us instead. Sent counts the kill "
        "calls that returned without error (a real-time signal refused with EAGAIN, its queue full, is counted "
        "apart); delivered counts how many times the receiving code ran for the signal: the Python handler's calls, "
        "sigtimedwait's returns, the bytes read from the wakeup fd (CPython's C handler writes one for each delivery "
        "it sees), the C handler's runs. What is still pending when the receiver stops looking (it waits until "
        "no delivery came for 50 ms) is flushed by the clean-up, never counted delivered. The delivery ratio is "
        "delivered over sent.",
        "Reaction: sender 0 stamps t0 right before a probe's kill, one of its sends in 100; each sample runs to the "
        "first delivery at or after that kill, whichever sender's signal it answers -- how long after a send the "
        "receiving code next runs. Lost work: the receiver's main thread runs a pure loop (in C for the C "
        "receivers) storm-free for 0.1 s before the storm and throughout it; the lost share is one minus the "
        "storm's rate over the storm-free one, the storm's whole cost to that thread: handling the signal and "
        "the senders' share of the CPUs alike.",
        "Each storm runs%s with the same parameters; the senders are started, and wait, before the storm-free "
        "pass, so that no start-up is in any figure." % _IN_ONE_PROCESS,
    ),
    limits=_COMMON_LIMITS + (
        "A storm's size and rate are the lab's (100 sends a probe from each of four senders); a program under another "
        "storm, or doing other work between bytecodes, sees another share.",
    ),
    aliases=("storm", "signal-storms"),
)


LAB_REALTIME = Lab(
    id="realtime",
    title="Realtime scheduling: what SCHED_FIFO buys a Python waiter, and when the GIL takes it back",
    question=(
        "With a CPU hog on the machine (--cpu-procs) and with a busy Python thread beside the waiter (--cpu-threads), "
        "what does running the waiter thread under SCHED_FIFO buy a threading.Event wake -- p50 and p99 -- and how "
        "does that compare with the same in C?"
    ),
    arms=("event", "event-fifo", "native-condvar", "native-condvar-fifo"),
    params=MeasureParams(n=300),
    comparisons=(Comparison("event-fifo", "event"), Comparison("native-condvar-fifo", "native-condvar")),
    methodology=(
        "event-fifo is the event arm with its waiter thread switched to SCHED_FIFO priority 80 by itself "
        "(os.sched_setscheduler(0, ...) from the thread: that thread alone, on Linux), and put back before it ends; "
        "native-condvar-fifo does the same in C. The notifier stays a normal task (wakelab run --notifier-policy "
        "changes it), and so do the busy threads and processes: every switch sets SCHED_RESET_ON_FORK.",
        "The grid runs every arm with no busy Python thread and with one (--cpu-threads 0,1), the normal and FIFO "
        "arms taking turns within each cell's repetitions, so that both sides of each ratio meet the same machine. "
        "Give the hog with --cpu-procs N: busy processes for the whole run.",
        "Realtime arms need root, or an RLIMIT_RTPRIO of 80; elsewhere they are skipped with the reason.",
    ),
    limits=_COMMON_LIMITS + (
        "Realtime tasks together may run at most kernel.sched_rt_runtime_us of every sched_rt_period_us on a CPU "
        "(950000 of 1000000 by default): a waiter that blocks never meets the limit; a FIFO thread that spins "
        "is stopped for the rest of each period.",
    ),
    aliases=("rt", "sched-fifo"),
    grid=LabGrid(cpu_threads=(0, 1)),
    matrix_verdict="realtime-ab",
)


_LABS: List[Lab] = [LAB_135, LAB_MATCHED, LAB_CATALOGUE, LAB_PROCESSES, LAB_HANDOFF, LAB_FREE_THREADING, LAB_STORMS,
                    LAB_REALTIME]


def _all_comparisons() -> Tuple[Comparison, ...]:
    seen: List[Comparison] = []
    for lab in _LABS:
        seen += [c for c in lab.comparisons if c not in seen]
    return tuple(seen)


# ``--lab custom --arms A,B``: a selection of arms not taken from a preset (the REPRODUCE line of
# a custom run names it).  It compares any pair of a preset whose both arms it runs.
LAB_CUSTOM = Lab(
    id=CUSTOM_ID,
    title="Custom selection",
    question="How long does each selected arm take on this machine?",
    arms=(),
    comparisons=_all_comparisons(),
    limits=_COMMON_LIMITS,
)

# Sentences of the presets that speak of how the run was made, and how to word each for a run.
_REWORDED: Dict[str, Callable[[RunShape], str]] = {
    _ONE_PROCESS: _one_process_for,
    _UNPINNED: _unpinned_for,
    _IN_ONE_PROCESS: _in_one_process_for,
    _SETTLE: _settle_for,
    _CHILDREN_STARTED: _children_started_for,
}


def all_labs() -> List[Lab]:
    """The presets (``custom`` is not one: it has no arms of its own)."""
    return list(_LABS)


def lab_names() -> List[str]:
    return [lab.id for lab in _LABS]


def get_lab(name: str) -> Lab:
    """The lab called ``name`` (id or alias, or ``custom``); :class:`UsageError` lists the valid ones."""
    for lab in _LABS + [LAB_CUSTOM]:
        if name == lab.id or name in lab.aliases:
            return lab
    aliases = [alias for lab in _LABS for alias in lab.aliases]
    raise UsageError(unknown_name_message("lab", name, lab_names() + [CUSTOM_ID], also=aliases))


def lab_arm_names(lab: Lab) -> List[str]:
    """The lab's arms; ``*`` stands for every registered arm."""
    if lab.arms == ("*",):
        return [arm.name for arm in all_arms()]
    return list(lab.arms)


def _name_list(names: Sequence[str], most: int = 6) -> str:
    if len(names) <= most:
        return ", ".join(names)
    return "%s and %d more" % (", ".join(names[:most]), len(names) - most)


def _pairs(comparisons: Sequence[Comparison]) -> str:
    return ", ".join("%s / %s" % (c.a, c.b) for c in comparisons)


def custom_lab(base: Lab, arm_names: Sequence[str]) -> Lab:
    """The lab of ``arm_names`` chosen instead of ``base``'s own arms: ``custom``, not ``base``.

    It keeps ``base``'s parameters and those of its comparisons whose both arms were chosen,
    and claims none of its question.
    """
    names = list(arm_names)
    kept = tuple(c for c in base.comparisons if c.a in names and c.b in names)
    methodology = []
    if base.id == CUSTOM_ID:
        methodology.append("These arms were chosen with --arms: %s." % ", ".join(names))
        source = "the preset labs"
    else:
        methodology.append(
            "These arms were chosen with --arms instead of the %s lab's own (%s): %s. A selection is a lab of "
            "its own, recorded as custom, and claims none of that lab's question."
            % (base.id, _name_list(lab_arm_names(base)), ", ".join(names))
        )
        source = "the %s lab" % base.id
    runs = "Each arm runs in turn%s with the same parameters." if len(names) > 1 else "The arm runs%s with the parameters given."
    methodology.append("%s %s" % (runs % _IN_ONE_PROCESS, _SETTLE))
    if kept:
        methodology.append(
            "Ratios reported: %s, kept from %s because both arms of each were chosen. Compare other arms only "
            "within one waiter state and scope: the caveats say where a pair is not like for like." % (_pairs(kept), source)
        )
    else:
        methodology.append(
            "No ratio is reported: no comparison of %s has both its arms in this selection. Read the arms side by "
            "side, within one waiter state and scope." % source
        )
    return Lab(
        id=CUSTOM_ID,
        title="Custom selection: " + _name_list(names),
        question=("How long does each of these arms take on this machine: %s?" % _name_list(names, most=12)
                  if len(names) > 1 else "How long does %s take on this machine?" % names[0]),
        arms=tuple(names),
        params=base.params,
        comparisons=kept,
        methodology=tuple(methodology),
        limits=_COMMON_LIMITS,
        based_on=None if base.id == CUSTOM_ID else base.id,
        # The base's grid and its table over the grid stay: only the arms were chosen.
        grid=base.grid,
        matrix_verdict=base.matrix_verdict,
    )


def is_own_selection(lab: Lab, arm_names: Sequence[str]) -> bool:
    """True when ``arm_names`` are ``lab``'s own arms (in any order)."""
    return lab.id != CUSTOM_ID and sorted(arm_names) == sorted(lab_arm_names(lab))


def _reword(text: str, shape: RunShape) -> str:
    for sentence, reword in _REWORDED.items():
        if sentence in text:
            text = text.replace(sentence, reword(shape))
    return text


def lab_for_run(lab: Lab, arm_names: Sequence[str], shape: RunShape) -> Lab:
    """The lab a run of ``arm_names`` under ``lab`` records: ``lab`` itself when they are its own
    arms, else :func:`custom_lab`; its methodology and limits worded for ``shape``."""
    chosen = lab if is_own_selection(lab, arm_names) else custom_lab(lab, arm_names)
    return dataclasses.replace(
        chosen,
        methodology=tuple(_reword(p, shape) for p in chosen.methodology),
        limits=tuple(_reword(p, shape) for p in chosen.limits),
    )
