"""The end-of-run summary of `analyze` and `eval`, the way Hayabusa closes a scan: detections per
level in the level's colour, the top rules, hosts and addresses per level, the first and last
event, what was read and how much of it the records hold (the reduction), the database and the
exact commands to look further. Model rows only when a model ran.

Built from the run's metrics and its stored records; prints on stderr. Knows nothing of how the
run was made.
"""

from __future__ import annotations

import shlex
from collections import Counter
from collections.abc import Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text

from logwarden.cli.common import LEVEL_STYLES
from logwarden.cli.terminal import add_row, byte_size, cell
from logwarden.schemas import RISK_LEVELS, RiskRecord

TOP = 3


def print_run_summary(console: Console, metrics, records: Sequence[RiskRecord], *, db_url: str,
                      model: bool) -> None:
    console.print(_counts_table(metrics, records, model))
    print_detections(console, records)
    for line in _closing_lines(metrics, records):
        console.print(cell(line), highlight=False)
    print_commands(console, db_url, next_commands(db_url))


def print_commands(console: Console, db_url: str, commands: Sequence[str]) -> None:
    """The database and the commands to go on with, one a line and never wrapped: rich breaks a long
    line at the width, inside a URL or a path, and a command copied from there is two broken halves.
    Soft-wrapped, a narrow terminal folds it on screen and a copy gives it whole."""
    console.print(cell(f"database: {db_url}"), soft_wrap=True, highlight=False)
    console.print("next:", highlight=False, markup=False)
    for command in commands:
        console.print(cell(f"  {command}"), soft_wrap=True, highlight=False)


def next_commands(db_url: str) -> list[str]:
    db = shlex.quote(db_url)
    return [f"logwarden records list --min-risk high --db {db}", f"logwarden records show ID --db {db}",
            f"logwarden incidents list --min-risk medium --db {db}", f"logwarden ui --db {db}"]


def print_detections(console: Console, records: Sequence[RiskRecord], title: str = "") -> None:
    """Detections per level in colour with their top rules, hosts and addresses, and the time span."""
    levels = [level for level in reversed(RISK_LEVELS) if any(r.risk_level == level for r in records)]
    for table in _tops_tables(records, levels, title) if levels else []:
        console.print(table)
    times = sorted(t for r in records for t in (r.first_ts, r.last_ts) if t)
    if times and title:
        console.print(f"first event {times[0]:%Y-%m-%d %H:%M:%S}, last event {times[-1]:%Y-%m-%d %H:%M:%S} (UTC)",
                      highlight=False, markup=False)


def _counts_table(m, records: Sequence[RiskRecord], model: bool) -> Table:
    table = Table(title="logwarden analyze", show_header=True, header_style="bold")
    table.add_column("metric")
    table.add_column("value", justify="right")
    rows: list[tuple[str, object]] = [("files", m.files), ("lines read", m.lines),
                                      ("bytes read", byte_size(m.raw_chars)),
                                      ("lines/s", f"{m.as_dict()['lines_per_s']:,.0f}"), ("windows", m.windows)]
    rows += [("baseline deviations", m.deviations)] if getattr(m, "deviations", 0) else []
    if model:
        rows += [("windows for the model", m.windows_llm), ("prompts queued", m.prompts_queued),
                 ("model calls", m.llm_calls), ("model failures", m.llm_failures),
                 ("awaiting review", m.reviews_pending), ("deviations judged normal", m.deviations_dismissed),
                 ("model budget", m.budget or "-"),
                 ("compression ratio", f"{m.compression_ratio:.1f}x" if m.compression_ratio else "n/a")]
        if m.windows_llm:
            rows += [("rare lines seen by the model", _share(m.rare_lines_shown, m.rare_lines_llm)),
                     ("ungrounded entities removed", _share(m.entities_ungrounded, m.entities_named)),
                     ("model texts rejected", rejected_text(getattr(m, "texts_rejected", {})))]
    rows += [("records", m.records), ("errors", m.errors)]
    rows += [(name, value) for name, value in (("last lines held back", m.held_back_lines),
                                                ("windows not stored (refused)", getattr(m, "windows_quarantined", 0)),
                                                ("lines cut at the length limit", m.truncated_lines),
                                                ("NUL bytes skipped", getattr(m, "nul_bytes", 0)),
                                                ("files skipped", len(getattr(m, "skipped", {})))) if value]
    for name, value in rows:
        add_row(table, name, f"{value:,}" if isinstance(value, int) else str(value))
    by_level = Counter(r.risk_level for r in records)
    for level in reversed(RISK_LEVELS):
        if by_level[level]:
            style = LEVEL_STYLES[level]
            add_row(table, cell(f"records {level}", style), cell(f"{by_level[level]:,}", style))
    for category, n in Counter(r.category for r in records).most_common():
        add_row(table, f"  {category}", f"{n:,}")
    if m.breaker_open:
        add_row(table, "circuit breaker", "OPEN: the rest awaits review")
    return table


def _tops_tables(records: Sequence[RiskRecord], levels: list[str], title: str = "") -> list[Table]:
    """Two tables, one name a line: rules, then hosts and addresses. In one five-column table an 80-column
    terminal cut rule ids and host names mid-word (`lw-ssh-bruteforc` / `e (4)`, issue 45)."""
    rules = Table(title=title or "top rules per level", show_header=True, header_style="bold")
    places = Table(title="top hosts and addresses per level", show_header=True, header_style="bold")
    for table, columns in ((rules, ("level", "records", "rules")), (places, ("level", "hosts", "addresses"))):
        for column in columns:
            table.add_column(column, overflow="fold")
    for level in levels:
        mine = [r for r in records if r.risk_level == level]
        fired = Counter(rule for r in mine for rule in r.detections) or Counter(
            r.category for r in mine if r.decided_by == "llm")
        add_row(rules, cell(level, LEVEL_STYLES[level]), cell(f"{len(mine):,}", LEVEL_STYLES[level]), _top(fired))
        add_row(places, cell(level, LEVEL_STYLES[level]), _top(Counter(h for r in mine for h in r.hosts)),
                _top(Counter(ip for r in mine for ip in r.indicators.ips)))
    return [rules, places]


def _closing_lines(m, records: Sequence[RiskRecord]) -> list[str]:
    times = sorted(t for r in records for t in (r.first_ts, r.last_ts) if t)
    covered = len({(r.source, n) for r in records for n in r.evidence.line_numbers})
    lines = []
    if times:
        lines.append(f"first event {times[0]:%Y-%m-%d %H:%M:%S}, last event {times[-1]:%Y-%m-%d %H:%M:%S} (UTC)")
    if m.lines:
        lines.append(f"read {m.lines:,} lines ({byte_size(m.raw_chars)}); {covered:,} of them are records' evidence: "
                     f"a {100 * (1 - covered / m.lines):.1f}% reduction")
    if getattr(m, "incidents", 0):
        stories = f", {m.stories} with the model's story" if m.stories else ""
        lines.append(f"{m.incidents:,} incidents around this run's records{stories}")
    return lines


def rejected_text(reasons: dict[str, int]) -> str:
    """'12 (instructions 8, bare 4)': the model's texts the gate turned down, by reason (app/textgate.py)."""
    total = sum(reasons.values())
    by_reason = ", ".join(f"{reason} {n:,}" for reason, n in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])))
    return f"{total:,}" + (f" ({by_reason})" if by_reason else "")


def _top(counts: Counter) -> Text:
    """The TOP most counted, one a line (each value shown: a host name from a log cannot act)."""
    return Text("\n").join(cell(f"{value} ({n})") for value, n in counts.most_common(TOP)) or cell("-")


def _share(part: int, whole: int) -> str:
    return f"{part:,}/{whole:,}" + (f" ({part / whole:.0%})" if whole else "")


