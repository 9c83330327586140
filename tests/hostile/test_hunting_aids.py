"""Issue 45 item 7 under hostile input: `logons` and `gaps` print account names, addresses and
channels an attacker chose without obeying them, and Windows JSON in odd shapes (ids as objects,
lists, booleans, UserData as a list) is read without a traceback."""

from __future__ import annotations

import json

from _hostile import CLEAR, RLO, TITLE, has_raw_control
from click.testing import CliRunner

from logwarden.cli.main import main


def cli(*args: str):
    return CliRunner().invoke(main, list(args))


def test_logon_tables_show_escapes_in_names_and_json_keeps_them_exact(tmp_path):
    user = f"adm{TITLE}in{RLO}"
    log = tmp_path / "auth.log"
    log.write_text(f"Mar 12 09:15:16 web01 sshd[6068]: Failed password for invalid user {user} from 203.0.113.80 "
                   f"port 52903 ssh2\n"
                   f"Mar 12 09:15:20 web01 sshd[6068]: Accepted password for {CLEAR}root from 203.0.113.80 port 52903 "
                   f"ssh2\n")
    table = cli("logons", str(log))
    assert table.exit_code == 0 and "203.0.113" in table.stdout
    assert not has_raw_control(table.output)
    exact = cli("logons", str(log), "--json")
    assert {row["account"] for row in json.loads(exact.stdout)["rows"]} == {user, f"{CLEAR}root"}


def test_gaps_reads_windows_json_in_odd_shapes_and_shows_channel_names_inert(tmp_path):
    def event(record_id, channel="Security", **extra) -> str:
        system = {"EventID": extra.pop("event_id", 4688), "Channel": channel, "Computer": "ws1",
                  "EventRecordID": record_id, "Provider": {"#attributes": {"Name": "Microsoft-Windows-Eventlog"}},
                  "TimeCreated": {"#attributes": {"SystemTime": "2024-06-03T08:00:00Z"}}}
        return json.dumps({"Event": {"System": system, "EventData": {}, **extra}})

    log = tmp_path / "odd.jsonl"
    log.write_text("\n".join([
        event({"#text": 5}), event([1, 2]), event(True), event("9" * 40), event(-3), event(None),
        event(1, channel=f"Sec{TITLE}urity"), event(4, channel=f"Sec{TITLE}urity"),
        event(7, event_id=104, UserData=["not", "a", "dict"]), event(8, event_id=1102, UserData={"x": 1}),
        json.dumps({"Event": ["not", "a", "dict"]}), json.dumps({"Event": {"System": "text"}}),
    ]) + "\n")
    table = cli("gaps", str(log), "--limit", "0")
    assert table.exit_code == 0, table.output
    assert "Traceback" not in table.output and not has_raw_control(table.output)
    found = json.loads(cli("gaps", str(log), "--json").stdout)["gaps"]
    holes = [g for g in found if g["kind"] == "record_ids"]
    assert any(g["scope"] == f"Sec{TITLE}urity@ws1" and (g["before"], g["after"]) == (1, 4) for g in holes)
    assert {g["detail"].split(" (")[0] for g in found if g["kind"] == "cleared"} == {
        "an event log was cleared", "the Security log was cleared"}
