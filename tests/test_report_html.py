"""``wakelab report`` and :mod:`wakelab.report.html`: a self-contained, escaped, plotted page.

The bundles are real: made once per module with ``run_plan`` and small
parameters (an Event arm beside its native condvar floor, the spinning
self-signal arm, and the install-rate arms).  A second "interpreter" is a
copy of that bundle with its samples scaled and its figures recomputed, so
the comparison has something to compare.  The browser tests at the end load
the pages in a real headless Chromium and are skipped when none is installed
(the catalogue's interactive overview is driven in tests/browser/).
"""

from __future__ import annotations

import html
import html.parser
import json
import os
import re
import shutil
from typing import Any, Callable, Dict, List, Optional, Tuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("plotly", reason="the HTML report's charts need plotly (pip install -e '.[report]')")

from browser.chromium import Chromium, find_chromium  # noqa: E402
from conftest import build_lab135_summary  # noqa: E402
from wakelab.core.model import MeasureParams  # noqa: E402
from wakelab.cli import main  # noqa: E402
from wakelab.evidence import bundle  # noqa: E402
from wakelab.evidence.load import load_summary  # noqa: E402
from wakelab.harness.runner import RunPlan, run_plan  # noqa: E402
from wakelab.labs import LAB_135  # noqa: E402
from wakelab.evidence.model import Bundle  # noqa: E402
from wakelab.formatting import format_ns, format_percent, format_us  # noqa: E402
from wakelab.report import html as report_html  # noqa: E402
from wakelab.report import distribution, interactive  # noqa: E402
from wakelab.report.html.common import IdCounter  # noqa: E402
from wakelab.analysis.stats import summarize_latency  # noqa: E402

TESTS = os.path.dirname(os.path.abspath(__file__))
ARTIFACTS = os.path.join(TESTS, "artifacts")
ARMS = ["event", "native-condvar", "sigusr1-self", "signal-install", "native-sigaction-install"]
HOSTILE = '<img src=x onerror="alert(1)"><script>alert(2)</script>'
HOSTILE_ESCAPED = "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;&lt;script&gt;alert(2)&lt;/script&gt;"


# --- bundles ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A real bundle: n = 120 so that p99 is reported and marked."""
    folder = str(tmp_path_factory.mktemp("run"))
    params = MeasureParams(n=120, warmup=2, settle_us=200, timeout_s=1.0, install_n=500, rounds=2)
    run_plan(RunPlan(lab=LAB_135, arm_names=ARMS, params=params, folder=folder, command=["test"]))
    return folder


def read_json(path: str) -> Dict[str, Any]:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)  # type: ignore[no-any-return]


def modified_copy(
    src: str,
    dst: str,
    edit: Optional[Callable[[Dict[str, Any]], None]] = None,
    scale: float = 1.0,
) -> str:
    """A copy of bundle ``src`` in ``dst``: samples times ``scale`` (figures recomputed), then ``edit``."""
    shutil.copytree(src, dst)
    summary = read_json(os.path.join(dst, bundle.SUMMARY_JSON))
    for entry in summary["arms"]:
        if entry["status"] != "ok" or entry["kind"] != "latency" or scale == 1.0:
            continue
        path = os.path.join(dst, entry["samples_file"])
        doc = read_json(path)
        doc["samples_ns"] = [int(v * scale) for v in doc["samples_ns"]]
        doc["components_ns"] = {k: [int(v * scale) for v in vs] for k, vs in doc.get("components_ns", {}).items()}
        bundle.atomic_write_text(path, json.dumps(doc))
        entry["latency"] = summarize_latency(doc["samples_ns"], doc["lost"]).to_dict()
    if edit is not None:
        edit(summary)
    bundle.atomic_write_text(os.path.join(dst, bundle.SUMMARY_JSON), bundle.dumps(summary))
    load_summary(dst)  # still a valid summary: the test is about the report, not the loader
    return dst


def other_interpreter(summary: Dict[str, Any]) -> None:
    summary["interpreter"]["version"] = "3.13.5"
    summary["conditions"] = dict(summary.get("conditions") or {}, cpu_threads=2)


@pytest.fixture(scope="module")
def second_run_dir(run_dir: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    return modified_copy(run_dir, str(tmp_path_factory.mktemp("second") / "run"), other_interpreter, scale=0.5)


def entry(summary: Dict[str, Any], name: str) -> Dict[str, Any]:
    return next(a for a in summary["arms"] if a["name"] == name)


def hostile(summary: Dict[str, Any]) -> None:
    """Markup (and mathtext) wherever free text reaches the page or a figure."""
    summary["note"] = HOSTILE
    summary["lab"]["title"] = "Lab " + HOSTILE
    summary["lab"]["question"] = HOSTILE
    summary["lab"]["methodology"] = [HOSTILE]
    summary["lab"]["limits"] = [HOSTILE]
    summary["caveats"] = [HOSTILE]
    summary["interpreter"]["version"] = "3.13 " + HOSTILE + r" $\frac{1}{0}$"
    summary["interpreter"]["build"] = HOSTILE
    summary["machine"]["hostname"] = HOSTILE
    summary["machine"]["cpu_model"] = HOSTILE
    summary["conditions"] = {"<b>k</b>": HOSTILE}
    summary["command"] = ["wakelab", HOSTILE]
    event = entry(summary, "event")
    event["mechanism"] = event["t0"] = event["t1"] = HOSTILE
    event["scope"] = "<i>x</i>"
    failed = entry(summary, "signal-install")
    failed.update(status="failed", reason="RuntimeError: " + HOSTILE, rate=None, samples_file=None)


@pytest.fixture(scope="module")
def hostile_dir(run_dir: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    return modified_copy(run_dir, str(tmp_path_factory.mktemp("hostile") / "run"), hostile)


def render_cli(capsys: pytest.CaptureFixture, *args: str) -> Tuple[int, str, str]:
    status = main(["report", *args])
    out, err = capsys.readouterr()
    return status, out, err


def read(path: Any) -> str:
    with open(path, encoding="utf-8") as fh:
        return fh.read()


# --- a tiny HTML inspector --------------------------------------------------------------


class Inspector(html.parser.HTMLParser):
    """Every start tag with its attributes, and the text of <style> elements."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: List[Tuple[str, Dict[str, Optional[str]]]] = []
        self.styles: List[str] = []
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: List[Tuple[str, Optional[str]]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_style = tag == "style"

    def handle_startendtag(self, tag: str, attrs: List[Tuple[str, Optional[str]]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.styles.append(data)


def inspect(page: str) -> Inspector:
    parser = Inspector()
    parser.feed(page)
    parser.close()
    return parser


def tag_names(page: str) -> List[str]:
    return [tag for tag, _ in inspect(page).tags]


URL_ATTRIBUTES = ("src", "href", "xlink:href", "srcset", "action", "formaction", "poster", "data", "background", "ping")


SCRIPT = re.compile(r"<script([^>]*)>(.*?)</script>", re.DOTALL)


def split_scripts(page: str) -> Tuple[str, List[str], List[Any]]:
    """The page without its scripts, the code of its executable scripts, and its JSON data blocks (parsed)."""
    code: List[str] = []
    data: List[Any] = []
    for attrs, text in SCRIPT.findall(page):
        if attrs.startswith(' type="application/json"'):
            assert "<" not in text and ">" not in text and "&" not in text  # nothing in a data block can end it or open a tag
            data.append(json.loads(text))
        else:
            assert attrs == "", attrs  # no src, no type: only our two inline scripts
            code.append(text)
    return SCRIPT.sub("", page), code, data


def chart_specs(page: str) -> Dict[str, Any]:
    """Each interactive chart's figure, by element id."""
    return {m.group(1): json.loads(m.group(2)) for m in re.finditer(r'<script type="application/json" id="([^"]+)-spec">(.*?)</script>', page)}


def assert_self_contained(page: str) -> None:
    rest, code, _ = split_scripts(page)
    if code:
        # plotly.js as the installed package ships it, and the glue: nothing else runs, and the CSP allows only them.
        assert code == [interactive.plotly_js(), interactive.GLUE_JS]
        csp = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', page)
        assert csp is not None
        assert csp.group(1) == report_html.page_csp([interactive.script_hash(c) for c in code])
        assert "connect-src" not in csp.group(1) and "default-src 'none'" in csp.group(1)  # fetch, XHR, websockets: none
        assert "unsafe-inline" not in csp.group(1).split("script-src", 1)[1].split(";")[0]
    parsed = inspect(rest)
    for tag, attrs in parsed.tags:
        assert tag not in ("script", "iframe", "object", "embed", "base", "form"), tag
        for name, value in attrs.items():
            assert not name.startswith("on"), (tag, name)
            if name in URL_ATTRIBUTES:
                assert value is not None and (value.startswith("#") or value.startswith("data:")), (tag, name, value)
        if tag == "link":
            assert attrs.get("rel") == "icon" and attrs.get("href") == "data:,", attrs
        if tag == "meta" and attrs.get("http-equiv", "").lower() == "refresh":
            raise AssertionError("meta refresh")
    for css in parsed.styles:
        assert "@import" not in css and "url(http" not in css.replace(" ", "") and "//" not in css, css[:200]
    assert "http://" not in rest.replace('xmlns="http://www.w3.org/2000/svg"', "").replace(
        'xmlns:xlink="http://www.w3.org/1999/xlink"', ""
    )
    assert "https://" not in rest


# --- the page ---------------------------------------------------------------------------


def test_single_run_page(run_dir: str, tmp_path, capsys) -> None:
    out_file = tmp_path / "report.html"
    status, out, err = render_cli(capsys, run_dir, "-o", str(out_file))
    assert status == 0
    assert out == ""
    page = read(out_file)
    summary = load_summary(run_dir)
    measured = [a for a in summary["arms"] if a["status"] == "ok" and a["kind"] == "latency"]
    size = len(page.encode())
    assert err == "wakelab: report in %s (%.1f MB, 1 run, 1 interactive chart, %d plots)\n" % (
        out_file, size / (1 << 20), len(measured)
    )
    assert page.startswith("<!DOCTYPE html>\n<html lang=\"en\">")
    assert page.count('data-chart="distribution"') == len(measured)  # one distribution per measured latency arm
    for anchor in ("guidance", "verdict", "overview", "lead-table", "honesty", "caveats", "distributions", "details"):
        assert 'id="%s"' % anchor in page
    for a in summary["arms"]:
        assert ">%s<" % a["name"] in page  # every arm has a row, whatever its status
    assert "Lab 135: signal vs threading.Event wakeup" in page
    # The rate arm in a table of its own (the lead table's): ops/s is not drawn on a wake-time axis.
    assert 'are in their own table: <a href="#lead-table">' in page and '"type":"bar"' not in page
    # The lab's comparison and its honest judgement.
    assert "<strong>event / sigusr1-self</strong>" in page
    assert "NOT like for like" in page
    # p50 and p99 are marked on the distributions (n = 120 reports p99), each folded until opened.
    event = entry(summary, "event")["latency"]
    assert "p50 " + format_ns(event["p50_ns"]) in page
    assert "p99 " + format_ns(event["p99_ns"]) in page
    assert '<details class="arm" id="arm-event">' in page
    assert "ECDF" in page and "histogram" in page
    assert "log scale" in page
    # The charts: the overview of every latency arm (the rate arms are a table), plotly.js inlined once.
    specs = chart_specs(page)
    assert sorted(specs) == ["chart-1"] + ["plot-%d" % i for i in range(1, len(measured) + 1)]
    rows = specs["chart-1"]["layout"]["meta"]["orders"]["p50"]
    assert rows == [a["name"] for a in sorted(measured, key=lambda a: (a["latency"]["p50_ns"], a["name"]))]
    assert specs["chart-1"]["layout"]["xaxis"]["type"] == "log"
    assert page.count(interactive.plotly_js()) == 1
    assert_self_contained(page)


def test_overview_sets_each_arm_beside_its_floor(run_dir: str) -> None:
    summary = load_summary(run_dir)
    if entry(summary, "native-condvar")["status"] != "ok":
        pytest.skip("native-condvar did not run here: %s" % entry(summary, "native-condvar")["reason"])
    page = report_html.render_report([report_html.load_run(run_dir)])
    overview = chart_specs(page)["chart-1"]
    floors = [t for t in overview["data"] if t["meta"].get("floor")]
    assert [(t["name"], t["y"], t["x"]) for t in floors] == [
        ("C floor p50", ["event"], [entry(summary, "native-condvar")["latency"]["p50_ns"] / 1e3])]
    dots = {y: x for t in overview["data"] if t["mode"] == "markers" and not t["meta"].get("floor") for y, x in zip(t["y"], t["x"])}
    assert dots["event"] == entry(summary, "event")["latency"]["p50_ns"] / 1e3
    hover = next(t for t in floors)["text"][0]
    assert "C floor native-condvar" in hover and "its floor" in hover
    # The range bars: p90 to p99 of each arm.
    bars = [t for t in overview["data"] if t["mode"] == "lines" and "event" in t["y"]]
    lat = entry(summary, "event")["latency"]
    assert bars[0]["x"][:2] == [lat["p90_ns"] / 1e3, lat["p99_ns"] / 1e3]
    # The axis is set to hold every figure drawn, the largest p99 too (plotly's autorange pads markers, not bars).
    lo, hi = (10 ** v for v in overview["layout"]["xaxis"]["range"])
    xs = [x for t in overview["data"] for x in t["x"] if x is not None]
    assert lo < min(xs) and max(xs) * 1.2 < hi
    # The legend sits below the plot, clear of plotly's toolbar at the top right.
    assert overview["layout"]["legend"]["yref"] == "container" and overview["layout"]["legend"]["y"] == 0


def test_page_is_deterministic(run_dir: str) -> None:
    runs = [report_html.load_run(run_dir)]
    assert report_html.render_report(runs) == report_html.render_report(runs)


def test_ids_are_unique_and_every_reference_resolves(run_dir: str, second_run_dir: str) -> None:
    page, _, _ = split_scripts(report_html.render_report([report_html.load_run(run_dir), report_html.load_run(second_run_dir)]))
    ids = re.findall(r'<[^<>]*\sid="([^"]+)"', page)
    assert len(ids) == len(set(ids))
    references = set(re.findall(r'url\(#([^)]+)\)', page)) | set(re.findall(r'href="#([^"]+)"', page))
    assert references <= set(ids)


def test_multiple_runs_are_compared(run_dir: str, second_run_dir: str, tmp_path, capsys) -> None:
    out_file = tmp_path / "both.html"
    status, _, err = render_cli(capsys, run_dir, second_run_dir, "-o", str(out_file))
    assert status == 0, err
    page = read(out_file)
    assert 'id="comparison"' in page and "Runs compared" in page
    assert "wakelab: 2 runs compared" not in page  # same lab: its title stays
    first_label, second_label = (label.full for label in report_html.run_labels([report_html.load_run(run_dir), report_html.load_run(second_run_dir)]))
    # Named by folder (the interpreter beside it): both folders are "run0"-like names of their own.
    assert first_label.startswith("#1 %s · CPython " % os.path.basename(run_dir)) and first_label.endswith("(cpu_threads=0)")
    assert second_label == "#2 run · CPython 3.13.5 (cpu_threads=2)"
    assert second_label in page
    assert "What differs between the runs" in page
    assert "interpreter.version" in page and "conditions.cpu_threads" in page
    assert "p50 vs #1" in page
    assert "Rate arms: median operations per second per run" in page
    # compare's verdicts on run #2 against run #1, with their intervals: its samples are half the original's.
    assert re.search(r"p50 faster 0\.50×&nbsp;\(0\.\d\d–0\.\d\d\)", page)
    assert ">not&nbsp;tested</span>" in page  # signal-install: 2 rounds a side, too few to judge
    assert 'id="run-1"' in page and 'id="run-2"' in page
    summary = load_summary(run_dir)
    measured = [a for a in summary["arms"] if a["status"] == "ok" and a["kind"] == "latency"]
    assert page.count('data-chart="distribution"') == len(measured)  # each arm's distributions, the runs overlaid
    specs = chart_specs(page)
    overview = specs["chart-1"]
    assert {t["meta"]["run"] for t in overview["data"]} == {0, 1}
    assert overview["layout"]["scattermode"] == "group"  # the runs of one arm side by side in its row
    names = {t["name"] for t in overview["data"] if t.get("showlegend")}
    assert {first_label, second_label} <= names
    # Interpreter and condition grids as their own charts (heat maps); the rate arms are a table, not bars.
    titles = [spec["layout"]["title"]["text"] for spec in specs.values() if spec["data"][0]["type"] == "heatmap"]
    assert titles == ["p50 by interpreter", "p50 by busy threads"]
    assert not any(spec["data"][0]["type"] == "bar" for spec in specs.values())
    assert_self_contained(page)


def test_without_compare_the_runs_show_their_ratio(run_dir: str, second_run_dir: str, monkeypatch) -> None:
    """Without numpy and scipy there are no verdicts: the page says so and shows each p50 over run #1's."""
    monkeypatch.setattr("wakelab.extras.missing", lambda extra: ["numpy"])
    page = report_html.render_report([report_html.load_run(run_dir), report_html.load_run(second_run_dir)])
    assert "#2 run against #1 run0: no verdicts, compare&#x27;s verdicts need numpy" in page
    assert ">0.5×<" in page and "&nbsp;(" not in page  # the copy's samples are half the original's


def test_hostile_strings_are_escaped(hostile_dir: str, run_dir: str, tmp_path, capsys) -> None:
    out_file = tmp_path / "hostile.html"
    status, _, err = render_cli(capsys, hostile_dir, run_dir, "-o", str(out_file))
    assert status == 0, err
    whole = read(out_file)
    assert HOSTILE not in whole
    assert_self_contained(whole)
    page, _, data = split_scripts(whole)
    assert "<script" not in page and "<img" not in page and "<b>k</b>" not in page and "<i>x</i>" not in page
    assert HOSTILE_ESCAPED in page
    # The run label (from interpreter.version) is in the tables, escaped; a note's $...$ is text.
    assert "3.13 &lt;img src=x onerror=" in page
    assert r"$\frac{1}{0}$" in page
    names = tag_names(page)
    assert "img" not in names and "script" not in names and "i" not in names
    # In the charts: plotly reads <b>, <br>, <a> in labels, so evidence reaches it escaped (and the JSON escapes that).
    texts = json.dumps(data)
    assert "3.13 &lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in texts
    assert "<img" not in texts and "<script" not in texts and "<i>x" not in texts
    # The failed arm is shown with its (escaped) reason.
    assert "FAILED</span> RuntimeError: &lt;img" in page


def test_skipped_arm_is_shown_with_its_reason(run_dir: str, tmp_path) -> None:
    def skip(summary: Dict[str, Any]) -> None:
        arm = entry(summary, "sigusr1-self")
        arm.update(status="skipped", reason="needs the main thread", latency=None, samples_file=None, components={})

    folder = modified_copy(run_dir, str(tmp_path / "run"), skip)
    page = report_html.render_report([report_html.load_run(folder)])
    assert page.count("needs the main thread") == 2  # the lead table and the arm's card
    assert "skipped</span> needs the main thread" in page
    assert 'id="arm-sigusr1-self"' in page


def test_all_wakes_lost_gives_a_card_without_a_plot(run_dir: str, tmp_path) -> None:
    def lose(summary: Dict[str, Any]) -> None:
        arm = entry(summary, "sigusr1-self")
        arm["latency"] = summarize_latency([], lost=120).to_dict()
        path = os.path.join(folder, arm["samples_file"])
        doc = read_json(path)
        doc.update(samples_ns=[], lost=120, components_ns={})
        bundle.atomic_write_text(path, json.dumps(doc))

    folder = str(tmp_path / "run")
    modified_copy(run_dir, folder, lose)
    page = report_html.render_report([report_html.load_run(folder)])
    assert "No samples to plot." in page
    assert '<span class="warn">120 lost</span>' in page


def test_stdout_output(run_dir: str, capsys) -> None:
    status, out, err = render_cli(capsys, run_dir, "-o", "-")
    assert status == 0 and err == ""
    assert out.startswith("<!DOCTYPE html>")


def test_control_characters_from_evidence_are_shown_not_sent() -> None:
    """An escape sequence in a note reaches the page as visible text, never as raw bytes."""
    summary = place(build_lab135_summary(), "\x1b]0;pwned\x07\x1b[2J\x9b1m")
    page = report_html.render_caveats(summary) + report_html.render_honesty(summary) + report_html.render_verdict(summary)
    assert not any(ord(ch) < 0x20 and ch not in "\n\t" or 0x7F <= ord(ch) < 0xA0 for ch in page)
    assert "\\x1b]0;pwned\\x07" in page


def place(summary: Dict[str, Any], text: str) -> Dict[str, Any]:
    """``text`` in every free-text field the sections render."""
    summary["note"] = text
    summary["lab"].update(title=text, question=text, methodology=[text], limits=[text])
    summary["caveats"] = [text]
    summary["warnings"] = [text]
    summary["interpreter"].update(version=text, build=text, implementation=text)
    summary["machine"].update(hostname=text, cpu_model=text, kernel=text)
    summary["conditions"] = {text: text}
    summary["command"] = [text]
    event = entry(summary, "event")
    event.update(mechanism=text, t0=text, t1=text, scope=text, family=text)
    entry(summary, "signal-install").update(status="failed", reason=text, rate=None)
    return summary


MARKUP_PIECES = ["<", ">", "&", '"', "'", "/", "=", " ", "a", "b", "i", "script", "img src=x", "<!--", "-->", "]]>", "&amp;", "$", "\\", "é", "\x00"]
markup_text = st.one_of(st.lists(st.sampled_from(MARKUP_PIECES), min_size=1, max_size=12).map("".join), st.text(min_size=1, max_size=30))


@given(markup_text)
@settings(max_examples=80, deadline=None)
def test_evidence_text_never_changes_the_markup(text: str) -> None:
    """Whatever the text, the sections have exactly the tags they have with a plain word in its place."""

    def sections(value: str) -> str:
        summary = place(build_lab135_summary(), value)
        other = place(build_lab135_summary(), value + "2")
        runs = [report_html.RunEvidence(Bundle(value, "", summary), {}), report_html.RunEvidence(Bundle(value, "", other), {})]
        labels = report_html.run_labels(runs)
        return "".join([
            report_html.render_verdict(summary), report_html.render_lead_table(summary), report_html.render_honesty(summary),
            report_html.render_caveats(summary), report_html.render_details(summary),
            report_html.render_runs_table(runs, labels), report_html.render_differences(runs, labels),
            report_html.render_comparison_table(runs, labels), report_html.render_rate_table(runs, labels),
            report_html.render_overview(runs, labels, IdCounter()), report_html.render_grids(runs, IdCounter()),
        ])

    hostile_page, plain_page = sections("x" + text), sections("x")
    assert tag_names(hostile_page) == tag_names(plain_page)
    _, _, data = split_scripts(hostile_page)  # every data block parses, and holds no < > &
    assert len(data) == len(split_scripts(plain_page)[2]) >= 3


# --- several runs: grids, order, machines ------------------------------------------------


@pytest.fixture(scope="module")
def grid_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A real grid: two placements of event beside its C floor (matrix.json and cells/)."""
    folder = str(tmp_path_factory.mktemp("grid") / "grid")
    status = main(["run", "--arms", "event,native-condvar,signal-install", "--n", "120", "--install-n", "500", "--rounds", "2",
                   "--placement", "same,split", "-o", folder, "--no-history", "-q"])
    assert status == 0
    return folder


def test_a_grid_folder_is_reported_as_its_cells(grid_dir: str, tmp_path, capsys) -> None:
    out_file = tmp_path / "grid.html"
    status, out, err = render_cli(capsys, grid_dir, "-o", str(out_file))
    assert status == 0 and out == "", err
    assert ", 2 runs, " in err
    page = read(out_file)
    assert "2 cells of the grid %s" % grid_dir in page
    assert 'id="run-1"' in page and 'id="run-2"' in page
    specs = chart_specs(page)
    heatmaps = [spec for spec in specs.values() if spec["data"][0]["type"] == "heatmap"]
    assert [h["layout"]["title"]["text"] for h in heatmaps] == ["p50 by placement"]
    assert [t.split("<br>")[0] for t in heatmaps[0]["layout"]["xaxis"]["ticktext"]] == ["<b>same</b>", "<b>split</b>"]
    assert "placement=same" in page and "placement=split" in page  # the runs' labels say which cell is which
    assert "The runs used different parameters" not in page  # placement is the grid's condition, not a change of method
    assert_self_contained(page)


def test_a_grid_cell_outside_the_grid_is_refused(grid_dir: str, tmp_path, capsys) -> None:
    """matrix.json's schema names cells/<label> only; a cell that is a symlink out of the grid is refused too."""
    bad = str(tmp_path / "grid")
    shutil.copytree(grid_dir, bad)
    cell = os.path.join(bad, read_json(os.path.join(bad, "matrix.json"))["cells"][0]["folder"])
    shutil.move(cell, str(tmp_path / "elsewhere"))
    os.symlink(str(tmp_path / "elsewhere"), cell)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    assert_one_line_error(capsys, [bad], "leads outside the grid (to ", out_dir / "r.html")


def test_a_cell_not_run_yet_is_noted(grid_dir: str, tmp_path) -> None:
    """A grid stopped before its last cell (matrix.json: pending, no folder) is reported with a note."""
    partial = str(tmp_path / "grid")
    shutil.copytree(grid_dir, partial)
    matrix = read_json(os.path.join(partial, "matrix.json"))
    shutil.rmtree(os.path.join(partial, matrix["cells"][1]["folder"]))
    matrix["cells"][1].update(status="pending", complete=False, interpreter=None)
    bundle.atomic_write_text(os.path.join(partial, "matrix.json"), bundle.dumps(matrix))
    loaded = report_html.load_runs([partial])
    assert len(loaded.runs) == 1
    assert loaded.notes == ["%s: 1 cell not run yet (%s)." % (partial, matrix["cells"][1]["label"])]
    page = report_html.render_report(loaded.runs, loaded.notes, loaded.grids)
    assert loaded.notes[0] in page
    assert '<th scope="row">%s</th><td>-</td>' % matrix["cells"][1]["label"] in page  # the matrix lists it, not run


def test_a_cell_whose_evidence_is_gone_is_refused(grid_dir: str, tmp_path, capsys) -> None:
    """matrix.json says the cell ran, but its folder is gone: not a grid that stopped early, a grid with a hole."""
    broken = str(tmp_path / "grid")
    shutil.copytree(grid_dir, broken)
    matrix = read_json(os.path.join(broken, "matrix.json"))
    shutil.rmtree(os.path.join(broken, matrix["cells"][1]["folder"]))
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    assert_one_line_error(capsys, [broken], "cell %s ran (matrix.json says done) but its folder %s is missing" % (
        matrix["cells"][1]["label"], matrix["cells"][1]["folder"]), out_dir / "r.html")


def test_a_grid_report_shows_its_matrix_cell_by_cell(grid_dir: str, tmp_path, capsys) -> None:
    out_file = tmp_path / "grid.html"
    status, _, err = render_cli(capsys, grid_dir, "-o", str(out_file))
    assert status == 0, err
    page = read(out_file)
    matrix = read_json(os.path.join(grid_dir, "matrix.json"))
    labels = [c["label"] for c in matrix["cells"]]
    assert 'href="#matrix"' in page and '<table class="cells">' in page
    for arm in ("event", "native-condvar", "signal-install"):
        table = re.search(r'<table class="matrix[^"]*" data-arm="%s">(.*?)</table>' % arm, page, flags=re.S)
        assert table, arm
        assert re.findall(r'<tr><th scope="row">([^<]*)</th>', table.group(1)) == labels


def test_runs_are_named_by_note_or_folder_and_never_alike(run_dir: str, tmp_path) -> None:
    """Runs of one interpreter are told apart: by their note, else their folder (with its parent when two share a name)."""
    def noted(note: str) -> Callable[[Dict[str, Any]], None]:
        def edit(summary: Dict[str, Any]) -> None:
            summary["note"] = note
        return edit

    runs = [report_html.load_run(p) for p in (
        modified_copy(run_dir, str(tmp_path / "x" / "run")), modified_copy(run_dir, str(tmp_path / "y" / "run")),
        modified_copy(run_dir, str(tmp_path / "z" / "run"), noted("before the\npatch")))]
    labels = report_html.run_labels(runs)
    assert [label.short for label in labels] == ["#1 x/run", "#2 y/run", "#3 before the patch"]
    assert all(" · CPython " in label.full for label in labels)  # the interpreter, as secondary text
    same = report_html.run_labels([runs[0], runs[0]])
    assert len({label.short for label in same}) == 2  # the same folder twice: its position tells them apart


def with_version(version: str, host: Optional[str] = None) -> Callable[[Dict[str, Any]], None]:
    def edit(summary: Dict[str, Any]) -> None:
        summary["interpreter"]["version"] = version
        if host is not None:
            summary["machine"]["hostname"] = host
    return edit


def test_runs_are_ordered_by_interpreter_version_not_as_given(run_dir: str, tmp_path) -> None:
    ten = modified_copy(run_dir, str(tmp_path / "a"), with_version("3.10.14"))
    nine = modified_copy(run_dir, str(tmp_path / "b"), with_version("3.9.19"))
    thirteen = modified_copy(run_dir, str(tmp_path / "c"), with_version("3.13.0rc1"))
    runs = [report_html.load_run(p) for p in (ten, thirteen, nine)]
    assert [r.bundle.source for r in report_html.order_runs(runs)] == [nine, ten, thirteen]
    page = report_html.render_report(runs)
    assert page.index("#1 b · CPython 3.9.19") < page.index("#2 a · CPython 3.10.14") < page.index("#3 c · CPython 3.13.0rc1")
    assert report_html.version_key("3.10.4") > report_html.version_key("3.9.18")


def test_a_fleet_is_grouped_and_labelled_by_machine(run_dir: str, tmp_path) -> None:
    bundles = [
        modified_copy(run_dir, str(tmp_path / "b1"), with_version("3.12.3", "ci-runner-b")),
        modified_copy(run_dir, str(tmp_path / "a1"), with_version("3.12.3", "ci-runner-a")),
        modified_copy(run_dir, str(tmp_path / "a2"), with_version("3.11.9", "ci-runner-a"), scale=2.0),
    ]
    page = report_html.render_report([report_html.load_run(p) for p in bundles])
    assert "3 runs from 2 machines (ci-runner-a, ci-runner-b)" in page
    # Machine first, then version: both of runner a, then runner b; each label names its host.
    assert page.index("#1 a2 · ci-runner-a · CPython 3.11.9") < page.index("#2 a1 · ci-runner-a · CPython 3.12.3") \
        < page.index("#3 b1 · ci-runner-b · CPython 3.12.3")
    assert page.count('<tr class="family"><th colspan="5">machine ci-runner-') == 2
    titles = [s["layout"]["title"]["text"] for s in chart_specs(page).values() if s["data"][0]["type"] == "heatmap"]
    assert titles == ["p50 by machine", "p50 by interpreter"]
    assert "These runs come from different machines" in page


def test_the_honesty_block_is_words_not_json(run_dir: str) -> None:
    summary = load_summary(run_dir)
    summary["system"] = dict(summary.get("system") or {}, idle_states=[
        {"disabled": False, "exit_latency_us": 0, "name": "POLL"}, {"disabled": True, "exit_latency_us": 120, "name": "C6"}],
        cpuidle_driver="intel_idle", load_average=[0.5, 0.25, 0.125], hypervisor=True)
    text = report_html.render_honesty(summary)
    assert "idle states POLL (exit 0 µs), C6 (exit 120 µs, disabled); 1 disabled" in text
    assert "load average 0.5 / 0.25 / 0.125 (1, 5, 15 min)" in text
    assert "under a hypervisor" in text
    assert '{"' not in text and "[{" not in text and "&quot;disabled&quot;" not in text and "false" not in text


def test_guidance_is_laid_out_with_its_cites(run_dir: str) -> None:
    guidance = pytest.importorskip("wakelab.analysis.guidance")
    run = report_html.load_run(run_dir)
    advice = guidance.guidance_for(run.bundle)
    section = report_html.render_guidance(run)
    assert section.startswith('<p class="answer">%s</p>' % report_html.esc(advice.headline))
    assert section.count("<li>") == len(advice.items)
    for item in advice.items:
        for cite in item.cites:
            assert report_html.esc(cite.arm) in section


# --- pieces ------------------------------------------------------------------------------


def test_json_for_script_cannot_end_its_block() -> None:
    text = interactive.json_for_script({"a": "</script><!-- & \u2028", "b": [1.5, None]})
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == {"a": "</script><!-- & \u2028", "b": [1.5, None]}
    assert interactive.label("<b>x</b> &amp;") == "&lt;b&gt;x&lt;/b&gt; &amp;amp;"
    assert interactive.json_for_script(["\x1b[2J\x9b1m\x7f"]) == '["\\u001b[2J\\u009b1m\\u007f"]'


def test_inlined_plotly_js_holds_no_raw_control_character() -> None:
    """plotly.js ships a raw \\x1a and \\x01 in string literals: inlined, they are escapes (a page sent to a terminal stays text)."""
    js = interactive.plotly_js()
    assert re.search("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]", js) is None
    assert "`\\x89PNG\\r\n\\x1a\n`" in js  # the PNG signature, its \\x1a now an escape: the same string to JavaScript


def test_a_page_with_charts_allows_only_its_own_scripts(run_dir: str) -> None:
    page = report_html.render_report([report_html.load_run(run_dir)])
    _, code, _ = split_scripts(page)
    assert "script-src %s %s;" % (interactive.script_hash(code[0]), interactive.script_hash(code[1])) in page
    assert interactive.script_hash("x") == "'sha256-LXEWQrcmsEQBYnyp+6wy9chTD7GQPMTbAiWHF5IaSIE='"  # printf x | sha256sum, base64


def test_histogram_window_leaves_an_outlier_out_and_a_clean_run_whole() -> None:
    clean = [10_000 + 20_000 * i / 199 for i in range(200)]
    body = sorted(clean[:199] + [3_000_000])
    lo, hi = distribution.histogram_window(body)
    assert lo == 10_000 and hi < 31_000  # the 3 ms wake goes to the edge bin
    assert distribution.histogram_window(clean) == (10_000, 30_000)
    figure = distribution.distribution_chart("o", [distribution.Series("x", [int(v) for v in body], 20_000, 30_000)]).figure
    notes = [a["text"] for a in figure["layout"]["annotations"]]
    assert "1 wake up to<br>3.00 ms" in notes  # its count and the extreme, on two lines
    hatched = [t for t in figure["data"] if t.get("fillpattern")]
    assert len(hatched) == 1 and max(hatched[0]["y"]) == 1 / 200  # one wake of 200, beyond the window


# --- bad input: one line, exit 2, nothing written ----------------------------------------


def assert_one_line_error(capsys, args: List[str], message: str, out_file) -> None:
    status, out, err = render_cli(capsys, *args, "-o", str(out_file))
    assert status == 2
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("wakelab: error: "), err
    assert message in err, err
    assert not os.path.exists(out_file)
    assert os.listdir(os.path.dirname(out_file)) == []  # no temporary file left behind either


def test_missing_input(run_dir: str, tmp_path, capsys) -> None:
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    assert_one_line_error(capsys, [str(tmp_path / "nope")], "no such file", out_dir / "r.html")
    # One bad run among good ones: still nothing written.
    assert_one_line_error(capsys, [run_dir, str(tmp_path / "nope")], "no such file", out_dir / "r.html")


@pytest.mark.parametrize("content", ["{", "null", '{"schema": "wakelab.summary", "schema_version": 1}', "\xff"])
def test_corrupt_summary(tmp_path, capsys, content: str) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "summary.json").write_bytes(content.encode("latin-1"))
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    assert_one_line_error(capsys, [str(bad)], str(bad / "summary.json"), out_dir / "r.html")


def test_corrupt_samples(run_dir: str, tmp_path, capsys) -> None:
    folder = modified_copy(run_dir, str(tmp_path / "run"))
    path = os.path.join(folder, "samples", "event.json")
    with open(path, "r+", encoding="utf-8") as fh:
        text = fh.read()
        fh.seek(0)
        fh.write(text[: len(text) // 2])
        fh.truncate()
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    assert_one_line_error(capsys, [folder], "event.json is not valid JSON", out_dir / "r.html")


def test_samples_that_disagree_with_the_summary(run_dir: str, tmp_path, capsys) -> None:
    folder = modified_copy(run_dir, str(tmp_path / "run"))
    path = os.path.join(folder, "samples", "event.json")
    doc = read_json(path)
    doc["samples_ns"] = doc["samples_ns"][:10]
    bundle.atomic_write_text(path, json.dumps(doc))
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    assert_one_line_error(capsys, [folder], "the samples of arm event hold 10 wakes but summary.json says n = 120", out_dir / "r.html")


def test_unwritable_output(run_dir: str, tmp_path, capsys) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    status, out, err = render_cli(capsys, run_dir, "-o", str(blocker / "report.html"))
    assert status == 2 and out == ""
    assert err == "wakelab: error: cannot write the report to %s: Not a directory (choose another path with -o)\n" % (
        blocker / "report.html"
    )
    assert blocker.read_text() == "x"


def test_output_that_is_a_folder(run_dir: str, tmp_path, capsys) -> None:
    target = tmp_path / "folder"
    target.mkdir()
    status, _, err = render_cli(capsys, run_dir, "-o", str(target))
    assert status == 2
    assert err == "wakelab: error: cannot write the report to %s: Is a directory (choose another path with -o)\n" % target
    assert os.listdir(tmp_path) == ["folder"] and os.listdir(target) == []  # no temporary file left


def test_no_runs_is_a_usage_error(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["report"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "the following arguments are required: RUN" in err


# --- distributions ----------------------------------------------------------------------


def test_ecdf_is_exact_when_small_and_keeps_the_tail_when_decimated() -> None:
    small = [float(v) for v in range(1, 11)]
    x, y = distribution.ecdf_points(small)
    assert x == small and y == [i / 10 for i in range(1, 11)]
    big = [float(v) for v in range(100_000)]
    x, y = distribution.ecdf_points(big, max_points=300)
    assert len(x) <= 300
    assert x[0] == 0 and x[-1] == 99_999 and y[-1] == 1.0
    assert x[-100:] == big[-100:]  # the last third of the points: the tail, exact
    assert all(b > a for a, b in zip(x, x[1:])) and all(b > a for a, b in zip(y, y[1:]))


def test_plot_label() -> None:
    assert distribution.plot_label("a\x00b\nc\td") == "a b c d"
    assert len(distribution.plot_label("x" * 500)) == distribution.MAX_LABEL_CHARS
    assert distribution.plot_label("x" * 500).endswith("…")


def test_distribution_text_is_escaped() -> None:
    """plotly reads <b>, <br> and <a> in names and hover text: evidence reaches it escaped."""
    series = [
        distribution.Series("<script>alert(1)</script>", [1000, 2000, 3000], 2000, None),
        distribution.Series(r"$\alpha$ & <b>", [1500, 2500], 2000, None, color=distribution.PALETTE[1]),
    ]
    figure = distribution.distribution_chart("t", series, marks=False).figure
    names = {t["name"] for t in figure["data"]}
    assert names == {"&lt;script&gt;alert(1)&lt;/script&gt;", r"$\alpha$ &amp; &lt;b&gt;"}
    texts = json.dumps(figure)
    assert "<script" not in texts and "& <b>" not in texts
    assert "\n" not in interactive.json_for_script(figure)


def test_distribution_of_identical_and_zero_samples() -> None:
    figure = distribution.distribution_chart("z", [distribution.Series("flat", [0, 0, 0], 0, None)]).figure
    assert "p50 0 ns" in [a["text"] for a in figure["layout"]["annotations"]]


def test_a_soak_drawn_from_weights_matches_the_values_repeated() -> None:
    values, counts = [1000.0, 2000.0, 4000.0, 3_000_000.0], [50, 30, 19, 1]
    repeated = [v for v, c in zip(values, counts) for _ in range(c)]
    weighted = distribution.distribution_chart("w", [distribution.Series("s", values, 2000, 4000, weights=counts)]).figure
    raw = distribution.distribution_chart("r", [distribution.Series("s", repeated, 2000, 4000)]).figure

    def panel(figure: Dict[str, Any], axis: str) -> List[Any]:
        return [(t["x"], t["y"]) for t in figure["data"] if t["xaxis"] == axis]

    assert panel(weighted, "x") == panel(raw, "x")  # the histogram and its hatched edge bin, wake for wake
    (x, y), _ = panel(weighted, "x2")  # the ECDF, then the p50 and p99 markers
    assert x == [1.0, 1.0, 2.0, 4.0, 3000.0] and y == [0.0, 0.5, 0.8, 0.99, 1.0]
    (raw_x, raw_y), _ = panel(raw, "x2")
    assert {a: b for a, b in zip(raw_x, raw_y)} == {a: b for a, b in zip(x, y)}  # the last point at each value
    assert weighted["layout"] == raw["layout"]


def test_file_size_stays_reasonable_per_plot(run_dir: str) -> None:
    page = report_html.render_report([report_html.load_run(run_dir)])
    plots_in_page = report_html.count_plots(page)
    assert page.count(interactive.plotly_js()) == 1  # plotly.js once, however many charts
    assert len(page.encode()) - len(interactive.plotly_js().encode()) < 60_000 + 40_000 * plots_in_page


# --- in a real browser ------------------------------------------------------------------

CHROMIUM = find_chromium()
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None,
    reason="no Chromium to load the page in (apt-get install chromium, or set WAKELAB_CHROMIUM)",
)


def load_in_browser(page_path: str, profile: str, screenshot: str, width: int = 1280) -> Dict[str, Any]:
    url = "file://" + os.path.abspath(page_path)
    with Chromium.launch(profile, CHROMIUM) as browser:
        page = browser.open(url, width=width, offline=True)
        # A chart at a glance is drawn as the page loads; an arm's distribution when its arm is unfolded.
        page.wait_until("[...document.querySelectorAll('div.chart')].every(d => d.getAttribute('data-drawn') === '1'"
                        " || d.closest('details:not([open])'))")
        page.evaluate("document.querySelectorAll('details').forEach(d => { d.open = true; })")
        page.wait_until("[...document.querySelectorAll('div.chart')].every(d => d.getAttribute('data-drawn') === '1')")
        facts = page.evaluate(
            "JSON.stringify({svg: document.querySelectorAll('div.chart[data-chart=distribution]').length,"
            " drawn: [...document.querySelectorAll('div.chart[data-chart=distribution]')].filter(s => s.getBoundingClientRect().width > 200).length,"
            " charts: document.querySelectorAll('div.chart[data-chart=\"1\"][data-drawn=\"1\"]').length,"
            " scripts: document.querySelectorAll('script:not([type])').length,"
            " imgs: document.querySelectorAll('main img').length,"
            " tables: document.querySelectorAll('table').length,"
            " wide: [...document.querySelectorAll('.table-wrap')].filter(t => t.scrollWidth > t.clientWidth + 1).map(t => t.querySelector('table').className),"
            " page_width: document.documentElement.scrollWidth,"
            " title: document.title, h1: document.querySelector('h1').textContent,"
            " texts: [...document.querySelectorAll('svg text')].map(t => t.textContent).join('\\n')})"
        )
        os.makedirs(os.path.dirname(screenshot), exist_ok=True)
        page.screenshot(screenshot)
        print("screenshot:", screenshot)
        result = json.loads(facts)
        result.update(errors=page.errors, requests=page.requests, warnings=page.warnings)
    return result  # type: ignore[no-any-return]


def only_the_page(requests: List[str], url: str) -> bool:
    """Nothing but the page itself and data: URLs (plotly draws a heat map into one)."""
    return requests[0] == url and all(r == url or r.startswith("data:") for r in requests)


@needs_chromium
def test_page_in_a_real_browser(run_dir: str, tmp_path, capsys) -> None:
    out_file = tmp_path / "report.html"
    assert render_cli(capsys, run_dir, "-o", str(out_file))[0] == 0
    page = read(out_file)
    seen = load_in_browser(str(out_file), str(tmp_path / "profile"), os.path.join(ARTIFACTS, "report-single.png"))
    assert seen["errors"] == []
    assert only_the_page(seen["requests"], "file://" + str(out_file))
    assert seen["svg"] == page.count('data-chart="distribution"') >= 3
    assert seen["drawn"] == seen["svg"]  # every plot is laid out at a readable width
    assert seen["charts"] == report_html.count_charts(page) == 1  # plotly drew every chart
    assert seen["scripts"] == 2 and seen["imgs"] == 0
    assert seen["tables"] >= 3
    assert seen["h1"] == "Lab 135: signal vs threading.Event wakeup"
    assert "ECDF" in seen["texts"]


@needs_chromium
def test_hostile_comparison_page_in_a_real_browser(hostile_dir: str, run_dir: str, second_run_dir: str, tmp_path, capsys) -> None:
    out_file = tmp_path / "hostile.html"
    assert render_cli(capsys, hostile_dir, run_dir, second_run_dir, "-o", str(out_file))[0] == 0
    seen = load_in_browser(str(out_file), str(tmp_path / "profile"), os.path.join(ARTIFACTS, "report-compare-hostile.png"))
    assert seen["errors"] == []
    assert only_the_page(seen["requests"], "file://" + str(out_file))
    assert seen["scripts"] == 2 and seen["imgs"] == 0  # the markup in the evidence stayed text
    assert seen["title"] == "Lab " + HOSTILE  # shown as text, exactly
    assert HOSTILE in seen["texts"].replace("\n", " ") or "3.13 <img src=x" in seen["texts"]
    assert "3.13 <img src=x" in seen["texts"]  # ... in plotly's legend and tick labels too, drawn as text
    assert seen["svg"] >= 2 and seen["charts"] >= 3


@needs_chromium
def test_eight_runs_fit_a_laptop_screen(run_dir: str, tmp_path) -> None:
    """Eight interpreters side by side, every section unfolded: no table scrolls sideways at 1366 px."""
    folders = [modified_copy(run_dir, str(tmp_path / ("r%d" % minor)), with_version("3.%d.1" % minor)) for minor in range(6, 14)]
    out_file = tmp_path / "eight.html"
    report_html.write_report(str(out_file), report_html.render_report([report_html.load_run(f) for f in folders]))
    seen = load_in_browser(str(out_file), str(tmp_path / "profile"), os.path.join(ARTIFACTS, "report-eight.png"), width=1366)
    assert seen["errors"] == []
    assert seen["wide"] == [] and seen["page_width"] <= 1366
    assert seen["tables"] >= 8


@needs_chromium
def test_the_browser_check_sees_what_it_must(tmp_path) -> None:
    """The checks above are not blind: a fetch, a blocked script, console.error and an uncaught error all show."""
    guarded = tmp_path / "guarded.html"
    guarded.write_text(
        '<!DOCTYPE html><html><head><meta charset="utf-8"><meta http-equiv="Content-Security-Policy" content="%s">'
        '<title>t</title></head><body><img src="http://198.51.100.1/x.png"><script>console.error("boom")</script></body></html>'
        % report_html.CSP,
        encoding="utf-8",
    )
    open_page = tmp_path / "open.html"
    open_page.write_text(
        '<!DOCTYPE html><html><head><meta charset="utf-8"><title>t</title></head>'
        '<body><script>console.error("boom"); throw new Error("uncaught one")</script></body></html>',
        encoding="utf-8",
    )
    with Chromium.launch(str(tmp_path / "profile"), CHROMIUM) as browser:
        page = browser.open("file://%s" % guarded)
        errors = "\n".join(page.errors)
        assert "violates the following Content Security Policy directive" in errors  # our CSP blocks the image
        assert "Executing inline script violates" in errors  # ... and any script
        assert "http://198.51.100.1/x.png" in page.requests
        page = browser.open("file://%s" % open_page)
        assert "console.error: boom" in page.errors
        assert any(e.startswith("uncaught:") for e in page.errors)


# --- vs C, pairings and warning records, from a fixed summary ---------------------------


def _with_floors() -> Dict[str, Any]:
    """Lab 135's arms beside C floors: event's is matched, sigusr1-self's only nearest."""
    import copy

    summary = build_lab135_summary()
    event, signal, install = summary["arms"]
    event.update(native="native-condvar", native_match="matched")
    signal.update(native="native-self-signal", native_match="nearest")
    install.update(native="native-sigaction-install", native_match="matched")
    condvar = dict(copy.deepcopy(event), name="native-condvar", family="native", native=None, native_match=None)
    condvar["latency"]["p50_ns"] = 22_000.0
    self_signal = dict(copy.deepcopy(signal), name="native-self-signal", family="native", native=None, native_match=None)
    self_signal["latency"]["p50_ns"] = 1_050.0
    sigaction = dict(copy.deepcopy(install), name="native-sigaction-install", family="native", native=None, native_match=None)
    sigaction["rate"]["ops_per_s"] = 5_000_000.0
    summary["arms"] = [event, signal, install, condvar, self_signal, sigaction]
    return summary


def test_lead_table_labels_a_nearest_floor() -> None:
    table = report_html.render_lead_table(_with_floors())
    rows = {name: row for name, row in ((r.split("</a>")[0].rsplit(">", 1)[-1], r) for r in table.split("<tr") if "</a>" in r)}
    assert rows["event"].endswith('<td class="num">5.0×</td></tr>')  # matched: the plain ratio
    assert rows["sigusr1-self"].endswith(
        '<td class="num">2.0× <span class="badge nearest" title="the closest C experiment, not the same one: not the '
        'interpreter&#x27;s share">nearest floor</span></td></tr>')
    assert "5.0×</td></tr>" in table.split("Rate arms")[1]  # signal-install: matched, C is 5× faster
    assert "a ratio marked &#x27;nearest floor&#x27; is against the closest C experiment there is" in table


def test_overview_labels_a_nearest_floor() -> None:
    summary = _with_floors()
    runs = [report_html.RunEvidence(Bundle("s", "", summary), {})]
    chart = report_html.render_overview(runs, [report_html.RunLabel("r", "r", "#0072B2")], IdCounter())
    spec = chart_specs(chart)["chart-1"]
    floors = {t["name"]: (t["y"], t["x"]) for t in spec["data"] if t["meta"].get("floor")}
    assert floors == {"C floor p50": (["event"], [22.0]), "nearest C floor p50": (["sigusr1-self"], [1.05])}
    hover = next(t for t in spec["data"] if t["name"] == "nearest C floor p50")["text"][0]
    assert "nearest floor, not the same experiment" in hover and "2.0× its floor" in hover


def test_verdict_judges_scope_and_the_waiter_at_t0() -> None:
    summary = build_lab135_summary()
    verdict = report_html.render_verdict(summary)
    assert ('<span class="badge bad">NOT like for like</span> waiter: blocked against spinning; scope: cross-thread against '
            "self; waiter at t0: parked in the kernel against the notifier itself.</li>") in verdict
    entry(summary, "sigusr1-self").update(waiter="blocked", scope="cross-thread")
    assert ('<span class="badge good">like for like</span> both blocked, cross-thread; at t0 the waiter is parked in the '
            "kernel.</li>") in report_html.render_verdict(summary)


def test_warning_records_are_worded_and_notes_kept_apart() -> None:
    summary = build_lab135_summary()
    summary["warnings"].append({"kind": "worker-spread", "level": "warning", "arm": "event",
                                "figures": {"of": "p50_ns", "max_over_min": 2.5}})
    summary["warnings"].append("an old bundle's <worded> warning")
    caveats = report_html.render_caveats(summary)
    warnings_part, notes_part = caveats.split("<h3>Notes</h3>")
    assert "<li>event: worker processes disagree (their medians differ 2.5×)" in warnings_part
    assert "<li>an old bundle&#x27;s &lt;worded&gt; warning</li>" in warnings_part
    assert "Percentiles left out" not in warnings_part
    assert notes_part.startswith('<ul class="caveats notes"><li>Percentiles left out for want of wakes: p99.9 where n = 200')


def test_the_page_and_summary_txt_place_the_same_honesty_facts() -> None:
    """One list of facts, worded once: every fact is summary.txt's bullet and the page's row, word for word."""
    from wakelab.analysis.view import view_of
    from wakelab.report.honesty import honesty_facts
    from wakelab.report.text import format_summary

    summary = build_lab135_summary()
    summary["conditions"].update(waiter_policy="fifo", waiter_priority=80, idle_hold=True, applied_idle_hold=False)
    summary["parameters"]["planted_delay_us"] = 50
    facts = honesty_facts(view_of(summary).bundle)
    assert {"Scheduling", "CPU idle", "Command"} <= {fact.label for fact in facts}
    text = " ".join(format_summary(summary).split())
    page = " ".join(html.unescape(re.sub("<[^>]+>", "", report_html.render_honesty(summary).replace("</dd>", "</dd>\n"))).split())
    for fact in facts:
        assert " ".join(fact.sentence.split()) in text
        assert " ".join(("%s%s" % (fact.label, fact.text)).split()) in page


def test_an_open_loop_verdict_says_what_its_figures_hold_as_summary_txt_does() -> None:
    from wakelab.report.text import format_verdict

    summary = build_lab135_summary()
    assert "Open loop" not in report_html.render_verdict(summary)
    summary["parameters"].update(mode="open", interval_us=500)
    said = "Open loop: p50s from each notify's scheduled instant (one every 500 µs), so they include the notifier's lateness"
    assert said in " ".join(" ".join(format_verdict(summary)).split())
    assert report_html.esc(said) in report_html.render_verdict(summary)


def test_honesty_says_when_spinning_is_waiting_for_the_gil() -> None:
    summary = build_lab135_summary()
    entry(summary, "event").update(name="event-spin", waiter="spinning")
    assert ("<dt>Spinning in name only</dt><dd>event-spin (under this interpreter&#x27;s GIL a waiter in another thread cannot poll"
            in report_html.render_honesty(summary))
    summary["interpreter"]["gil_enabled"] = False
    assert "Spinning in name only" not in report_html.render_honesty(summary)


# --- where the time goes (a traced run) ---------------------------------------------------------

TRACE_P50 = {"notify": 10_000.0, "sched_wake": 4_000.0, "sched_queue": 6_000.0, "gil_wait": 2_000.0,
             "interpreter": 7_500.0, "unattributed": 500.0}
TRACE_P99 = {"notify": 12_000.0, "sched_wake": 5_000.0, "sched_queue": 300_000.0, "gil_wait": 90_000.0,
             "interpreter": 20_000.0, "unattributed": 0.0}
FLOOR_P50 = {"notify": 2_000.0, "sched_wake": 3_000.0, "sched_queue": 2_500.0, "gil_wait": 0.0, "interpreter": 1_500.0,
             "unattributed": 0.0}


def fake_trace(p50: Dict[str, float], p99: Dict[str, float], untraced_ns: float, traced_ns: float) -> Dict[str, Any]:
    """An arm's ``trace`` entry as the runner writes it (figures chosen, not measured)."""
    return {
        "traced": True, "reason": None, "wall_s": 0.5, "perf_data_bytes": 1000, "events": 400,
        "overhead": {"untraced_p50_ns": untraced_ns, "untraced_after_p50_ns": untraced_ns * 1.1, "traced_p50_ns": traced_ns,
                     "ratio": round(traced_ns / (untraced_ns * 1.05), 4)},
        "components": {
            "wakes": 120, "fully_attributed": 117, "with_gil_cycles": 9, "from_idle_fraction": 0.0,
            "cross_cpu_fraction": 0.1, "parked_at_t0_fraction": 1.0,
            "percentiles": {name: {"p50_ns": v, "p90_ns": v, "p99_ns": v, "mean_ns": v, "max_ns": v} for name, v in p50.items()},
            "at_p50": {"wakes": 12, "latency_ns": sum(p50.values()), "parts_ns": dict(p50)},
            "at_p99": {"wakes": 2, "latency_ns": sum(p99.values()), "parts_ns": dict(p99)},
        },
    }


def traced(summary: Dict[str, Any]) -> None:
    summary["tracing"] = {"requested": True, "traced": True, "reason": None, "tool": "perf record -a -k CLOCK_MONOTONIC",
                          "events": ["sched:sched_waking", "sched:sched_switch"], "clock": "CLOCK_MONOTONIC",
                          "overhead_method": "traced against untraced"}
    summary["execution"]["trace"] = True
    entry(summary, "event")["trace"] = fake_trace(TRACE_P50, TRACE_P99, 12_000.0, 30_000.0)
    entry(summary, "native-condvar").update(status="ok")
    entry(summary, "native-condvar")["trace"] = fake_trace(FLOOR_P50, FLOOR_P50, 6_000.0, 9_000.0)
    entry(summary, "sigusr1-self")["trace"] = {"traced": False, "reason": "the waiter spins on a CPU " + HOSTILE}
    for name in ("signal-install", "native-sigaction-install"):
        entry(summary, name)["trace"] = {"traced": False, "reason": "not a wake: a rate arm times a loop of calls"}


@pytest.fixture(scope="module")
def traced_dir(run_dir: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    if entry(load_summary(run_dir), "native-condvar")["status"] != "ok":
        pytest.skip("native-condvar did not run here")
    return modified_copy(run_dir, str(tmp_path_factory.mktemp("traced") / "run"), traced)


def component_charts(page: str) -> Dict[str, Any]:
    return {k: v for k, v in chart_specs(page).items() if any("component" in (t.get("meta") or {}) for t in v["data"])}


def test_a_traced_run_draws_where_the_time_goes(traced_dir: str) -> None:
    page = report_html.render_report([report_html.load_run(traced_dir)])
    assert '<a href="#where-time-goes">Where the time goes</a>' in page
    charts = component_charts(page)
    assert len(charts) == 1
    (spec,) = charts.values()
    layout = spec["layout"]
    assert layout["barmode"] == "stack"
    # Python above its C floor (the category array runs bottom to top).
    assert list(reversed(layout["yaxis"]["categoryarray"])) == ["event", "native-condvar"]
    assert layout["xaxis"].get("type", "linear") == layout["xaxis2"].get("type", "linear") == "linear"  # stacked parts
    traces = spec["data"]
    assert [t["meta"]["component"] for t in traces if t["meta"]["band"] == "p50"] == [
        "notify", "sched_wake", "sched_queue", "gil_wait", "interpreter", "unattributed"]
    assert [t["showlegend"] for t in traces] == [True, False] * 6  # one legend entry per component, for both bands
    assert {t["xaxis"] for t in traces if t["meta"]["band"] == "p99"} == {"x2"}
    for band, parts in (("p50", TRACE_P50), ("p99", TRACE_P99)):
        mine = [t for t in traces if t["meta"]["band"] == band]
        by_component = {t["meta"]["component"]: dict(zip(t["y"], t["x"])) for t in mine}
        assert {name: by_component[name]["event"] for name in parts} == {k: v / 1e3 for k, v in parts.items()}
        # The bars stack to the band's latency: the parts sum.
        assert sum(by_component[name]["event"] for name in parts) == pytest.approx(sum(parts.values()) / 1e3)
    floor_notify = next(t for t in traces if t["meta"] == {"component": "notify", "band": "p50"})
    assert floor_notify["x"] == [10.0, 2.0]
    assert "C floor of event" in floor_notify["text"][1] and "notify path" in floor_notify["text"][0]
    assert "(33%)" in floor_notify["text"][0]  # 10 of 30 µs
    # "Python is 3x C", split: the arm's parts minus its floor's, summing to the difference.
    assert ("<li><code>event</code> at p50: 21.0 µs above <code>native-condvar</code> (30.0 against 9.00 µs): notify path "
            "+8.00, wake delivery +1.00, run-queue wait +3.50, GIL wait +2.00, interpreter +6.00, unattributed +0.50 µs.</li>"
            ) in page
    # The overhead table: untraced, traced, untraced after, and their ratio; wakes attributed.
    assert '<table class="trace-overhead">' in page
    assert "<td>12.0</td><td>30.0</td><td>13.2</td><td>2.38×</td><td>117 / 120</td>" in page
    # Arms that were not split say why (latency arms only), escaped.
    not_split = page.split('<ul class="trace-not-split">', 1)[1].split("</ul>", 1)[0]
    assert "<code>sigusr1-self</code>: the waiter spins on a CPU " + HOSTILE_ESCAPED in not_split
    assert "signal-install" not in not_split
    assert page.count(interactive.plotly_js()) == 1  # one copy of plotly.js, however many charts
    assert_self_contained(page)


def test_an_untraced_run_has_no_where_the_time_goes(run_dir: str) -> None:
    page = report_html.render_report([report_html.load_run(run_dir)])
    assert "where-time-goes" not in page and "Where the time goes" not in page
    assert component_charts(page) == {}


def test_tracing_that_could_not_run_says_why_and_draws_nothing(run_dir: str, tmp_path) -> None:
    def unavailable(summary: Dict[str, Any]) -> None:
        summary["tracing"] = {"requested": True, "traced": False, "reason": "no perf " + HOSTILE}
        entry(summary, "event")["trace"] = {"traced": False, "reason": "no perf " + HOSTILE}

    folder = modified_copy(run_dir, str(tmp_path / "run"), unavailable)
    page = report_html.render_report([report_html.load_run(folder)])
    assert '<p class="trace-off">Tracing was asked for but did not run: no perf %s. The figures above are untraced.</p>' % (
        HOSTILE_ESCAPED) in page
    assert component_charts(page) == {}
    assert "trace-overhead" not in page
    assert HOSTILE not in page


def test_several_runs_show_where_the_time_goes_for_the_traced_ones(traced_dir: str, second_run_dir: str) -> None:
    page = report_html.render_report([report_html.load_run(traced_dir), report_html.load_run(second_run_dir)])
    section = page.split('<section id="where-time-goes">', 1)[1].split("</section>", 1)[0]
    assert section.count("<h3>") == 1  # the traced run only
    assert len(component_charts(page)) == 1
    assert page.count(interactive.plotly_js()) == 1


# --- repetitions and placement ------------------------------------------------------------------

REPS_ROW = re.compile(r'<tr><th scope="row"><a href="#arm-[^"]*">(.*?)</a></th>(.*?)</tr>')


def reps_rows(fragment: str) -> Dict[str, List[str]]:
    """The repetitions-and-placement table of a page or fragment: arm -> its cells as text."""
    table = fragment.split('<table class="reps">', 1)[1].split("</table>", 1)[0]
    return {html.unescape(name): [html.unescape(re.sub(r"<[^>]+>", "", c)) for c in re.findall(r'<td class="num">(.*?)</td>', cells)]
            for name, cells in REPS_ROW.findall(table)}


@pytest.fixture(scope="module")
def repeated_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A real bundle made as ``wakelab run`` makes one: three repetitions, three workers spread over them."""
    from wakelab.harness.runner import Execution

    folder = str(tmp_path_factory.mktemp("repeated"))
    params = MeasureParams(n=150, warmup=2, settle_us=200, timeout_s=1.0)
    run_plan(RunPlan(lab=LAB_135, arm_names=["event", "sigusr1-self"], params=params, folder=folder, command=["test"],
                     execution=Execution(workers=3, repeat=3)))
    return folder


def test_a_repeated_run_shows_each_repetition_and_where_its_wakes_ran(repeated_dir: str, run_dir: str, tmp_path, capsys) -> None:
    out_file = tmp_path / "report.html"
    assert render_cli(capsys, repeated_dir, "-o", str(out_file))[0] == 0
    page = read(out_file)
    summary = load_summary(repeated_dir)
    # Near the lead table, in the table of contents, with its one-line explanation.
    assert page.index('id="lead-table"') < page.index('id="repetitions"') < page.index('id="honesty"')
    assert '<a href="#repetitions">Repetitions and placement</a>' in page
    section = page.split('id="repetitions"', 1)[1].split("</section>", 1)[0]
    assert "the notifier&#x27;s right before t0, the waiter&#x27;s right after t1" in section
    rows = reps_rows(section)
    assert sorted(rows) == ["event", "sigusr1-self"]
    for name, cells in rows.items():
        arm = entry(summary, name)
        spread = arm["repetitions"]["spread"]
        assert arm["repetitions"]["count"] == len(spread["values"]) == 3
        assert cells[0] == " · ".join(format_us(v) for v in spread["values"])  # each repetition's own p50, in order
        assert cells[1] == format_percent(spread["range_pct"])
        split = arm["cpu_split"]
        if split is None:
            assert cells[2:] == ["-"] * 7, name
            continue
        same, cross = split["same_cpu"], split["cross_cpu"]
        assert cells[2:8] == [str(same["n"]), format_us(same["p50_ns"]), format_us(same["p99_ns"]),
                              str(cross["n"]), format_us(cross["p50_ns"]), format_us(cross["p99_ns"])]
        assert cells[8].startswith(format_percent(100 * split["cross_share"]))
    assert entry(summary, "event")["cpu_split"] is not None and entry(summary, "sigusr1-self")["cpu_split"] is None
    assert "3 repetitions (one pass over all arms after another), 3 fresh worker processes per arm" in page
    assert "3 repetitions, medians within" in page  # the spread is between repetitions, not workers
    # Several runs: each folded run carries its own table (an old-style run without repetitions has only its split).
    several = report_html.render_report([report_html.load_run(repeated_dir), report_html.load_run(run_dir)])
    assert several.count("<h3>Repetitions and placement</h3>") == 2
    runs = several.split('<details class="run"')[1:]
    values = " · ".join(format_us(v) for v in entry(summary, "event")["repetitions"]["spread"]["values"])
    assert sorted(reps_rows(r)["event"][0] for r in runs) == sorted(["-", values])  # run_dir measured once: no spread


def with_repetitions(summary: Dict[str, Any]) -> Dict[str, Any]:
    """Lab 135's two latency arms with chosen repetitions and placement; event's CPUs not recorded."""
    event, signal = entry(summary, "event"), entry(summary, "sigusr1-self")
    event["repetitions"] = {"count": 3, "of": "p50_ns", "spread": {"values": [10_000.0, 12_000.0, 11_000.0], "min": 10_000.0,
                                                                   "max": 12_000.0, "range_pct": 18.18}}
    event["cpu_split"] = None
    signal["repetitions"] = {"count": 1, "of": "p50_ns", "spread": None}
    signal["cpu_split"] = {"same_cpu": {"n": 115, "p50_ns": 2_000.0, "p99_ns": 2_100.0},
                           "cross_cpu": {"n": 80, "p50_ns": 24_000.0, "p99_ns": None}, "unknown": 5, "cross_share": 0.41}
    return summary


def test_repetitions_and_placement_from_a_fixed_summary() -> None:
    summary = with_repetitions(build_lab135_summary())
    rows = reps_rows(report_html.render_repetitions_and_placement(summary))
    assert rows == {
        "event": ["10.0 · 12.0 · 11.0", "18%", "-", "-", "-", "-", "-", "-", "-"],  # cpu_split null: dashes, no crash
        "sigusr1-self": ["-", "-", "115", "2.00", "2.10", "80", "24.0", "-", "41% (5 unknown)"],
    }
    page = report_html.render_report([report_html.RunEvidence(Bundle("s", "", summary), {})])
    assert reps_rows(page) == rows
    # An arm with neither (one repetition, CPUs not recorded) has no row; a run where no arm has either, no section.
    entry(summary, "sigusr1-self")["cpu_split"] = None
    assert sorted(reps_rows(report_html.render_repetitions_and_placement(summary))) == ["event"]
    entry(summary, "event")["repetitions"]["spread"] = None
    assert report_html.render_repetitions_and_placement(summary) == ""


def test_repetitions_and_placement_escape_the_evidence() -> None:
    summary = with_repetitions(build_lab135_summary())
    entry(summary, "event")["name"] = HOSTILE
    fragment = report_html.render_repetitions_and_placement(summary)
    assert HOSTILE not in fragment and "<img" not in fragment and "<script" not in fragment
    assert ">%s</a>" % HOSTILE_ESCAPED in fragment
    assert list(reps_rows(fragment)) == [HOSTILE, "sigusr1-self"]


def before_repeat(summary: Dict[str, Any]) -> None:
    """A bundle from before --repeat: no repetitions, no cpu_split, a worker spread, no repeat count."""
    summary["execution"].pop("repeat", None)
    for arm in summary["arms"]:
        arm.pop("repetitions", None)
        arm.pop("cpu_split", None)
        if isinstance(arm.get("spread"), dict):
            arm["spread"].pop("between", None)


def test_a_bundle_from_before_repetitions_renders_as_before(run_dir: str, tmp_path, capsys) -> None:
    old = modified_copy(run_dir, str(tmp_path / "old"), before_repeat)
    out_file = tmp_path / "old.html"
    status, _, err = render_cli(capsys, old, "-o", str(out_file))
    assert status == 0 and err.startswith("wakelab: report in ")
    page = read(out_file)
    assert 'id="repetitions"' not in page and "Repetitions and placement" not in page and 'class="reps"' not in page
    assert "3 fresh worker processes per arm, wakes split between them and pooled" in page
    assert "repetitions" not in page.split('id="honesty"', 1)[1].split("</section>", 1)[0]
    summary = load_summary(old)
    assert report_html.render_lead_table(summary) == report_html.render_lead_table(load_summary(run_dir))
    several = report_html.render_report([report_html.load_run(old), report_html.load_run(run_dir)])
    assert several.count("<h3>Repetitions and placement</h3>") == 1  # only the new run's


def test_a_verdict_whose_ratio_is_not_a_number_reads_as_compare_prints_it() -> None:
    # 0/0 (both percentiles 0) gives compare a NaN ratio: the page writes '-' as `wakelab compare` does, not 'inf'.
    from wakelab.analysis.compare import ArmComparison, Judgement, RatioCI
    from wakelab.report.html import runs

    nan = float("nan")
    ci = RatioCI(q=0.5, baseline=0.0, other=0.0, low=nan, high=nan, confidence=0.95, resamples=100, ratio=nan)
    judged = Judgement(key="p50", ci=ci, verdict="not tested", spread_pct=0.0, mde_pct=0.0)
    arm = ArmComparison(name="event", kind="latency", waiter="blocked", scope="in-process", n_baseline=5, n_other=5,
                        lost_baseline=0, lost_other=0, ratios={"p50": ci}, test=None, verdict="not tested",
                        judgements={"p50": judged})
    html = runs._verdicts_html(arm)
    assert "p50 not&nbsp;tested -×" in html and "inf" not in html
