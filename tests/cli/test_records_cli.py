"""The analyst's first hour at the terminal (issue 31): the ids printed work everywhere, a mistyped
`--db` creates nothing, a note never changes a status, `records list` filters and pipes, `records
show` shows numbered evidence with its key fields, `records review` records a judgement."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from _repo import REPO
from _store_helpers import BASE_TS, make_record
from click.testing import CliRunner

from logwarden.app.store import open_store
from logwarden.cli.main import main as cli
from logwarden.schemas import ExemplarLine, Indicators
from logwarden.schemas.record import Evidence


def run(*args: str):
    return CliRunner().invoke(cli, list(args))


@pytest.fixture()
def db(tmp_path) -> str:
    url = f"sqlite:///{tmp_path / 'lw.db'}"
    store = open_store(url)
    store.upsert_records([
        make_record(line_start=10, line_end=29, host="bastion-1", risk_level="high"),
        make_record(line_start=40, line_end=49, host="web-2", risk_level="medium", category="web_attack",
                    indicators=Indicators(ips=["198.51.100.23"]), last_ts=BASE_TS.replace(hour=12)),
        make_record(line_start=60, line_end=61, host="web-2", risk_level="critical", status="acknowledged"),
    ])
    store.close()
    return url


def ids(db: str) -> list[str]:
    return [r.id for r in open_store(db).query_records(limit=10)]


# -- item 2: the ids we print work ------------------------------------------------------------------


def test_the_printed_12_character_id_opens_and_reviews_the_record(db):
    full = ids(db)[0]
    shown = run("records", "show", full[:12], "--json", "--db", db)
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["id"] == full
    reviewed = run("records", "review", full[:12], "--status", "acknowledged", "--note", "seen", "--db", db)
    assert reviewed.exit_code == 0, reviewed.output
    assert open_store(db).get_record(full).status == "acknowledged"


def test_an_ambiguous_prefix_is_an_error_that_says_so(db):
    store = open_store(db)
    first = ids(db)[0]
    twin = make_record(id=first[:6] + "f" * 18, line_start=90, line_end=91)
    store.upsert_records([twin])
    result = run("records", "show", first[:6], "--db", db)
    assert result.exit_code == 2 and "matches several records" in result.stderr
    assert "Traceback" not in result.output


# -- item 3: a mistyped --db creates nothing -------------------------------------------------------


@pytest.mark.parametrize("command", [("records", "list"), ("records", "show", "abc"), ("export", "--format", "jsonl"),
                                     ("records", "review", "abc", "--note", "x"), ("report", "--html", "-")])
def test_read_commands_refuse_a_missing_store_and_create_nothing(tmp_path, command):
    missing = tmp_path / "typo" / "lw.db"
    result = run(*command, "--db", f"sqlite:///{missing}")
    assert result.exit_code == 2, result.output
    assert "No database at" in result.stderr and "Traceback" not in result.output
    assert not missing.parent.exists()


def test_ui_refuses_a_missing_store(tmp_path):
    missing = tmp_path / "lw.db"
    result = subprocess.run([sys.executable, "-m", "logwarden.cli.main", "ui", "--db", f"sqlite:///{missing}",
                             "--port", "1"], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert result.returncode == 2 and "No database at" in result.stderr
    assert not missing.exists()


def test_a_postgresql_database_without_a_store_is_refused_not_filled(pg_url):
    from sqlalchemy import create_engine, inspect

    result = run("records", "list", "--db", pg_url)
    assert result.exit_code == 2 and "holds no logwarden store" in " ".join(result.stderr.split())
    assert inspect(create_engine(pg_url)).get_table_names() == []


# -- item 1 at the store and the CLI: a note alone keeps the status ----------------------------------


def test_a_second_note_keeps_the_status_the_analyst_picked(db):
    record_id = ids(db)[0]
    assert run("records", "review", record_id[:12], "--status", "in_progress", "--note", "first note",
               "--db", db).exit_code == 0
    assert run("records", "review", record_id[:12], "--note", "second note", "--db", db).exit_code == 0
    history = [(r.status, r.note) for r in open_store(db).list_reviews(record_id)]
    assert history == [("in_progress", "first note"), ("in_progress", "second note")]


# -- records list: columns, filters, sorting, plain output when piped --------------------------------


def test_list_piped_is_tab_separated_one_record_a_line_and_grep_finds_an_address(db):
    result = run("records", "list", "--db", db)
    lines = result.stdout.splitlines()
    assert lines[0].split("\t")[:5] == ["id", "last_event", "risk", "status", "host"]
    assert len(lines) == 4 and all(len(line.split("\t")) == len(lines[0].split("\t")) for line in lines)
    hit = [line for line in lines if "198.51.100.23" in line]
    assert len(hit) == 1 and "\tweb-2\t" in hit[0] and "\tweb_attack\t" in hit[0]


def test_list_filters_by_host_status_and_time_and_sorts(db):
    def listed(*args):
        result = run("records", "list", "--json", "--db", db, *args)
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    assert {r["host"] for r in listed("--host", "WEB")} == {"web-2"}
    assert [r["status"] for r in listed("--status", "acknowledged")] == ["acknowledged"]
    assert [r["line_start"] for r in listed("--since", "2026-11-29T11:00")] == [40]
    assert sorted(r["line_start"] for r in listed("--until", "2026-11-29T11:00")) == [10, 60]
    assert [r["risk_level"] for r in listed()] == ["critical", "high", "medium"]
    assert [r["line_start"] for r in listed("--sort", "time")][0] == 40


def test_show_numbers_the_evidence_lines_under_their_key_fields(tmp_path):
    url = f"sqlite:///{tmp_path / 'lw.db'}"
    line = ('203.0.113.9 - - [02/Mar/2026:10:00:00 +0000] "GET /item.php?id=1%20UNION%20SELECT%20user HTTP/1.1" '
            '200 512 "-" "sqlmap/1.7"')
    open_store(url).upsert_records([make_record(evidence=Evidence(line_numbers=[7], exemplars=[
        ExemplarLine(line_no=7, text=line)]))])
    result = run("records", "show", ids(url)[0][:12], "--db", url)
    assert result.exit_code == 0, result.output
    assert f"        7  {line}" in result.stdout
    assert "path=/item.php?id=1%20UNION%20SELECT%20user" in result.stdout
    assert "param id=1 UNION SELECT user" in result.stdout


def test_show_says_which_model_texts_were_rejected_and_why(tmp_path):
    url = f"sqlite:///{tmp_path / 'lw.db'}"
    open_store(url).upsert_records([make_record(rejected={"anomaly": "empty", "recommendation": "instructions"})])
    result = run("records", "show", ids(url)[0][:12], "--db", url)
    assert result.exit_code == 0, result.output
    assert ("the rules' kept — anomaly: empty or punctuation only; recommendation: a copy of the prompt's or "
            "the schema's instructions") in result.stdout


def test_review_closes_with_a_reason_and_show_prints_the_history(db):
    """Issue 42: the SOC states; closed takes a reason; every change is a row of `records show`."""
    record_id = ids(db)[0]
    closed = run("records", "review", record_id[:12], "--status", "closed", "--reason", "benign_positive",
                 "--note", "the admin's own login", "--reviewer", "ana", "--json", "--db", db)
    assert closed.exit_code == 0, closed.output
    written = json.loads(closed.stdout)
    assert (written["old_status"], written["status"], written["close_reason"], written["reviewer"]) == (
        "open", "closed", "benign_positive", "ana")
    shown = json.loads(run("records", "show", record_id[:12], "--json", "--db", db).stdout)
    assert (shown["status"], shown["close_reason"]) == ("closed", "benign_positive")
    assert [(h["old_status"], h["status"], h["close_reason"], h["note"]) for h in shown["reviews"]] == [
        ("open", "closed", "benign_positive", "the admin's own login")]
    text = run("records", "show", record_id[:12], "--db", db).stdout
    assert "status: closed (benign_positive)" in text and "open -> closed (benign_positive)  ana" in text


def test_review_refuses_old_states_and_a_close_without_reason_naming_what_to_pass(db):
    record_id = ids(db)[0]
    for old, hint in (("confirmed", "--status in_progress"), ("false_positive", "--reason false_positive"),
                      ("resolved", "--reason true_positive"), ("new", "--status open")):
        refused = run("records", "review", record_id[:12], "--status", old, "--db", db)
        assert refused.exit_code == 2 and "no longer a review state" in refused.output, refused.output
        assert "open, acknowledged, in_progress, closed" in refused.output and hint in refused.output
    for args, said in ((("--status", "closed"), "Closing needs a reason"),
                       (("--status", "acknowledged", "--reason", "duplicate"), "goes with status closed only")):
        refused = run("records", "review", record_id[:12], *args, "--db", db)
        assert refused.exit_code == 2 and said in refused.output and "Traceback" not in refused.output
    listed = run("records", "list", "--status", "confirmed", "--db", db)
    assert listed.exit_code == 2 and "--status in_progress" in listed.output
    assert open_store(db).list_reviews(record_id) == []


def test_review_needs_a_status_or_a_note(db):
    result = run("records", "review", ids(db)[0][:12], "--db", db)
    assert result.exit_code == 2 and "--status and/or --note" in result.output


def test_report_writes_the_html_file_and_leaves_nothing_behind_when_the_store_is_missing(db, tmp_path):
    out = tmp_path / "report.html"
    result = run("report", "--html", str(out), "--db", db)
    assert result.exit_code == 0, result.output
    assert "wrote 3 records" in result.output
    assert out.read_text(encoding="utf-8").count("<details") == 3
    missing = tmp_path / "missing.html"
    result = run("report", "--html", str(missing), "--db", f"sqlite:///{tmp_path / 'typo.db'}")
    assert result.exit_code == 2
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith("lw.db")) == ["report.html"]


def test_an_unknown_record_id_is_a_usage_error(db):
    """Issue 45: `records show/review/explain` of an id no record has exited 1, as a failed run does."""
    for args in (("show", "ffffffffffff"), ("review", "ffffffffffff", "--status", "acknowledged"),
                 ("explain", "ffffffffffff", "--json")):
        unknown = run("records", *args, "--db", db)
        assert unknown.exit_code == 2, (args, unknown.output)
        assert "no record with id 'ffffffffffff'" in unknown.stderr and "records list" in unknown.stderr
        assert "Traceback" not in unknown.output


def test_source_is_found_by_its_path_its_end_or_its_file_name(tmp_path):
    """Issue 45: `--source access.log` matched nothing (exit 0, no records) unless the full path was given."""
    url = f"sqlite:///{tmp_path / 'sources.db'}"
    store = open_store(url)
    store.upsert_records([make_record(source="/var/log/nginx/access.log", line_start=1, line_end=2),
                          make_record(source="/var/log/apache2/access.log", line_start=1, line_end=2),
                          make_record(source="/var/log/auth.log", line_start=5, line_end=9)])
    store.close()

    def sources(*given: str) -> list[str]:
        listed = run("records", "list", "--json", *(a for g in given for a in ("--source", g)), "--db", url)
        assert listed.exit_code == 0, listed.output
        return sorted(r["source"] for r in json.loads(listed.stdout))

    assert sources("/var/log/auth.log") == sources("auth.log") == sources("log/auth.log") == ["/var/log/auth.log"]
    assert sources("nginx/access.log", "auth.log") == ["/var/log/auth.log", "/var/log/nginx/access.log"]
    ambiguous = run("records", "list", "--source", "access.log", "--db", url)
    assert ambiguous.exit_code == 2 and "Traceback" not in ambiguous.output
    assert "/var/log/nginx/access.log" in ambiguous.stderr and "/var/log/apache2/access.log" in ambiguous.stderr
    unknown = run("records", "list", "--source", "secure", "--db", url)
    assert unknown.exit_code == 2 and "matches no source" in unknown.stderr and "/var/log/auth.log" in unknown.stderr
    assert run("records", "list", "--source", "th.log", "--db", url).exit_code == 2  # the end of a name is not a name


def test_sigmahq_rules_are_shown_by_title_with_their_id(tmp_path):
    """Issue 45: a SigmaHQ rule (its id a UUID) was shown as `953d460b-…` in the lists and `records show`."""
    from _sigma_helpers import sigma_dir

    rule = sigma_dir() / "rules" / "web" / "webserver_generic" / "web_source_code_enumeration.yml"
    log = tmp_path / "access.log"
    log.write_text("".join(f'203.0.113.9 - - [12/Mar/2024:10:00:0{n} +0000] "GET /.git/config HTTP/1.1" 404 12 "-" '
                           f'"curl/8"\n' for n in range(3)))
    url = f"sqlite:///{tmp_path / 'sigma.db'}"
    assert run("analyze", str(log), "--rules-only", "--sigma", str(rule), "--db", url).exit_code == 0
    uuid, title = "953d460b-f810-420a-97a2-cfca4c98e602", "Source Code Enumeration Detection by Keyword"
    [record] = json.loads(run("records", "list", "--json", "--db", url).stdout)
    assert uuid in record["detections"] and record["rule_titles"][uuid] == title
    listed = run("records", "list", "--db", url).stdout  # piped: tab-separated, the rules column
    assert title in listed and uuid not in listed
    shown = run("records", "show", record["id"][:12], "--db", url).stdout
    assert f"{title} ({uuid})" in shown
    exported = run("export", "--format", "jsonl", "--db", url)  # the hand-over names the rule too
    assert exported.exit_code == 0, exported.output
    assert json.loads(exported.stdout.splitlines()[0])["rule_titles"][uuid] == title
    report = tmp_path / "report.html"
    assert run("report", "--html", str(report), "--db", url).exit_code == 0
    assert title in report.read_text() and f"<b>Rules</b> {uuid}" not in report.read_text()
