"""Altair charts and small tables for the overview, built from the store's aggregate rows.

Vega renders labels as SVG/canvas text, never as HTML, so log-derived values (IPs, users, hosts)
are safe here. Knows nothing of the store or of Streamlit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import altair as alt
import pandas as pd

from logwarden.app.store import IndicatorCount, TechniqueCount, TimeCount
from logwarden.schemas import RISK_LEVELS
from logwarden.ui.style import LEVEL_COLORS
from logwarden.ui.text import technique_url

_LEVEL_SCALE = alt.Scale(domain=list(RISK_LEVELS), range=[LEVEL_COLORS[level] for level in RISK_LEVELS])


AUTO_DAY_AFTER = pd.Timedelta(days=3)
CHART_WIDTH_PX = 800  # typical wide-layout width; only used to pick a readable bar width


def pick_bucket(rows: Sequence[TimeCount], choice: str) -> str:
    """"auto": hours for up to three days of data, days beyond."""
    if choice != "auto":
        return choice
    times = [row.bucket for row in rows]
    return "day" if times and max(times) - min(times) > AUTO_DAY_AFTER else "hour"


def risk_over_time(rows: Sequence[TimeCount], bucket: str) -> alt.Chart:
    """Stacked bars of records per time bucket, one colour per risk level (info at the bottom).
    `rows` are hourly counts; "day" sums them per day here (a few thousand rows at most)."""
    frame = pd.DataFrame(rows, columns=["bucket", "level", "count"])
    frame["bucket"] = pd.to_datetime(frame["bucket"], utc=True).dt.tz_localize(None)
    if bucket == "day":
        frame["bucket"] = frame["bucket"].dt.floor("D")
        frame = frame.groupby(["bucket", "level"], as_index=False)["count"].sum()
    frame["order"] = frame["level"].map(RISK_LEVELS.index)
    pick = alt.selection_point(name="pick", fields=["level"], on="click")
    return (alt.Chart(frame, height=260).mark_bar(size=_bar_width(frame["bucket"], bucket)).add_params(pick)
            .encode(x=alt.X("bucket:T", title=f"last event per {bucket} (UTC)", scale=alt.Scale(type="utc")),
                    y=alt.Y("sum(count):Q", title="records"),
                    color=alt.Color("level:N", scale=_LEVEL_SCALE, sort=list(RISK_LEVELS), title="risk"),
                    order=alt.Order("order:Q"),
                    tooltip=[alt.Tooltip("bucket:T", title="from", format="%Y-%m-%d %H:%M"), "level:N",
                             "count:Q"]))


def _bar_width(times: pd.Series, bucket: str) -> float:
    """Bars as wide as their bucket on the axis, but never thinner than 3 px (sparse data stays visible)."""
    if times.empty:
        return 10
    step = pd.Timedelta(hours=1 if bucket == "hour" else 24)
    slots = (times.max() - times.min()) / step + 1
    return float(min(40, max(3, 0.9 * CHART_WIDTH_PX / slots)))


def by_category(counts: Mapping[str, int]) -> alt.Chart:
    frame = pd.DataFrame({"category": list(counts), "records": list(counts.values())})
    return _bars(frame, "category", "records")


def top_values(rows: Sequence[IndicatorCount], label: str) -> alt.Chart:
    frame = pd.DataFrame(rows, columns=[label, "records"])
    return _bars(frame, label, "records")


def _bars(frame: pd.DataFrame, label: str, value: str) -> alt.Chart:
    """Horizontal bars; a click selects a bar (the page turns it into a records filter)."""
    pick = alt.selection_point(name="pick", fields=[label], on="click")
    return (alt.Chart(frame, height=alt.Step(22)).mark_bar(color="#4c78a8").add_params(pick)
            .encode(x=alt.X(f"{value}:Q"), y=alt.Y(f"{label}:N", sort="-x", title=None),
                    tooltip=[f"{label}:N", f"{value}:Q"]))


def technique_table(rows: Sequence[TechniqueCount]) -> pd.DataFrame:
    """Tactic × technique with counts, grouped by tactic; `link` is the attack.mitre.org page."""
    frame = pd.DataFrame(rows, columns=["technique", "tactic", "records"])
    frame["tactic"] = frame["tactic"].replace("", "(unknown)")
    frame["link"] = frame["technique"].map(technique_url)
    return frame.sort_values(["tactic", "records", "technique"], ascending=[True, False, True]).reset_index(drop=True)


TACTIC_ORDER = ("Reconnaissance", "Resource Development", "Initial Access", "Execution", "Persistence",
                "Privilege Escalation", "Defense Evasion", "Credential Access", "Discovery", "Lateral Movement",
                "Collection", "Command and Control", "Exfiltration", "Impact")


def technique_matrix(rows: Sequence[TechniqueCount]) -> pd.DataFrame:
    """The ATT&CK matrix as analysts draw it: one column per tactic in kill-chain order, each cell
    a technique with its name and record count ("T1110.001 Password Guessing (4)"), most seen first."""
    from logwarden.app.attack import display_name

    frame = technique_table(rows)
    if frame.empty:
        return frame
    columns: dict[str, list[str]] = {}
    for tactic, group in frame.groupby("tactic", sort=False):
        cells = [f"{t} {display_name(t) or ''} ({n})".replace("  ", " ")
                 for t, n in zip(group["technique"], group["records"])]
        columns[str(tactic)] = cells
    order = [t for t in TACTIC_ORDER if t in columns] + sorted(t for t in columns if t not in TACTIC_ORDER)
    depth = max(len(cells) for cells in columns.values())
    return pd.DataFrame({t: columns[t] + [""] * (depth - len(columns[t])) for t in order})


def incident_timeline(rows: Sequence[tuple[str, object, str, str, str]]) -> alt.Chart:
    """An incident's records as points on a time axis, one lane per host, coloured by level.
    `rows`: (host, first event, level, category, short id)."""
    frame = pd.DataFrame(rows, columns=["host", "time", "level", "category", "record"])
    frame["time"] = pd.to_datetime(frame["time"], utc=True).dt.tz_localize(None)
    domain, label = time_domain(frame["time"])
    return alt.Chart(frame).mark_circle(size=140, opacity=0.9).encode(
        x=alt.X("time:T", title="first event (UTC)", scale=alt.Scale(type="utc", domain=domain),
                axis=alt.Axis(format=label, labelOverlap=True, tickCount=6)),
        y=alt.Y("host:N", title=None),
        color=alt.Color("level:N", scale=_LEVEL_SCALE, legend=alt.Legend(orient="bottom")),
        tooltip=["record", alt.Tooltip("time:T", format="%Y-%m-%d %H:%M:%S", title="time (UTC)"), "level",
                 "category", "host"])


def time_domain(times: pd.Series) -> tuple[list[str], str]:
    """The axis's span and its tick labels' format. Records of one burst share their second: Vega's own
    domain around a single instant is a second wide and its ticks read `.500` (milliseconds), so the
    span is widened to a minute at least and the labels are times of day, dates once it passes a day."""
    low, high = times.min(), times.max()
    pad = max((high - low) * 0.05, pd.Timedelta(seconds=30))
    span = high - low + 2 * pad
    label = ("%H:%M:%S" if span <= pd.Timedelta(minutes=5) else "%H:%M" if span <= pd.Timedelta(hours=12)
             else "%m-%d %H:%M" if span <= pd.Timedelta(days=4) else "%Y-%m-%d")
    return [(low - pad).isoformat(), (high + pad).isoformat()], label
