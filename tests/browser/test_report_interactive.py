"""The catalogue's HTML report in a real headless Chromium, with the network off.

The bundle is a real catalogue run (every arm available here, n = 200).  The
page is opened offline (DevTools network emulation, and every http/https/ws
URL blocked) and driven with real mouse events: the overview must draw every
measured latency arm on one log axis, in p50 order; clicking "name" must
re-order the rows the browser draws; hiding a family must drop its rows;
hovering a dot must show its figures; an arm's details must open with its
plot laid out; and nothing may log an error or leave the page.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List

import pytest

pytest.importorskip("plotly", reason="the HTML report's charts need plotly (pip install -e '.[report]')")

from browser.chromium import Chromium, Page, find_chromium  # noqa: E402
from conftest import GOLDEN  # noqa: E402
from wakelab.cli import main  # noqa: E402
from wakelab.evidence.load import load_summary  # noqa: E402

CHROMIUM = find_chromium()
ARTIFACTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "artifacts")
pytestmark = [
    pytest.mark.skipif(CHROMIUM is None, reason="no Chromium to load the page in (apt-get install chromium, or set WAKELAB_CHROMIUM)"),
    pytest.mark.slow,
]
# The laptop screen the tables must fit without scrolling sideways, and a narrow window the page must still fit.
LAPTOP_PX = 1366
NARROW_PX = 800
# What must hold of every drawn chart, as a list of what does not: its legend clear of plotly's toolbar (the
# modebar, top right), and every value it draws inside its x axis -- on a log axis with a margin of at least
# 5 % beyond it, so that no p90-p99 bar ends on (or past) the axis's edge.
LAYOUT_PROBLEMS = r"""JSON.stringify((() => {
  const problems = [], box = e => e.getBoundingClientRect();
  const meet = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
  document.querySelectorAll('div.chart[data-drawn="1"]').forEach(div => {
    const legend = div.querySelector('.legend'), toolbar = div.querySelector('.modebar');
    if (legend && toolbar && meet(box(legend), box(toolbar))) { problems.push([div.id, 'legend under the toolbar']); }
    div.data.forEach(t => {
      if (t.visible === false) { return; }
      const axis = div._fullLayout['xaxis' + (t.xaxis || 'x').slice(1)], log = axis.type === 'log';
      const [lo, hi] = axis.range.map(v => log ? Math.pow(10, v) : v).sort((a, b) => a - b);
      const pad = log ? 1.05 : 1, ends = [];
      (t.x || []).forEach((x, i) => {
        if (x === null) { return; }
        ends.push(x);
        if (t.error_x && t.error_x.array) { ends.push(x + t.error_x.array[i], x - t.error_x.arrayminus[i]); }
      });
      ends.filter(x => log ? (x < lo * pad || x > hi / pad) : (x < lo || x > hi))
        .forEach(x => problems.push([div.id, t.name, 'off the axis', x, lo, hi]));
    });
  });
  return problems;
})())"""
# Rows of the overview as the browser drew them, top to bottom: its y tick labels ordered by position.
DRAWN_ROWS = (
    "[...document.querySelectorAll('#chart-1 .yaxislayer-above .ytick text')]"
    ".map(t => [t.getBoundingClientRect().top, t.textContent]).sort((a, b) => a[0] - b[0]).map(p => p[1])"
)


@pytest.fixture(scope="module")
def catalogue(tmp_path_factory: pytest.TempPathFactory) -> str:
    folder = str(tmp_path_factory.mktemp("catalogue") / "run")
    status = main(["run", "--lab", "catalogue", "--n", "200", "--install-n", "2000", "--rounds", "3",
                   "-o", folder, "--no-history", "-q"])
    assert status == 0
    return folder


@pytest.fixture(scope="module")
def report(catalogue: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    out = str(tmp_path_factory.mktemp("report") / "catalogue.html")
    assert main(["report", catalogue, "-o", out, "-q"]) == 0
    return out


def measured_latency_arms(folder: str) -> List[Dict[str, Any]]:
    return [a for a in load_summary(folder)["arms"]
            if a["kind"] == "latency" and a["status"] == "ok" and a["latency"] and a["latency"]["p50_ns"] is not None]


def open_offline(browser: Chromium, path: str) -> Page:
    page = browser.open("file://" + path, width=LAPTOP_PX, height=900, offline=True)
    # Every chart at a glance is drawn as the page loads; an arm's distribution waits until its arm is unfolded.
    page.wait_until("[...document.querySelectorAll('div.chart')].every(d => d.getAttribute('data-drawn') === '1'"
                    " || d.closest('details:not([open])'))")
    return page


def drawn_rows(page: Page) -> List[str]:
    return page.evaluate(DRAWN_ROWS)  # type: ignore[no-any-return]


def test_overview_sorts_hides_and_hovers_offline(catalogue: str, report: str, tmp_path) -> None:
    arms = measured_latency_arms(catalogue)
    assert len(arms) >= 20  # a catalogue: threads, signals, fds, asyncio, processes and the C floors
    by_p50 = [a["name"] for a in sorted(arms, key=lambda a: (a["latency"]["p50_ns"], a["name"]))]
    native = {a["name"] for a in arms if a["family"] == "native"}
    with Chromium.launch(str(tmp_path / "profile"), CHROMIUM) as browser:
        page = open_offline(browser, report)
        # One chart, one shared log time axis, every measured arm a row of it, fastest p50 first.
        axes = page.evaluate("JSON.stringify(Object.keys(document.getElementById('chart-1')._fullLayout)"
                             ".filter(k => /^[xy]axis\\d*$/.test(k)))")
        assert json.loads(axes) == ["xaxis", "yaxis"]
        assert page.evaluate("document.getElementById('chart-1')._fullLayout.xaxis.type") == "log"
        assert drawn_rows(page) == by_p50
        floors = page.evaluate("document.querySelectorAll('#chart-1 .legendtext').length")
        assert floors >= 2  # families and the C floor in the legend

        page.click("button.sort[data-sort=name]")
        page.wait_until("document.querySelector('button.sort[data-sort=name]').getAttribute('aria-pressed') === 'true'")
        page.wait_until("%s.join('|') !== %s" % (DRAWN_ROWS, json.dumps("|".join(by_p50))))
        assert drawn_rows(page) == sorted(by_p50, key=str.lower)

        page.click("button.family[data-family=native]")
        page.wait_until("%s.length === %d" % (DRAWN_ROWS, len(by_p50) - len(native)))
        assert not set(drawn_rows(page)) & native
        page.click("button.family[data-family=native]")  # and back
        page.wait_until("%s.length === %d" % (DRAWN_ROWS, len(by_p50)))

        # Hover the p50 dot of event: plotly's hover label shows its figures.
        event = next(a for a in arms if a["name"] == "event")
        trace = page.evaluate(
            "document.getElementById('chart-1').data.findIndex(t => t.mode === 'markers' && t.meta.family === 'threads' && !t.meta.floor)")
        point = page.evaluate("document.getElementById('chart-1').data[%d].y.indexOf('event')" % trace)
        page.hover("#chart-1 .scatterlayer .trace:nth-of-type(%d) path.point:nth-of-type(%d)" % (trace + 1, point + 1))
        hover = page.wait_until("(document.querySelector('#chart-1 .hoverlayer .hovertext') || {}).textContent")
        assert "event" in hover and "p50" in hover and "p99" in hover
        assert report_ns(event["latency"]["p50_ns"]) in hover

        # Detail on demand: an arm's histogram and ECDF are drawn when it opens, at a readable width.
        assert page.evaluate("document.getElementById('arm-event').open") is False
        assert page.evaluate("document.querySelector('#arm-event div.chart').getAttribute('data-drawn')") is None
        page.click("#arm-event > summary")
        page.wait_until("document.querySelector('#arm-event div.chart').getAttribute('data-drawn') === '1'")
        assert page.evaluate("document.querySelector('#arm-event div.chart svg.main-svg').getBoundingClientRect().width") > 400
        axes = page.evaluate("JSON.stringify(['xaxis', 'xaxis2'].map(k => document.querySelector('#arm-event div.chart')"
                             "._fullLayout[k].type))")
        assert json.loads(axes) == ["log", "log"]  # the histogram and the ECDF, both on log time axes

        # Tables fit a 1366 px laptop screen, folded ones opened too: nothing scrolls sideways.
        page.evaluate("document.querySelectorAll('details').forEach(d => { d.open = true; })")
        wide = page.evaluate("JSON.stringify([...document.querySelectorAll('.table-wrap')]"
                             ".filter(t => t.scrollWidth > t.clientWidth + 1).map(t => t.querySelector('table').className))")
        assert json.loads(wide) == []
        assert page.evaluate("document.documentElement.scrollWidth") <= LAPTOP_PX

        os.makedirs(ARTIFACTS, exist_ok=True)
        page.screenshot(os.path.join(ARTIFACTS, "report-catalogue.png"))
        assert page.errors == []
        assert all(url == "file://" + report or url.startswith("data:") for url in page.requests), page.requests


@pytest.mark.parametrize("width", [LAPTOP_PX, NARROW_PX])
def test_charts_and_tables_fit_the_window(report: str, tmp_path, width: int) -> None:
    """At a laptop's width and a narrow window's, a catalogue's page and a grid's (several runs): every chart's
    legend clear of plotly's toolbar, every value inside its axis, nothing wider than the window."""
    grid_report = str(tmp_path / "grid.html")
    assert main(["report", os.path.join(GOLDEN, "bundles", "grid"), "-o", grid_report, "-q"]) == 0
    with Chromium.launch(str(tmp_path / "profile"), CHROMIUM) as browser:
        for path in (report, grid_report):
            page = browser.open("file://" + path, width=width, height=900, offline=True)
            page.evaluate("document.querySelectorAll('details').forEach(d => { d.open = true; })")  # every chart drawn
            page.wait_until("[...document.querySelectorAll('div.chart')].every(d => d.getAttribute('data-drawn') === '1')",
                            timeout_s=120)
            assert json.loads(page.evaluate(LAYOUT_PROBLEMS)) == [], path
            assert page.evaluate("document.documentElement.scrollWidth") <= width, path
            assert page.errors == []


def report_ns(value: float) -> str:
    from wakelab.formatting import format_ns

    return format_ns(value)


def test_the_offline_tab_has_no_network(tmp_path) -> None:
    """The offline switch is not blind: a page that fetches is refused and says so."""
    fetching = tmp_path / "fetch.html"
    fetching.write_text('<!DOCTYPE html><html><head><meta charset="utf-8"><title>t</title></head>'
                        '<body><img src="http://198.51.100.1/x.png"></body></html>', encoding="utf-8")
    with Chromium.launch(str(tmp_path / "profile"), CHROMIUM) as browser:
        page = browser.open("file://%s" % fetching, offline=True)
        assert "http://198.51.100.1/x.png" in page.requests
        assert any("load failed" in e for e in page.errors)


def test_where_the_time_goes_draws_stacked_bars_offline(tmp_path) -> None:
    """A real traced run (perf, root): the stacked bars draw, Python above its C floor, each bar as long as its parts."""
    from wakelab.harness import trace as sched_trace

    reason = sched_trace.precheck()
    if reason is not None:
        pytest.skip("tracing is not available here: %s" % reason)
    folder = str(tmp_path / "traced")
    assert main(["run", "--arms", "event,native-condvar", "--n", "60", "--workers", "1", "--trace",
                 "-o", folder, "--no-history", "-q"]) == 0
    arms = {a["name"]: a for a in load_summary(folder)["arms"]}
    if not all((arms[n].get("trace") or {}).get("traced") for n in arms):
        pytest.skip("an arm was not traced: %s" % [(n, (a.get("trace") or {}).get("reason")) for n, a in arms.items()])
    out = str(tmp_path / "traced.html")
    assert main(["report", folder, "-o", out, "-q"]) == 0
    with Chromium.launch(str(tmp_path / "profile"), CHROMIUM) as browser:
        page = open_offline(browser, out)
        chart = page.evaluate("[...document.querySelectorAll('div.chart')].find(d => d.data && d.data.some("
                              "t => t.meta && t.meta.component)).id")
        assert chart
        rows = page.evaluate(
            "[...document.querySelectorAll('#%s .yaxislayer-above .ytick text')]"
            ".map(t => [t.getBoundingClientRect().top, t.textContent]).sort((a, b) => a[0] - b[0]).map(p => p[1])" % chart)
        assert rows == ["event", "native-condvar"]
        # Every component of both bands is a drawn bar trace; the event row's p50 segments span its band's latency.
        assert page.evaluate("document.querySelectorAll('#%s .barlayer .trace').length" % chart) == 12
        drawn_us = page.evaluate(
            "(() => { const d = document.getElementById('%s'); return d.data.filter(t => t.meta.band === 'p50')"
            ".reduce((s, t) => s + t.x[t.y.indexOf('event')], 0); })()" % chart)
        band = arms["event"]["trace"]["components"]["at_p50"]
        assert drawn_us == pytest.approx(band["latency_ns"] / 1e3, rel=1e-9)
        widths = page.evaluate("[...document.querySelectorAll('#%s .barlayer .point path')].map(p => p.getBBox().width)" % chart)
        assert sum(w > 0 for w in widths) >= 4  # visible segments, not an empty frame
        assert page.errors == []
        os.makedirs(ARTIFACTS, exist_ok=True)
        page.screenshot(os.path.join(ARTIFACTS, "report-where-time-goes.png"))
