"""The HTML report (`logwarden report --html OUT`): the summary, charts, top rules and hosts, the
incidents (story, next steps, a timeline of their records) and the records of a store in one
self-contained file to hand to someone without the UI, as Hayabusa's HTML summary is.

Records and incidents link both ways: an incident's timeline to its records' details (`#r-<id>`),
a record to its incident (`#i-<id>`); a record in no incident is an alert on its own. Evidence is
capped per record (`EVIDENCE_LINES` lines of `LINE_CHARS` characters, the report says so): the
store keeps all of it, and 600 records once made 2.2 MB.

Self-contained: inline CSS, charts drawn as inline SVG here, the CJK heading glyphs as a data URL,
no script and no link or image from another host (a test checks every `src`/`href`). Every value
from a record or incident is HTML-escaped (log text is attacker-written, stories model-written).
Knows nothing of the store or the CLI: it is given records and incidents and returns text.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timezone
from html import escape

from logwarden.schemas import RISK_LEVELS, RiskRecord, risk_rank
from logwarden.schemas.incident import Incident
from logwarden.ui.style import LEVEL_COLORS, LEVEL_TINTS, SECTIONS, font_face_css, section_heading

TOP = 10
BAR_W = 420
# per record, what the store keeps beyond these is left out (`logwarden records show ID` shows it)
EVIDENCE_LINES = 2  # evidence lines (the key fields of the first)
LINE_CHARS = 200  # characters of an evidence line and of the key fields
TEXT_CHARS = 400  # characters of the anomaly, trace and recommendation

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
.incident{border:1px solid #e4e7eb;border-radius:6px;padding:.2rem 1rem .8rem;margin:1rem 0}
.incident h3{margin:.6rem 0 .2rem}
"""


def render_report(records: Sequence[RiskRecord], *, title: str, source: str, incidents: Iterable[Incident] = (),
                  now: datetime | None = None) -> str:
    """The report of `records`; `incidents` are those holding some of them (their other members are
    counted, not shown)."""
    now = now or datetime.now(timezone.utc)
    records = sorted(records, key=lambda r: (-r.risk_score, -(r.last_ts.timestamp() if r.last_ts else 0)))
    shown = {r.id for r in records}
    incidents = sorted((i for i in incidents if shown.intersection(i.record_ids)),
                       key=lambda i: (-risk_rank(i.risk_level), -(i.last_ts.timestamp() if i.last_ts else 0), i.id))
    incident_of: dict[str, Incident] = {}
    for incident in incidents:
        for record_id in incident.record_ids:
            incident_of.setdefault(record_id, incident)
    body = [f"<h1>{escape(title)}</h1>",
            f'<p class="muted">{len(records):,} records, {len(incidents):,} incidents, from {escape(source)} · '
            f"written {now:%Y-%m-%d %H:%M} UTC by logwarden</p>",
            _kpis(records, incidents), "<h2>Summary</h2>", _charts(records), _tops(records, incident_of),
            f"<h2>Incidents ({len(incidents):,})</h2>", _incidents(incidents, records),
            f"<h2>Records ({len(records):,})</h2>", f'<p class="muted">{_evidence_cap()}</p>',
            *(_detail(r, incident_of.get(r.id)) for r in records)]
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{escape(title)}</title><style>{font_face_css()}{CSS}{_level_css()}</style></head><body>"
            + "\n".join(body) + "</body></html>\n")


def _level_css() -> str:
    """A class per level (`l-` the badge, `t-` a tinted timeline row): one rule each, not a style per element."""
    return "".join(f".l-{lvl}{{background:{LEVEL_COLORS[lvl]}}}.t-{lvl}{{background:{LEVEL_TINTS[lvl]}}}"
                   for lvl in RISK_LEVELS)


def _level(level: str) -> str:
    return f'<span class="level l-{level}">{level}</span>'


def _kpis(records: Sequence[RiskRecord], incidents: Sequence[Incident]) -> str:
    levels = Counter(r.risk_level for r in records)
    times = sorted(t for r in records for t in (r.first_ts, r.last_ts) if t)
    cells = [("records", f"{len(records):,}"), ("incidents", f"{len(incidents):,}")]
    cells += [(lvl, f"{levels[lvl]:,}") for lvl in reversed(RISK_LEVELS)]
    cells += [("open", f"{sum(r.status == 'open' for r in records):,}")]
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


def _tops(records: Sequence[RiskRecord], incident_of: dict[str, Incident]) -> str:
    """Top rules, hosts and addresses: how many records, in how many incidents, how bad, how recent."""
    tables = [("Top rules", "rule", lambda r: r.rule_names()), ("Top hosts", "host", lambda r: r.hosts),
              ("Top addresses", "address", lambda r: r.indicators.ips)]
    return "".join(_top_table(heading, label, records, values, incident_of) for heading, label, values in tables)


def _top_table(heading: str, label: str, records: Sequence[RiskRecord],
               values: Callable[[RiskRecord], list[str]], incident_of: dict[str, Incident]) -> str:
    by_value: dict[str, list[RiskRecord]] = {}
    for record in records:
        for value in dict.fromkeys(values(record)):
            by_value.setdefault(value, []).append(record)
    if not by_value:
        return ""
    worst = {value: max(risk_rank(r.risk_level) for r in mine) for value, mine in by_value.items()}
    top = sorted(by_value.items(), key=lambda item: (-len(item[1]), -worst[item[0]], item[0]))[:TOP]
    rows = []
    for value, mine in top:
        highest = max(mine, key=lambda r: risk_rank(r.risk_level)).risk_level
        incidents = {incident_of[r.id].id for r in mine if r.id in incident_of}
        last = max((r.last_ts for r in mine if r.last_ts), default=None)
        rows.append(f"<tr><td>{escape(value)}</td><td>{len(mine):,}</td><td>{len(incidents):,}</td>"
                    f"<td>{_level(highest)}</td><td>{escape(_time(last))}</td></tr>")
    shown = f"the top {TOP} of {len(by_value):,}" if len(by_value) > TOP else f"all {len(by_value):,}"
    return (f"<h3>{escape(heading)} <span class=\"muted\">({shown})</span></h3><table><tr><th>{label}</th>"
            "<th>records</th><th>incidents</th><th>highest risk</th><th>last event (UTC)</th></tr>"
            + "".join(rows) + "</table>")


def _incidents(incidents: Sequence[Incident], records: Sequence[RiskRecord]) -> str:
    if not incidents:
        return '<p class="muted">No incident holds these records: each is an alert on its own.</p>'
    by_id = {r.id: r for r in records}
    return "\n".join(_incident(i, [by_id[r] for r in i.record_ids if r in by_id]) for i in incidents)


def _incident(incident: Incident, members: list[RiskRecord]) -> str:
    members = sorted(members, key=lambda r: (r.first_ts or r.last_ts or r.created_at, r.id))
    outside = len(incident.record_ids) - len(members)
    span = f"{_time(incident.first_ts)} – {_time(incident.last_ts)} UTC"
    count = len(incident.record_ids)
    facts = [incident.id, f"status {incident.status}" + (f" ({incident.close_reason})" if incident.close_reason else ""),
             span, f"{count:,} record{'s' if count != 1 else ''}"]
    if incident.hosts:
        facts.append("hosts " + ", ".join(incident.hosts))
    parts = [f'<section class="incident" id="i-{escape(incident.id)}"><h3>{_level(incident.risk_level)} '
             f"{escape(incident.title)}</h3>", f'<p class="muted">{escape(" · ".join(facts))}</p>']
    if incident.summary:
        by = "the model's story, checked against its records" if incident.story_by == "llm" else "story"
        parts.append(f"<p><b>Story</b> <span class=\"muted\">({by})</span><br>{escape(incident.summary)}</p>")
    if incident.stages:
        parts.append("<p><b>Stages</b> " + escape(" → ".join(s.replace("_", " ") for s in incident.stages)) + "</p>")
    if incident.next_steps:
        parts.append("<p><b>Next steps</b></p><ol>" + "".join(f"<li>{escape(step)}</li>"
                                                             for step in incident.next_steps) + "</ol>")
    parts.append("<table><tr><th>first event (UTC)</th><th>risk</th><th>host</th><th>rules</th><th>record</th></tr>"
                 + "".join(_timeline_row(r) for r in members) + "</table>")
    if outside:
        parts.append(f'<p class="muted">{outside:,} more records of this incident are outside this report\'s '
                     "filters.</p>")
    return "".join(parts) + "</section>"


def _timeline_row(r: RiskRecord) -> str:
    return (f'<tr class="t-{r.risk_level}"><td>{escape(_time(r.first_ts or r.last_ts))}</td>'
            f"<td>{_level(r.risk_level)}</td><td>{escape(r.host or '-')}</td>"
            f"<td>{escape(', '.join(r.detections) or r.category)}</td>"
            f'<td><a href="#r-{escape(r.id)}">{escape(_short(r.anomaly, 100))}</a></td></tr>')


def _incident_link(incident: Incident | None, limit: int) -> str:
    if incident is None:
        return '<span class="muted">none (an alert on its own)</span>'
    return f'<a href="#i-{escape(incident.id)}">{escape(_short(incident.title, limit))}</a>'


def _evidence_cap() -> str:
    return (f"Riskiest first; open one for its texts and evidence. To keep this file small, each record shows its "
            f"first {EVIDENCE_LINES} evidence lines (the key fields of the first), each cut at {LINE_CHARS} "
            f"characters, and its anomaly, trace and recommendation cut at {TEXT_CHARS}; the store keeps all of it: "
            "<code>logwarden records show ID</code>.")


def _detail(r: RiskRecord, incident: Incident | None) -> str:
    parts = [f'<details id="r-{escape(r.id)}"><summary>{_level(r.risk_level)} {escape(_when(r))} · '
             f"{escape(r.host or '-')} · {escape(r.category)} · {escape(_short(r.anomaly, 100))} · "
             f"{escape(r.status + (f' ({r.close_reason})' if r.close_reason else ''))} · incident: {_incident_link(incident, 60)}</summary>",
             f'<p class="muted">{escape(r.source)} lines {r.line_start}-{r.line_end} · {escape(r.decided_by)} · '
             f"id {escape(r.id)}</p>"]
    for english, chinese, name in SECTIONS:
        parts.append(f"<p>{section_heading(english, chinese)}<br>{escape(_cut(getattr(r, name), TEXT_CHARS))}</p>")
    if r.techniques:
        parts.append("<p><b>ATT&amp;CK</b> " + escape(", ".join(f"{t.id} {t.name}".strip() for t in r.techniques))
                     + "</p>")
    if r.detections:
        parts.append("<p><b>Rules</b> " + escape(", ".join(r.rule_names())) + "</p>")
    lines = r.evidence.exemplars
    if lines and lines[0].fields:
        fields = " · ".join(f"{k}={v}" for k, v in lines[0].fields.items())
        parts.append(f'<div class="fields">{_content(_cut(fields, LINE_CHARS))}</div>')
    parts += [f"<pre>{line.line_no:>7}  {_content(_cut(line.text, LINE_CHARS))}</pre>"
              for line in lines[:EVIDENCE_LINES]]
    if len(lines) > EVIDENCE_LINES:
        parts.append(f'<p class="muted">{EVIDENCE_LINES} of {len(lines):,} evidence lines shown</p>')
    return "".join(parts) + "</details>"


def _content(text: str) -> str:
    """Escaped for an element's content, where only <, > and & mean markup: a JSON line's quotes stay
    quotes (as `&quot;` they were a third of the evidence's bytes). Attributes use `escape`."""
    return escape(text, quote=False)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text) - limit:,} more characters)"


def _time(ts: datetime | None) -> str:
    return f"{ts:%Y-%m-%d %H:%M:%S}" if ts else "-"


def _when(r: RiskRecord) -> str:
    return _time(r.last_ts)


def _short(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
