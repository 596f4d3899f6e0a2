"""The labs' own answers over a grid: what removing the GIL did, what SCHED_FIFO bought the waiter.

A lab whose question spans the cells of a grid names its verdict (:attr:`wakelab.labs.Lab.matrix_verdict`); the grid
runner computes it here (:func:`matrix_verdict`) and stores it as matrix.json's ``verdict``: the figures, and text
``tables`` and ``sentences`` the renderers lay out as they are."""

from __future__ import annotations

import dataclasses
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from wakelab.core.model import ROLE_REALTIME
from wakelab.core.registry import arms_with_role
from wakelab.evidence.matrix import AB_FIGURES, FORCED_GIL as FORCED_GIL, GIL_BUILD as GIL_BUILD, NO_GIL as NO_GIL, MatrixDoc, MatrixEntry, MatrixVerdict, VerdictTable
from wakelab.evidence.matrix import interpreter_role as interpreter_role  # the roles of the GIL A/B, re-exported
from wakelab.formatting import counted, format_ratio, format_us
from wakelab.percentile import median

# The interpreter roles of the GIL A/B, in the order its figures show them.
ROLE_TITLES = {GIL_BUILD: "GIL build", NO_GIL: "free-threaded", FORCED_GIL: "free-threaded, PYTHON_GIL=1"}
# Ratios beyond these (either way) are called a change; between them, about the same.
_CHANGE = 1.5


def _release_order(release: str) -> Tuple[int, ...]:
    try:
        return tuple(int(part) for part in release.split(".") if part)
    except ValueError:
        return ()


def _ratio(a: Optional[float], b: Optional[float]) -> Optional[float]:
    return a / b if a is not None and b else None


@dataclasses.dataclass(frozen=True)
class Ways:
    """How many arms' own no-GIL ÷ GIL ratio grew, shrank, of how many compared."""

    grew: int
    shrank: int
    compared: int

    @classmethod
    def of(cls, ratios: Sequence[Optional[float]]) -> "Ways":
        each = [_change(v) for v in ratios if v is not None]
        return cls(each.count("grew"), each.count("shrank"), len(each))


@dataclasses.dataclass(frozen=True)
class GilFigure:
    """One figure of the GIL A/B (p50, p99 or max; ns) by interpreter role, with the ratios no GIL ÷ GIL and
    GIL=1 ÷ GIL; in a summary, the ``ways`` the arms went."""

    values: Mapping[str, Optional[float]]
    ratio: Optional[float]
    forced_ratio: Optional[float]
    ways: Optional[Ways] = None

    @classmethod
    def of(cls, values: Mapping[str, Optional[float]], ways: Optional[Ways] = None) -> "GilFigure":
        return cls(dict(values), _ratio(values.get(NO_GIL), values.get(GIL_BUILD)),
                   _ratio(values.get(FORCED_GIL), values.get(GIL_BUILD)), ways)

    def role(self, name: str) -> Optional[float]:
        return self.values.get(name)

    def to_dict(self) -> Dict[str, object]:
        out: Dict[str, object] = dict(self.values)
        out.update(ratio=self.ratio, forced_ratio=self.forced_ratio)
        if self.ways is not None:
            out.update(arms_grew=self.ways.grew, arms_shrank=self.ways.shrank, arms_compared=self.ways.compared)
        return out


@dataclasses.dataclass(frozen=True)
class GilRow:
    """One latency ``arm`` under one placement, busy-thread count and release (None: a grid of one release); in the
    summary (``arm`` None), the median over ``arms`` arms of each figure."""

    cpu_threads: int
    placement: str
    release: Optional[str]
    figures: Mapping[str, GilFigure]
    arm: Optional[str] = None
    arms: int = 0

    def to_dict(self) -> Dict[str, object]:
        if self.arm is not None:
            out: Dict[str, object] = {"arm": self.arm, "placement": self.placement, "cpu_threads": self.cpu_threads}
        else:
            out = {"cpu_threads": self.cpu_threads, "placement": self.placement, "arms": self.arms}
        if self.release is not None:
            out["release"] = self.release
        out.update((key, self.figures[key].to_dict()) for key in AB_FIGURES)
        return out


def gil_ab_figures(matrix: MatrixDoc) -> Tuple[List[GilRow], List[GilRow], bool]:
    """``rows``, ``summary``, and whether the grid has several releases: for every latency arm, placement and
    busy-thread count, the GIL build's cell beside the free-threaded build's, by each cell's recorded interpreter."""
    cells = {cell.label: cell for cell in matrix.cells}
    # Several CPython releases (3.13 and 3.13t, 3.14 and 3.14t ...): each free-threaded build is paired
    # with its own release's GIL build, and every row and table says which release.
    several = len({cell.release for cell in cells.values() if cell.role is not None}) > 1
    rows: List[GilRow] = []
    for name, entries in matrix.arms:
        groups: Dict[Tuple[str, str, int], Dict[str, MatrixEntry]] = {}
        for row in entries:
            cell = cells.get(row.cell)
            if cell is None or cell.role is None or row.arm.is_rate or not row.measured:
                continue
            group = (cell.release if several else "", cell.placement, cell.cpu_threads)
            groups.setdefault(group, {}).setdefault(cell.role, row)
        for (release, placement, busy), by_role in sorted(groups.items(), key=lambda kv: (_release_order(kv[0][0]), kv[0][2], kv[0][1])):
            figures = {key: GilFigure.of({role: by_role[role].figures[key] for role in by_role}) for key in AB_FIGURES}
            rows.append(GilRow(busy, placement, release if several else None, figures, arm=name))
    summary: List[GilRow] = []
    for release, busy, placement in sorted({(r.release or "", r.cpu_threads, r.placement) for r in rows},
                                           key=lambda k: (_release_order(k[0]), k[1], k[2])):
        mine = [r for r in rows if (r.release or "", r.cpu_threads, r.placement) == (release, busy, placement)]
        # The ratios of the medians shown (each arm's own ratio is in rows); and how many arms went which way.
        summary.append(GilRow(busy, placement, release if several else None, arms=len(mine), figures={
            key: GilFigure.of({role: median([r.figures[key].role(role) for r in mine]) for role in ROLE_TITLES},
                              Ways.of([r.figures[key].ratio for r in mine]))
            for key in AB_FIGURES}))
    return rows, summary, several


@dataclasses.dataclass(frozen=True)
class LabVerdict(MatrixVerdict):
    """A lab's verdict over a grid, as the grid runner computes it for matrix.json's ``verdict``."""

    def to_dict(self) -> Dict[str, object]:
        return {"title": self.title, "sentences": list(self.sentences), "tables": [t.to_dict() for t in self.tables]}


@dataclasses.dataclass(frozen=True)
class GilAB(LabVerdict):
    """What removing the GIL did."""

    rows: Tuple[GilRow, ...] = ()
    summary: Tuple[GilRow, ...] = ()

    def to_dict(self) -> Dict[str, object]:
        return dict(super().to_dict(), roles=dict(ROLE_TITLES), rows=[r.to_dict() for r in self.rows],
                    summary=[s.to_dict() for s in self.summary])


def _table(title: str, header: Sequence[str], rows: Sequence[Sequence[str]]) -> VerdictTable:
    return VerdictTable(title, tuple(header), tuple(tuple(row) for row in rows))


def gil_ab(matrix: MatrixDoc) -> GilAB:
    """What removing the GIL did: the free-threading lab's verdict."""
    rows, summary, several = gil_ab_figures(matrix)
    figures = ["p50 µs (GIL / no GIL / GIL=1)", "p99 µs", "max µs", "no GIL ÷ GIL: p50", "p99", "max"]
    header = ["busy threads", "placement", "arms"] + figures + ["GIL=1 ÷ GIL: p99"]
    def cells(figures: Mapping[str, GilFigure]) -> List[str]:
        return ([" / ".join(format_us(figures[key].role(role)) for role in ROLE_TITLES) for key in AB_FIGURES]
                + [format_ratio(figures[key].ratio) for key in AB_FIGURES])

    summary_table = [[str(s.cpu_threads), s.placement, str(s.arms)] + cells(s.figures)
                     + [format_ratio(s.figures["p99"].forced_ratio)] for s in summary]
    detail_table = [[str(r.arm), str(r.cpu_threads), r.placement] + cells(r.figures) for r in rows]
    detail_header = ["arm", "busy", "placement"] + figures
    if several:
        header = ["release"] + header
        detail_header = ["release"] + detail_header
        summary_table = [[s.release or ""] + line for s, line in zip(summary, summary_table)]
        detail_table = [[r.release or ""] + line for r, line in zip(rows, detail_table)]
    return GilAB("WHAT REMOVING THE GIL DID (medians over the arms; each figure from this run)",
                 (_table("", header, summary_table), _table("per arm", detail_header, detail_table)),
                 tuple(_gil_sentences(summary)), tuple(rows), tuple(summary))


def _change(ratio: Optional[float]) -> str:
    if ratio is None:
        return "could not be compared"
    if ratio >= _CHANGE:
        return "grew"
    if ratio <= 1 / _CHANGE:
        return "shrank"
    return "stayed about the same"


def _moved(figure: GilFigure) -> str:
    """``grew (12 → 30 µs, 2.5×; grew in 4 of 6 arms, shrank in 1)``."""
    ways = figure.ways or Ways(0, 0, 0)
    return "%s (%s → %s µs, %s; grew in %d of %d arms, shrank in %d)" % (
        _change(figure.ratio), format_us(figure.role(GIL_BUILD)), format_us(figure.role(NO_GIL)), format_ratio(figure.ratio),
        ways.grew, ways.compared, ways.shrank)


def _where(items: Sequence[GilRow]) -> str:
    return "; ".join("%s%d busy, %s" % ("%s: " % s.release if s.release else "", s.cpu_threads, s.placement) for s in items)


def _gil_sentences(summary: Sequence[GilRow]) -> List[str]:
    if not any(s.figures["p50"].ratio is not None for s in summary):
        return ["No A/B: this grid has no pair of cells with the GIL build and the free-threaded build under the same "
                "conditions, so nothing says what removing the GIL did."]
    out = []
    for s in summary:
        busy = s.cpu_threads
        load = "no busy thread" if busy == 0 else counted(busy, "busy Python thread")
        if s.release:
            load = load[0].lower() + load[1:]
        release = "CPython %s, " % s.release if s.release else ""
        out.append(release + "%s, placement %s (median of %s): without the GIL p50 %s, p99 %s, worst case %s." % (
            load if s.release else load[0].upper() + load[1:], s.placement, counted(s.arms, "arm"),
            *(_moved(s.figures[key]) for key in AB_FIGURES)))
    loaded = [s for s in summary if s.cpu_threads > 0 and s.figures["p99"].ratio is not None]
    if loaded:
        grew = [s for s in loaded if (s.figures["p99"].ratio or 0.0) >= _CHANGE]
        shrank = [s for s in loaded if (s.figures["p99"].ratio or 0.0) <= 1 / _CHANGE]
        if grew:
            out.append("Where the tail grew without the GIL (%s): the busy threads no longer wait for a GIL, so each keeps a "
                       "CPU busy, and the woken waiter waits in the kernel's run queue for one -- the GIL's hand-over gone, a "
                       "scheduler tail in its place." % _where(grew))
        if shrank:
            out.append("Where the tail shrank without the GIL (%s): with the GIL the woken waiter must take it from a busy "
                       "thread, which gives it up only when the switch interval (5 ms by default) expires; without it the "
                       "waiter runs as soon as it has a CPU." % _where(shrank))
        placements = {s.placement for s in loaded}
        if placements & {"same", "split"}:
            out.append("Placement: in same the waiter, the notifier and the busy threads share one CPU; in split the waiter "
                       "has a CPU of its own and the busy threads stay on the notifier's (they inherit its CPU mask).")
    forced = [s for s in summary if s.figures["p99"].forced_ratio is not None]
    if forced:
        out.append(
            "PYTHON_GIL=1 on the free-threaded build (the same binary with its GIL back on), p99 against the GIL "
            "build's: %s. Where it tracks the GIL build, the difference above is the GIL's; where it does not, the "
            "free-threaded build with its GIL on behaves unlike the GIL build, and the difference is not the GIL's alone."
            % "; ".join("%s: %s" % (_where([s]), format_ratio(s.figures["p99"].forced_ratio)) for s in forced)
        )
    return out


def _hogs(command: Sequence[str]) -> Optional[int]:
    words = [str(w) for w in command]
    for i, word in enumerate(words):
        if word == "--cpu-procs" and i + 1 < len(words) and words[i + 1].isdigit():
            return int(words[i + 1])
        if word.startswith("--cpu-procs=") and word.split("=", 1)[1].isdigit():
            return int(word.split("=", 1)[1])
    return None


@dataclasses.dataclass(frozen=True)
class RealtimeFigure:
    """One figure of the realtime A/B (p50, p99 or max; ns): the normal waiter's and the FIFO one's."""

    normal: Optional[float]
    fifo: Optional[float]

    @property
    def ratio(self) -> Optional[float]:
        return _ratio(self.fifo, self.normal)

    def to_dict(self) -> Dict[str, Optional[float]]:
        return {"normal": self.normal, "fifo": self.fifo, "ratio": self.ratio}


@dataclasses.dataclass(frozen=True)
class RealtimeRow:
    """A normal waiter and the same one under SCHED_FIFO, both measured in one cell."""

    normal: str
    fifo: str
    cell: str
    cpu_threads: int
    figures: Mapping[str, RealtimeFigure]

    def to_dict(self) -> Dict[str, object]:
        out: Dict[str, object] = {"normal": self.normal, "fifo": self.fifo, "cell": self.cell, "cpu_threads": self.cpu_threads}
        out.update((key, self.figures[key].to_dict()) for key in AB_FIGURES)
        return out


def realtime_ab_figures(matrix: MatrixDoc) -> Tuple[List[RealtimeRow], List[str]]:
    """The realtime A/B's rows (in every cell, a normal waiter against the same one under ``SCHED_FIFO`` 80), and
    why each FIFO arm not measured was not."""
    by_arm = {name: {row.cell: row for row in entries} for name, entries in matrix.arms}
    rows: List[RealtimeRow] = []
    skipped: List[str] = []
    # (normal, FIFO): each realtime arm declares the arm it is under normal scheduling (wakelab.core.model.Role).
    for normal, fifo in [(str(r.against), name) for name, r in arms_with_role(ROLE_REALTIME)]:
        for cell in matrix.cells:
            a, b = by_arm.get(normal, {}).get(cell.label), by_arm.get(fifo, {}).get(cell.label)
            if a is None or b is None:
                continue
            if not b.measured and b.arm.reason and b.arm.reason not in skipped:
                skipped.append("%s: %s" % (fifo, b.arm.reason))
            if not a.measured or not b.measured:
                continue
            rows.append(RealtimeRow(normal, fifo, cell.label, cell.cpu_threads,
                                    {key: RealtimeFigure(a.figures[key], b.figures[key]) for key in AB_FIGURES}))
    return rows, skipped


@dataclasses.dataclass(frozen=True)
class RealtimeAB(LabVerdict):
    """What SCHED_FIFO bought the waiter, with the run's --cpu-procs (``hogs``)."""

    rows: Tuple[RealtimeRow, ...] = ()
    hogs: Optional[int] = None

    def to_dict(self) -> Dict[str, object]:
        return dict(super().to_dict(), rows=[r.to_dict() for r in self.rows], hogs=self.hogs)


def realtime_ab(matrix: MatrixDoc) -> RealtimeAB:
    """What SCHED_FIFO bought the waiter: the realtime lab's verdict."""
    rows, skipped = realtime_ab_figures(matrix)
    hogs = _hogs(matrix.command)
    table = [[r.fifo.replace("-fifo", ""), str(r.cpu_threads)]
             + ["%s / %s" % (format_us(r.figures[key].normal), format_us(r.figures[key].fifo)) for key in ("p50", "p99")]
             + [format_ratio(r.figures[key].ratio) for key in ("p50", "p99")] for r in rows]
    sentences: List[str] = []
    load = counted(hogs, "busy process", "es") + " (--cpu-procs)" if hogs else "no busy process"
    # Without a cell free of busy threads, say from the pair alone when the GIL took realtime's gain back.
    has_idle = any(r.normal == "event" and not r.cpu_threads for r in rows)
    for r in rows:
        if r.normal != "event":
            continue
        p50, p99 = r.figures["p50"], r.figures["p99"]
        threads = r.cpu_threads
        where = "With %s and %s" % (load, counted(threads, "busy Python thread") if threads else "no busy Python thread")
        sentences.append("%s: the SCHED_FIFO waiter's p99 was %s µs against %s µs for the normal one (%s), p50 %s "
                         "against %s µs." % (where, format_us(p99.fifo), format_us(p99.normal), format_ratio(p99.ratio),
                                             format_us(p50.fifo), format_us(p50.normal)))
        if threads and p99.ratio is not None and p99.ratio > 1 / _CHANGE and not has_idle:
            sentences.append("With a busy Python thread the GIL takes back what realtime bought: the FIFO waiter is "
                             "running at once, but it cannot run Python until the busy thread gives up the GIL, at "
                             "the end of its switch interval (5 ms by default).")
    events = {r.cpu_threads: r for r in rows if r.normal == "event"}
    idle = events.get(0)
    for threads, r in sorted(events.items()):
        if not threads or idle is None:
            continue
        p99, idle_p99 = r.figures["p99"], idle.figures["p99"]
        grew = _ratio(p99.fifo, idle_p99.fifo)
        if grew is not None and grew >= 2:
            sentences.append("The GIL took back %s: with %s the FIFO waiter's p99 was %s its p99 without (%s against %s µs) "
                             "-- it runs at once, then waits for the busy thread to give up the GIL." % (
                                 "part of it" if (p99.ratio or 1) < 1 / _CHANGE else "what realtime bought",
                                 counted(threads, "busy Python thread"), format_ratio(grew), format_us(p99.fifo),
                                 format_us(idle_p99.fifo)))
    floors = [r for r in rows if r.normal == "native-condvar"]
    slower = [r for r in floors if (r.figures["p50"].ratio or 0) >= _CHANGE or (r.figures["p99"].ratio or 0) >= _CHANGE]
    if slower:
        sentences.append("In C, SCHED_FIFO did not make the condvar wake faster here (%s). A realtime waiter woken "
                         "where its notifier runs may preempt it while it still holds the mutex it signalled under, or "
                         "be pushed to another CPU; --trace shows which." % "; ".join(
                             "%d busy: p50 %s → %s µs, p99 %s → %s µs" % (
                                 r.cpu_threads, format_us(r.figures["p50"].normal), format_us(r.figures["p50"].fifo),
                                 format_us(r.figures["p99"].normal), format_us(r.figures["p99"].fifo)) for r in slower))
    if not hogs:
        sentences.append("No hog in this run: what realtime buys shows against competing processes (wakelab run "
                         "--lab realtime --cpu-procs 2).")
    sentences += ["Not measured: %s." % s for s in skipped]
    header = ["waiter", "busy threads", "p50 µs (normal / FIFO)", "p99 µs (normal / FIFO)", "FIFO ÷ normal: p50", "p99"]
    return RealtimeAB("WHAT REALTIME SCHEDULING BOUGHT THE WAITER (SCHED_FIFO 80 against the normal policy, both from this run)",
                      (_table("", header, table),), tuple(sentences), tuple(rows), hogs)


GIL_AB, REALTIME_AB = "gil-ab", "realtime-ab"
# A lab's verdict over a grid, by the name the lab gives it (wakelab.labs.Lab.matrix_verdict).
MATRIX_VERDICTS: Dict[str, Callable[[MatrixDoc], LabVerdict]] = {GIL_AB: gil_ab, REALTIME_AB: realtime_ab}


def matrix_verdict(name: str, doc: Mapping[str, object]) -> Dict[str, object]:
    """The verdict ``name`` over the grid runner's matrix document, as matrix.json stores it."""
    return MATRIX_VERDICTS[name](MatrixDoc.from_dict(doc)).to_dict()
