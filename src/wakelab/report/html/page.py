"""The page shell: its CSS, its Content-Security-Policy, sections, counting what a page holds, writing it."""

from __future__ import annotations

from typing import List, Sequence, Tuple

from wakelab.errors import OutputError
from wakelab.evidence.bundle import atomic_write_text
from wakelab.report.html.common import DISTRIBUTION, esc


CSS = """
:root{--fg:#1d2329;--muted:#5f6b76;--line:#dfe3e8;--soft:#f5f7f9;--accent:#0072B2;--good:#1a7f37;--bad:#b3261e;--warn:#8a5a00;
color-scheme:light}
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%}
body{margin:0;background:#fff;color:var(--fg);font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,
"Noto Sans","Liberation Sans",sans-serif}
main{max-width:1280px;margin:0 auto;padding:24px 28px 64px}
header.top{border-bottom:1px solid var(--line);padding-bottom:14px;margin-bottom:8px}
h1{font-size:1.65rem;line-height:1.25;margin:0 0 6px}
h2{font-size:1.2rem;margin:34px 0 10px;padding-top:6px;border-top:1px solid var(--line)}
h3{font-size:1rem;margin:18px 0 8px}
.question{font-size:1.05rem;color:#333;max-width:80ch;margin:6px 0 8px}
.meta{color:var(--muted);font-size:.9rem;margin:0}
nav.toc{font-size:.88rem;margin:10px 0 0;display:flex;flex-wrap:wrap;gap:4px 14px}
nav.toc a{color:var(--accent);text-decoration:none}
nav.toc a:hover{text-decoration:underline}
a{color:var(--accent)}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono",monospace;font-size:.85em}
pre{background:var(--soft);padding:10px 12px;border-radius:6px;overflow-x:auto;white-space:pre-wrap;word-break:break-all}
.muted{color:var(--muted)}
.warn{color:var(--warn);font-weight:600}
.note{background:#fff8e6;border-left:4px solid #e0a800;padding:8px 12px;margin:8px 0;border-radius:4px}
.swatch{display:inline-block;width:.7em;height:.7em;border-radius:2px;margin-right:5px;vertical-align:0}
.badge{display:inline-block;font-size:.72rem;font-weight:600;line-height:1.5;padding:0 7px;border-radius:999px;
background:#eef1f4;color:#39434d;vertical-align:1px;white-space:nowrap;margin-right:4px}
.badge.good{background:#dcf3e3;color:var(--good)}
.badge.bad,.badge.st-failed,.badge.st-interrupted{background:#fde3e1;color:var(--bad)}
.badge.st-skipped,.badge.st-pending{background:#fff1cc;color:var(--warn)}
.badge.nearest{background:#eeeeee;color:#444444;font-weight:500}
.badge.w-blocked{background:#e3effa;color:#0a4f86}
.badge.w-spinning{background:#fbe9d7;color:#8a4500}
.answer{list-style:none;padding:12px 16px;margin:8px 0 14px;background:var(--soft);border-radius:8px;font-size:1.05rem}
.answer li{margin:4px 0}
.verdict{padding-left:1.2em;margin:6px 0;columns:2 520px;column-gap:32px}
.verdict li{margin:2px 0;break-inside:avoid}
.table-wrap{overflow-x:auto;margin:8px 0 12px}
table{border-collapse:collapse;font-size:.9rem;font-variant-numeric:tabular-nums}
caption{text-align:left;color:var(--muted);font-size:.82rem;padding:0 0 6px;caption-side:top}
th,td{padding:5px 10px;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}
thead th{font-weight:600;color:#39434d;border-bottom:2px solid #c9d0d7;white-space:nowrap;background:#fff;position:sticky;top:0}
td.num{text-align:right;white-space:nowrap}
td.num .ratio,td.num .muted{white-space:normal}
table.lead thead th:nth-child(n+5){text-align:right}
table.lead th[scope=row]{font-weight:600;white-space:nowrap}
table.lead th[scope=row] a{color:inherit;text-decoration:none}
table.lead th[scope=row] a:hover{color:var(--accent);text-decoration:underline}
table.reps th[scope=row]{font-weight:600;white-space:nowrap}
table.reps th[scope=row] a{color:inherit;text-decoration:none}
table.reps thead tr:first-child th{text-align:center;border-bottom:0}
table.reps thead tr:first-child th:first-child{text-align:left;vertical-align:bottom}
table.reps thead tr+tr th{text-align:right}
tr.family th{background:var(--soft);color:#39434d;font-size:.82rem;text-transform:uppercase;letter-spacing:.04em;padding-top:10px}
tr.component th,tr.component td{color:var(--muted);font-size:.84rem;font-weight:400}
tbody tr:hover{background:#fafbfc}
td.bar{width:120px;min-width:90px;vertical-align:middle}
.p50bar{display:block;height:8px;border-radius:4px;background:linear-gradient(90deg,#8fc1e3,#0072B2)}
td.status{color:#39434d}
td.slower{color:var(--bad)} td.faster{color:var(--good)}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:6px 18px;margin:8px 0}
dl.facts dt{font-weight:600;color:#39434d}
dl.facts dd{margin:0;overflow-wrap:anywhere}
ul.caveats{padding-left:1.2em}
ul.caveats li{margin:4px 0}
details{margin:8px 0;border:1px solid var(--line);border-radius:6px;padding:6px 12px}
details summary{cursor:pointer;font-weight:600}
.arms{display:block}
details.arm{border-radius:6px;padding:4px 12px;margin:4px 0}
details.arm[open]{padding-bottom:10px}
details.arm summary{font-weight:400}
ul.figs{list-style:none;margin:6px 0 4px;padding:0;font-size:.85rem;color:#39434d}
.plot{max-width:820px}
.plot.wide{max-width:920px}
.chart{width:100%;margin:4px 0 14px}
.controls{display:flex;flex-wrap:wrap;gap:6px;align-items:center;margin:8px 0 2px;font-size:.84rem}
.controls .sep{margin-left:14px}
.controls button{font:inherit;border:1px solid #c9d0d7;background:#fff;color:var(--fg);border-radius:999px;padding:1px 10px;cursor:pointer}
.controls button.sort[aria-pressed=true]{background:var(--accent);border-color:var(--accent);color:#fff}
.controls button.family[aria-pressed=false]{opacity:.5;text-decoration:line-through}
.controls button:focus-visible{outline:2px solid var(--accent);outline-offset:1px}
ul.guidance{padding-left:1.2em;margin:6px 0}
ul.guidance li{margin:5px 0}
.badge.topic{background:#e8eef6;color:#20466e}
.cites{font-size:.8rem}
.cite{display:inline-block;margin-right:6px;color:var(--muted);text-decoration:none;border-bottom:1px dotted #aab4be}
.ratio{font-size:.8rem;color:var(--muted)}
.ratio.slower{color:var(--bad)} .ratio.faster{color:var(--good)} .ratio .tail{font-weight:600}
details.run{border:0;border-top:1px solid var(--line);border-radius:0;padding:8px 0;margin:18px 0 0}
details.run>summary h2{display:inline;border:0;margin:0;padding:0}
table.runs td,table.diff td,table.defs td{overflow-wrap:anywhere}
table.runs code,table.diff code{word-break:break-all}
.noplot{margin:8px 0}
section.run{margin-top:8px}
footer{margin-top:48px;color:var(--muted);font-size:.82rem;border-top:1px solid var(--line);padding-top:10px}
@media (max-width:700px){main{padding:16px}.arms{grid-template-columns:1fr}dl.facts{grid-template-columns:1fr}}
@media print{thead th{position:static}details.arm{break-inside:avoid;margin-bottom:12px}.controls{display:none}}
"""

# A page without charts runs no script at all; one with charts allows exactly its own two, by hash.
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"


def page_csp(script_hashes: Sequence[str]) -> str:
    """The Content-Security-Policy of a page whose only scripts are those with ``script_hashes``."""
    if not script_hashes:
        return CSP
    return "default-src 'none'; script-src %s; style-src 'unsafe-inline'; img-src data:; font-src data:; base-uri 'none'; " \
        "form-action 'none'" % " ".join(script_hashes)


def _page(title: str, body: str, scripts: Sequence[str] = ()) -> str:
    from wakelab.report.interactive import script_hash

    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        '<meta http-equiv="Content-Security-Policy" content="%s">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="generator" content="wakelab">'
        '<link rel="icon" href="data:,">'
        "<title>%s</title><style>%s</style></head>\n<body><main>%s</main>%s</body></html>\n"
        % (page_csp([script_hash(js) for js in scripts]), esc(title), CSS.strip(), body,
           "".join("<script>%s</script>" % js for js in scripts))
    )


def _section(anchor: str, title: str, body: str, toc: List[Tuple[str, str]]) -> str:
    toc.append((anchor, title))
    return '<section id="%s"><h2>%s</h2>%s</section>' % (esc(anchor), esc(title), body)


def count_plots(page: str) -> int:
    """How many figures a rendered page holds: the arms' distributions and the charts at a glance."""
    return page.count('data-chart="%s"' % DISTRIBUTION) + count_charts(page)


def count_charts(page: str) -> int:
    """How many charts a rendered page holds besides the arms' distributions (the overview, rates, grids, traces)."""
    return page.count('data-chart="1"')


def write_report(path: str, page: str) -> None:
    """Write ``page`` to ``path`` atomically; :class:`OutputError` with the OS's reason if it cannot."""
    try:
        atomic_write_text(path, page)
    except OSError as exc:
        raise OutputError("cannot write the report to %s: %s (choose another path with -o)" % (path, exc.strerror or exc)) from None
