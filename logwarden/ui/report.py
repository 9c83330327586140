"""The HTML report (`logwarden report --html OUT`): the summary, charts and records of a store in
one self-contained file to hand to someone without the UI, as Hayabusa's HTML summary is.

Self-contained: inline CSS, charts drawn as inline SVG here, the CJK heading glyphs as a data URL,
no script and no link or image from another host (a test checks every `src`/`href`). Every value
from a record is HTML-escaped (log text is attacker-written). Knows nothing of the store or the CLI:
it is given records and returns text.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime, timezone
from html import escape

from logwarden.schemas import RISK_LEVELS, RiskRecord
from logwarden.ui.style import LEVEL_COLORS, LEVEL_TINTS, SECTIONS, font_face_css, section_heading

TOP = 10
BAR_W = 420

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:2rem;color:#1f2933;max-width:1200px}
h1{margin-bottom:.2rem}h2{margin-top:2rem;border-bottom:1px solid #e4e7eb;padding-bottom:.3rem}
table{border-collapse:collapse;width:100%;font-size:.9rem}th,td{text-align:left;padding:.3rem .5rem;
border-bottom:1px solid #e4e7eb;vertical-align:top}th{background:#f5f7fa}
.level{font-weight:600;border-radius:3px;padding:0 .4rem;color:#fff}
.kpis{display:flex;gap:1rem;flex-wrap:wrap}.kpi{border:1px solid #e4e7eb;border-radius:6px;padding:.6rem 1rem}
.kpi b{display:block;font-size:1.6rem}.charts{display:flex;gap:2rem;flex-wrap:wrap}
pre{white-space:pre-wrap;word-break:break-all;background:#f5f7fa;padding:.4rem;margin:.2rem 0;font-size:.8rem}
details{margin:.3rem 0}.fields{color:#52606d;font-size:.8rem}.muted{color:#7b8794}
"""


def render_report(records: Sequence[RiskRecord], *, title: str, source: str,
                  now: datetime | None = None) -> str:
    now = now or datetime.now(timezone.utc)
    records = sorted(records, key=lambda r: (-r.risk_score, -(r.last_ts.timestamp() if r.last_ts else 0)))
    body = [f"<h1>{escape(title)}</h1>",
            f'<p class="muted">{len(records):,} records from {escape(source)} · written {now:%Y-%m-%d %H:%M} UTC '
            "by logwarden</p>",
            _kpis(records), "<h2>Summary</h2>", _charts(records), _tops(records),
            "<h2>Records</h2>", _records_table(records), "<h2>Details</h2>",
            *(_detail(r) for r in records)]
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{escape(title)}</title><style>{font_face_css()}{CSS}</style></head><body>"
            + "\n".join(body) + "</body></html>\n")


def _level(level: str) -> str:
    return f'<span class="level" style="background:{LEVEL_COLORS[level]}">{level}</span>'


def _kpis(records: Sequence[RiskRecord]) -> str:
    levels = Counter(r.risk_level for r in records)
    times = sorted(t for r in records for t in (r.first_ts, r.last_ts) if t)
    cells = [("records", f"{len(records):,}")] + [(lvl, f"{levels[lvl]:,}") for lvl in reversed(RISK_LEVELS)]
    cells += [("open", f"{sum(r.status == 'new' for r in records):,}")]
    if times:
        cells += [("first event", f"{times[0]:%Y-%m-%d %H:%M}"), ("last event", f"{times[-1]:%Y-%m-%d %H:%M}")]
    return '<div class="kpis">' + "".join(f'<div class="kpi">{escape(k)}<b>{escape(v)}</b></div>'
                                          for k, v in cells) + "</div>"


def _charts(records: Sequence[RiskRecord]) -> str:
    levels = Counter(r.risk_level for r in records)
    level_rows = [(lvl, levels[lvl], LEVEL_COLORS[lvl]) for lvl in reversed(RISK_LEVELS) if levels[lvl]]
    categories = [(c, n, "#4c78a8") for c, n in Counter(r.category for r in records).most_common(TOP)]
    days = Counter(f"{r.last_ts:%Y-%m-%d}" for r in records if r.last_ts)
    day_rows = [(d, n, "#4c78a8") for d, n in sorted(days.items())]
    return ('<div class="charts">' + svg_bars("Records per level", level_rows)
            + svg_bars("Records per category", categories) + svg_bars("Records per day (last event, UTC)", day_rows)
            + "</div>")


def svg_bars(title: str, rows: Sequence[tuple[str, int, str]]) -> str:
    """A horizontal bar chart as inline SVG (no script, no outside request)."""
    if not rows:
        return ""
    top = max(n for _, n, _ in rows) or 1
    height = 22 * len(rows) + 8
    bars = []
    for i, (label, n, colour) in enumerate(rows):
        y = 4 + 22 * i
        width = max(2, round(BAR_W * n / top))
        bars.append(f'<text x="0" y="{y + 14}" font-size="12">{escape(label)}</text>'
                    f'<rect x="170" y="{y}" width="{width}" height="16" fill="{colour}"/>'
                    f'<text x="{176 + width}" y="{y + 13}" font-size="11">{n:,}</text>')
    return (f'<figure><figcaption><b>{escape(title)}</b></figcaption><svg '
            f'width="{BAR_W + 230}" height="{height}" role="img">{"".join(bars)}</svg></figure>')


def _tops(records: Sequence[RiskRecord]) -> str:
    rows = []
    for level in reversed(RISK_LEVELS):
        mine = [r for r in records if r.risk_level == level]
        if not mine:
            continue
        tops = [Counter(rule for r in mine for rule in r.detections),
                Counter(h for r in mine for h in r.hosts), Counter(ip for r in mine for ip in r.indicators.ips)]
        rows.append(f"<tr><td>{_level(level)}</td>"
                    + "".join(f"<td>{escape(_top(c))}</td>" for c in tops) + "</tr>")
    return ("<table><tr><th>level</th><th>top rules</th><th>top hosts</th><th>top addresses</th></tr>"
            + "".join(rows) + "</table>")


def _top(counts: Counter) -> str:
    return ", ".join(f"{value} ({n})" for value, n in counts.most_common(3)) or "-"


def _records_table(records: Sequence[RiskRecord]) -> str:
    rows = [f'<tr style="background:{LEVEL_TINTS[r.risk_level]}"><td>{_level(r.risk_level)}</td>'
            f"<td>{escape(_when(r))}</td><td>{escape(r.host or '-')}</td><td>{escape(r.category)}</td>"
            f'<td><a href="#r-{escape(r.id)}">{escape(_short(r.anomaly, 160))}</a></td><td>{escape(r.status)}</td>'
            f"<td>{escape(r.id[:12])}</td></tr>" for r in records]
    return ("<table><tr><th>risk</th><th>last event (UTC)</th><th>host</th><th>category</th><th>anomaly</th>"
            "<th>status</th><th>id</th></tr>" + "".join(rows) + "</table>")


def _detail(r: RiskRecord) -> str:
    parts = [f'<details id="r-{escape(r.id)}"><summary>{_level(r.risk_level)} {escape(r.category)} · '
             f"{escape(r.host or '-')} · {escape(_when(r))} · {escape(_short(r.anomaly, 120))}</summary>",
             f'<p class="muted">{escape(r.source)} lines {r.line_start}-{r.line_end} · {escape(r.decided_by)} · '
             f"status {escape(r.status)} · id {escape(r.id)}</p>"]
    for english, chinese, name in SECTIONS:
        parts.append(f"<p>{section_heading(english, chinese)}<br>{escape(getattr(r, name))}</p>")
    if r.techniques:
        parts.append("<p><b>ATT&amp;CK</b> " + escape(", ".join(f"{t.id} {t.name}".strip() for t in r.techniques))
                     + "</p>")
    if r.detections:
        parts.append("<p><b>Rules</b> " + escape(", ".join(r.detections)) + "</p>")
    for line in r.evidence.exemplars:
        if line.fields:
            parts.append('<div class="fields">' + escape(" · ".join(f"{k}={v}" for k, v in line.fields.items()))
                         + "</div>")
        parts.append(f"<pre>{line.line_no:>7}  {escape(line.text)}</pre>")
    return "".join(parts) + "</details>"


def _when(r: RiskRecord) -> str:
    return f"{r.last_ts:%Y-%m-%d %H:%M:%S}" if r.last_ts else "-"


def _short(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
