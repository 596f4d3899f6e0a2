"""A soak past its raw-sample cap is usable: ``show --hist``, ``report`` and ``compare`` read it as it is kept.

Beyond ``raw_cap`` a soak keeps the raw samples of its first whole chunks and
folds every wake into a log-linear histogram (``wakelab.harness.soak``).  Here:

- ``show --hist`` draws every wake, from the histogram (its counts add up to
  the summary's n, not to the kept raw samples), and says so;
- ``report`` draws its histogram and ECDF from every wake and says where each
  figure comes from;
- ``compare`` resamples the kept chunks, one unit each, and says "compared on
  the first K of N wakes"; a bundle whose kept samples do not line up with its
  workers' records is refused with one line;
- the callers that need every raw wake (the raw-samples CSV) still refuse.

Most bundles are made by the soak's own code (``run_soak``) with the worker
replaced by a deterministic fake and a fake clock, so that chunks, cap and
figures are exact and the tests cost no measuring; two real soaks of
``sigusr1-self`` (a plain one and one with a planted delay) check the whole
path end to end.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from typing import Any, Dict, Iterator, List, Tuple

import numpy as np
import pytest

from wakelab.analysis.hdr import RELATIVE_ERROR, LogLinearHistogram
from wakelab.analysis.histogram import (
    arm_histogram,
    log_histogram,
    log_histogram_of_counters,
    log_histogram_weighted,
    weighted_percentile,
)
from wakelab.analysis.stats import percentile
from wakelab.cli import main
from wakelab.core.model import MeasureParams, RawLatency
from wakelab.errors import EvidenceError
from wakelab.evidence import bundle
from wakelab.evidence.load import load_samples, load_summary
from wakelab.evidence.model import Bundle
from wakelab.formatting import format_ns
from wakelab.harness.soak import run_soak
from test_soak import _plan

# The fake soak: 2 s of fake time at 8192 wakes a second (a power of two: the soak's sizing is exact), so a
# first chunk of 4545 wakes (the soak's guess from the settle time) and then chunks of 819 (chunk_s 0.1 s);
# raw samples capped at 8000: the first five chunks (4545 + 4 x 819 = 7821 wakes) are kept.
FAKE_CAP = 8000
FAKE_CHUNKS_KEPT = [4545, 819, 819, 819, 819]
FAKE_KEPT = sum(FAKE_CHUNKS_KEPT)
FAKE_KEPT_CHUNKS = len(FAKE_CHUNKS_KEPT)
FAKE_PER_WAKE_S = 1.0 / 8192




class _FakePool:
    def __init__(self, python: Any = None) -> None:
        pass

    def close(self) -> None:
        pass


def fake_soak(folder: str, seed: int, scale: float = 1.0, outlier_ns: int = 0, raw_cap: int = FAKE_CAP) -> Dict[str, Any]:
    """A soak bundle made by ``run_soak`` itself, its workers replaced by a deterministic fake.

    Each chunk's wakes are lognormal around 20 µs times ``scale`` (each chunk at its own level, as
    workers differ); the last chunk (never kept) ends with one wake of ``outlier_ns`` when given.
    """
    from wakelab.harness import workers

    now = [0.0]
    chunks = [0]

    def clock() -> float:
        return now[0]

    def run_workers(arm_name: str, params: MeasureParams, conditions: Any, **_: Any) -> List[Any]:
        rng = np.random.default_rng([seed, chunks[0]])
        level = 20_000 * scale * (1 + 0.05 * rng.standard_normal())
        values = np.maximum(1, level * rng.lognormal(0.0, 0.3, params.n)).astype(np.int64)
        chunks[0] += 1
        now[0] += (params.n + params.warmup) * FAKE_PER_WAKE_S
        if outlier_ns and now[0] >= 2.0:
            values[-1] = outlier_ns
        raw = RawLatency(samples_ns=tuple(int(v) for v in values), lost=0, warmup_discarded=params.warmup)
        return [workers.WorkerResult(raw=raw, interpreter={}, applied={}, pid=1000 + chunks[0])]

    os.makedirs(folder, exist_ok=True)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(workers, "run_workers", run_workers)
        patch.setattr(workers, "WorkerPool", _FakePool)
        # A fixed settle (no random part): the chunk sizes below follow from the settle time.
        summary, error = run_soak(_plan(folder, settle_jitter_us=0), 2.0, raw_cap=raw_cap, checkpoint_s=1000.0, chunk_s=0.1,
                                  clock=clock)
    assert error is None and summary["complete"] is True
    return summary


@pytest.fixture(scope="module")
def soaks(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, str]:
    """Fake soaks past their cap: two alike (A/A), one 1.5 times slower, and one with a far outlier past the cap."""
    root = tmp_path_factory.mktemp("soaks")
    made = {}
    for name, seed, scale, outlier in (("a", 1, 1.0, 0), ("b", 2, 1.0, 0), ("slow", 3, 1.5, 0), ("outlier", 4, 1.0, 90_000_000)):
        made[name] = str(root / name)
        fake_soak(made[name], seed, scale, outlier)
    return made


def copy_bundle(src: str, dst: str) -> str:
    shutil.copytree(src, dst)
    return dst


def edit_summary(folder: str, edit: Any) -> None:
    path = os.path.join(folder, bundle.SUMMARY_JSON)
    with open(path, encoding="utf-8") as fh:
        doc = json.load(fh)
    edit(doc)
    bundle.atomic_write_text(path, bundle.dumps(doc))


def cli(capsys: pytest.CaptureFixture, *args: str) -> Tuple[int, str, str]:
    status = main(list(args))
    out, err = capsys.readouterr()
    return status, out, err


def bin_counts(text: str) -> List[int]:
    """The count of every bin row of ``show --hist`` output (tests/test_hist.py's reading), the 0 ns row included."""
    rows = re.findall(r"^ +\S+ [nµm]?s – +\S+ [nµm]?s +(\d+)(?: |$)", text, flags=re.MULTILINE)
    zeros = re.findall(r"^ +0 ns +(\d+)(?: |$)", text, flags=re.MULTILINE)
    return [int(m) for m in rows + zeros]


# --- the fake soak is what the brief says: past its cap, whole chunks kept ---------------------


def test_the_fake_soak_is_past_its_cap_with_whole_chunks_kept(soaks: Dict[str, str]) -> None:
    summary = load_summary(soaks["a"])
    entry = summary["arms"][0]
    n = entry["latency"]["n"]
    assert summary["soak"]["raw_kept"] == FAKE_KEPT < FAKE_CAP < n
    assert summary["soak"]["figures"]["percentiles_from"] == "histogram"
    assert [w["n"] for w in entry["workers"]] == FAKE_CHUNKS_KEPT
    kept = Bundle.load(soaks["a"]).kept_latency_samples(Bundle.load(soaks["a"]).arms()[0])
    assert (kept.kept, kept.total, kept.every_wake) == (FAKE_KEPT, n, False)


# --- analysis: weighted binning ---------------------------------------------------------------


def test_weighted_values_bin_exactly_as_the_same_values_repeated() -> None:
    rng = np.random.default_rng(7)
    values = np.unique(rng.integers(0, 5_000_000, 300))
    counts = rng.integers(1, 50, values.size)
    repeated = np.repeat(values, counts)
    weighted = log_histogram_weighted(values, counts)
    plain = log_histogram(repeated.tolist())
    assert weighted == plain
    for q in (0.0, 1.0, 50.0, 99.0, 99.9, 100.0):
        assert weighted_percentile(values.astype(float), counts, q) == pytest.approx(percentile(sorted(repeated.tolist()), q), rel=1e-12)


def test_counters_rebinned_hold_every_wake_within_the_histograms_precision() -> None:
    rng = np.random.default_rng(11)
    raw = np.concatenate([rng.lognormal(np.log(20_000), 0.4, 50_000), [3.0, 0.0, 4e8]]).astype(np.int64)
    hist = LogLinearHistogram()
    hist.record_many(raw)
    binned = log_histogram_of_counters(hist, raw_kept=123)
    exact = log_histogram(raw.tolist(), bins_per_decade=binned.bins_per_decade)
    assert binned.from_counters and binned.raw_kept == 123 and binned.relative_error == RELATIVE_ERROR
    assert binned.n == len(raw) == sum(b.count for b in binned.bins) + binned.zero_count
    assert (binned.min_ns, binned.max_ns, binned.zero_count) == (0, 400_000_000, 1)
    assert [(b.low_ns, b.high_ns) for b in binned.bins] == [(b.low_ns, b.high_ns) for b in exact.bins]
    # A wake may land in the neighbouring bin only when it lies within the precision of an edge.
    near_edge = sum(1 for v in raw.tolist() if v and any(abs(v - b.low_ns) <= v * RELATIVE_ERROR for b in exact.bins))
    assert sum(abs(a.count - b.count) for a, b in zip(binned.bins, exact.bins)) <= 2 * near_edge
    # p50 and p99 are the histogram's own: summary.json's past the cap.
    assert binned.p50_ns == hist.percentile_ns(50.0) and binned.p99_ns == hist.percentile_ns(99.0)
    values, counts = hist.weighted_values()
    assert sum(counts) == hist.total and values[0] == 0.0 and values[-1] == 4e8 and values == sorted(values)


def test_distribution_weighted_window_and_ecdf_match_the_values_repeated() -> None:
    from wakelab.report import distribution

    rng = np.random.default_rng(5)
    values = np.unique(rng.lognormal(np.log(20_000), 0.5, 2000).astype(np.int64)).astype(np.float64)
    values = np.append(values, [5e8])  # one far outlier
    counts = rng.integers(1, 30, values.size)
    counts[-1] = 1
    repeated = np.repeat(values, counts)
    values_, counts_, repeated_ = values.tolist(), counts.tolist(), repeated.tolist()
    assert distribution.histogram_window(values_, counts_) == distribution.histogram_window(repeated_)
    x, y = distribution.ecdf_points(values_, counts_)
    share_at = {v: float(np.count_nonzero(repeated <= v)) / repeated.size for v in x}
    assert y == pytest.approx([share_at[v] for v in x])
    assert y[-1] == 1.0 and x[-1] == 5e8 and len(x) <= distribution.ECDF_MAX_POINTS + 1
    edges = np.geomspace(15_000, 60_000, 31).tolist()
    shares, below, beyond = distribution.binned_shares(values_, counts_, edges)
    raw_shares, raw_below, raw_beyond = distribution.binned_shares(repeated_, None, edges)
    assert shares == pytest.approx(raw_shares) and (below, beyond) == (raw_below, raw_beyond)
    assert beyond >= 1 and sum(shares) + (below + beyond) / repeated.size == pytest.approx(1.0)
    # The same bins as numpy's histogram of the wakes.
    assert shares == pytest.approx((np.histogram(repeated, bins=edges)[0] / repeated.size).tolist())


def test_weighted_values_stand_each_wake_at_its_counter_and_the_extremes_exactly() -> None:
    hist = LogLinearHistogram()
    hist.record_many([5000, 5001, 9_999_999])  # 5000 and 5001 share a counter 4 ns wide; 9,999,999 one 8192 ns wide
    values, counts = hist.weighted_values()
    assert values == [5000.0, 5001.5, 9_999_999.0] and counts == [1, 1, 1]
    one = LogLinearHistogram()
    one.record_many([7_777_777])
    assert [list(v) for v in one.weighted_values()] == [[7_777_777.0], [1]]


# --- show --hist -----------------------------------------------------------------------------


def test_show_hist_of_a_soak_past_its_cap_counts_every_wake(soaks: Dict[str, str], capsys: pytest.CaptureFixture) -> None:
    summary = load_summary(soaks["outlier"])
    latency = summary["arms"][0]["latency"]
    n, kept = latency["n"], summary["soak"]["raw_kept"]
    status, out, err = cli(capsys, "show", soaks["outlier"], "--hist")
    assert status == 0 and err == ""
    assert sum(bin_counts(out)) == n != kept
    flat = " ".join(out.split())
    assert "event (blocked waiter, cross-thread): %d wakes" % n in flat
    assert "the histogram holds all %d wakes, read from the soak's log-linear histogram" % n in flat
    assert "within 0.049% of its own" in flat and "keeps the first %d raw samples" % kept in flat
    # The far outlier came after the cap: only the histogram has it; the figures are summary.json's.
    samples = load_samples(soaks["outlier"], summary["arms"][0])
    assert max(samples["samples_ns"]) < latency["max_ns"] == 90_000_000
    assert "max %s" % format_ns(latency["max_ns"]) in out and "90.0 ms" in out
    assert "p50 %s" % format_ns(latency["p50_ns"]) in out and "p99 %s" % format_ns(latency["p99_ns"]) in out


def test_show_hist_under_the_cap_is_unchanged(tmp_path, capsys: pytest.CaptureFixture) -> None:
    folder = str(tmp_path / "under")
    summary = fake_soak(folder, 9, raw_cap=10**7)
    n = summary["arms"][0]["latency"]["n"]
    assert summary["soak"]["raw_kept"] == n
    status, out, err = cli(capsys, "show", folder, "--hist")
    assert status == 0 and err == "" and sum(bin_counts(out)) == n
    assert "log-linear" not in out
    kept = Bundle.load(folder).kept_latency_samples(Bundle.load(folder).arms()[0])
    assert arm_histogram(kept) == log_histogram(kept.samples_ns)


def test_a_soak_histogram_that_does_not_hold_n_wakes_is_refused_in_one_line(soaks: Dict[str, str], tmp_path,
                                                                           capsys: pytest.CaptureFixture) -> None:
    folder = copy_bundle(soaks["a"], str(tmp_path / "edited"))
    path = os.path.join(folder, "samples", "event.json")
    with open(path, encoding="utf-8") as fh:
        doc = json.load(fh)
    first = doc["histogram"]["counts"][0]
    first[1] += 5
    doc["histogram"]["total"] += 5
    bundle.atomic_write_text(path, json.dumps(doc))
    status, out, err = cli(capsys, "show", folder, "--hist")
    n = load_summary(folder)["arms"][0]["latency"]["n"]
    assert status == 2 and out == ""
    assert err == ("wakelab: error: %s: arm event is a soak past its raw-sample cap, but its samples file has a histogram "
                   "of %d wakes where summary.json says n = %d: the bundle was edited or mixed\n" % (folder, n + 5, n))


# --- report ----------------------------------------------------------------------------------


def test_report_of_a_soak_past_its_cap_plots_every_wake_and_says_where_figures_come_from(
        soaks: Dict[str, str], tmp_path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("plotly")
    from wakelab.report import distribution

    drawn: List[Any] = []
    real = distribution.distribution_chart

    def spy(chart_id: str, series: Any, **kwargs: Any) -> Any:
        drawn.extend(series)
        return real(chart_id, series, **kwargs)

    monkeypatch.setattr(distribution, "distribution_chart", spy)
    out_path = str(tmp_path / "report.html")
    status, out, err = cli(capsys, "report", soaks["outlier"], "-o", out_path, "-q")
    assert status == 0 and err == ""
    summary = load_summary(soaks["outlier"])
    latency = summary["arms"][0]["latency"]
    n, kept = latency["n"], summary["soak"]["raw_kept"]
    # The distribution is drawn from the histogram: every wake, the outlier after the cap included.
    assert len(drawn) == 1 and drawn[0].weights is not None
    assert int(np.sum(drawn[0].weights)) == n and max(drawn[0].samples_ns) == 90_000_000
    with open(out_path, encoding="utf-8") as fh:
        page = " ".join(fh.read().split())
    assert "Histogram and ECDF of all %s wakes, from the soak&#x27;s log-linear histogram" % format(n, ",") in page
    # The workers' spread was computed on the kept raw samples, and the page says so.
    assert "from the first %s of %s wakes (the raw samples kept)" % (format(kept, ","), format(n, ",")) in page
    # The figures are summary.json's, as for any run.
    assert "p50 <b>%s</b>" % format_ns(latency["p50_ns"]) in page
    assert "the percentiles come from a log-linear histogram of every wake" in page


# --- compare ---------------------------------------------------------------------------------


def compare_json(capsys: pytest.CaptureFixture, *args: str) -> Tuple[int, Dict[str, Any]]:
    status, out, err = cli(capsys, "compare", "--json", "--resamples", "400", *args)
    assert err == ""
    return status, json.loads(out)


def test_compare_two_soaks_past_their_cap_on_their_kept_chunks(soaks: Dict[str, str], capsys: pytest.CaptureFixture) -> None:
    status, doc = compare_json(capsys, soaks["a"], soaks["b"])
    assert status == 0
    arm = doc["comparisons"][0]["arms"][0]
    n_a = load_summary(soaks["a"])["arms"][0]["latency"]["n"]
    n_b = load_summary(soaks["b"])["arms"][0]["latency"]["n"]
    assert arm["n_baseline"] == arm["n_other"] == FAKE_KEPT
    assert arm["units_baseline"] == arm["units_other"] == FAKE_KEPT_CHUNKS
    assert arm["raw_kept"] == {"baseline": {"kept": FAKE_KEPT, "of": n_a, "units": FAKE_KEPT_CHUNKS},
                               "other": {"kept": FAKE_KEPT, "of": n_b, "units": FAKE_KEPT_CHUNKS}}
    assert "A: compared on the first %d of %d wakes: the raw samples kept; the rest are in the histogram" % (FAKE_KEPT, n_a) in arm["notes"]
    assert "B: compared on the first %d of %d wakes: the raw samples kept; the rest are in the histogram" % (FAKE_KEPT, n_b) in arm["notes"]
    assert arm["verdict"] in ("no difference", "cannot tell")


def test_compare_finds_the_slower_soak_and_says_what_it_compared(soaks: Dict[str, str], capsys: pytest.CaptureFixture) -> None:
    status, out, err = cli(capsys, "compare", "--resamples", "400", soaks["a"], soaks["slow"], "--fail-on-regression", "10")
    assert status == 1 and err == ""  # a regression, not a refusal
    assert re.search(r"event\s.*slower", out)
    assert "compared on the first %d of" % FAKE_KEPT in out


def _drop_last_worker(doc: Dict[str, Any]) -> None:
    doc["arms"][0]["workers"].pop()


def _swap_workers(doc: Dict[str, Any]) -> None:
    workers = doc["arms"][0]["workers"]
    workers[0], workers[1] = workers[1], workers[0]  # n still adds up; the chunks no longer line up


def _shift_boundary(doc: Dict[str, Any]) -> None:
    workers = doc["arms"][0]["workers"]
    workers[0]["n"] -= 300
    workers[1]["n"] += 300


@pytest.mark.parametrize("edit, why", [
    (_drop_last_worker, "4 workers' n add up to %d" % (FAKE_KEPT - FAKE_CHUNKS_KEPT[-1])),
    (_swap_workers, "chunk 1's median is"),
    (_shift_boundary, "chunk 1's median is"),
])
def test_a_soak_whose_kept_samples_do_not_line_up_with_its_workers_is_refused_in_one_line(
        soaks: Dict[str, str], tmp_path, capsys: pytest.CaptureFixture, edit: Any, why: str) -> None:
    folder = copy_bundle(soaks["b"], str(tmp_path / "b"))
    edit_summary(folder, edit)
    n = load_summary(folder)["arms"][0]["latency"]["n"]
    status, out, err = cli(capsys, "compare", soaks["a"], folder)
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(
        "wakelab: error: %s: arm event is a soak past its raw-sample cap whose kept samples (the first %d of %d wakes) do "
        "not line up with its kept chunks' worker records: " % (folder, FAKE_KEPT, n))
    assert why in err


def test_the_raw_samples_csv_still_needs_every_wake(soaks: Dict[str, str]) -> None:
    run = Bundle.load(soaks["a"])
    with pytest.raises(EvidenceError, match=r"is a soak past its raw-sample cap: the samples file holds its first %d of" % FAKE_KEPT):
        run.latency_samples(run.arms()[0])


# --- real soaks --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def real_soaks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dict[str, str]]:
    """Two real 3-second soaks of sigusr1-self past a cap of 1000: plain, and with a 500 µs planted delay."""
    root = tmp_path_factory.mktemp("real")
    made = {}
    for name, delay in (("plain", 0), ("delayed", 500)):
        made[name] = str(root / name)
        os.makedirs(made[name])
        params: Dict[str, Any] = {"planted_delay_us": delay} if delay else {}
        plan = _plan(made[name], "sigusr1-self", **params)
        summary, error = run_soak(plan, 3.0, raw_cap=1000, checkpoint_s=1000.0, chunk_s=0.5)
        assert error is None and summary["arms"][0]["status"] == "ok"
        assert summary["arms"][0]["latency"]["n"] > summary["soak"]["raw_kept"] > 0
    yield made


@pytest.mark.slow
def test_a_real_soak_past_its_cap_compares_and_a_planted_delay_is_slower(real_soaks: Dict[str, str],
                                                                       capsys: pytest.CaptureFixture) -> None:
    status, doc = compare_json(capsys, real_soaks["plain"], real_soaks["delayed"], "--across", "planted-delay")
    assert status == 0
    arm = doc["comparisons"][0]["arms"][0]
    assert arm["verdict"] == "slower" and arm["ratios"]["p50"]["ratio"] > 10
    kept = load_summary(real_soaks["delayed"])["soak"]["raw_kept"]
    assert arm["n_other"] == kept and arm["raw_kept"]["other"]["kept"] == kept
    assert any(note.startswith("B: compared on the first %d of " % kept) for note in arm["notes"])
    status, out, err = cli(capsys, "show", real_soaks["delayed"], "--hist")
    n = load_summary(real_soaks["delayed"])["arms"][0]["latency"]["n"]
    assert status == 0 and err == "" and sum(bin_counts(out)) == n
