"""`logwarden gaps` (issue 45 item 7): EventRecordID holes per channel and computer, cleared logs,
audit serial holes and quiet periods in text logs (Chainsaw's `analyse gaps`, extended to
syslog/journald/auditd). Real EVTX files are checked against ids read with the EVTX library
itself; the arithmetic of silences and serials on small files made here."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import evtx
from _repo import REPO, SAMPLE_LOGS
from click.testing import CliRunner

from logwarden.app.gaps import GapOptions, find_gaps
from logwarden.cli.main import main as cli

ANYDESK = (REPO / "shared" / "sigma" / "regression_data" / "rules" / "windows" / "file" / "file_event"
           / "file_event_win_anydesk_artefact" / "0b9ad457-2554-44c1-82c2-d56a99c42377.evtx")
CLEARED = (REPO / "shared" / "realdata" / "evtx_to_mitre" / "TA0005-Defense_Evasion" / "T1070.001-Clear_Windows_event_logs"
           / "ID104-1102-Event_log_cleared.jsonl")


def test_record_id_holes_of_a_real_evtx_file_are_the_ids_the_file_lacks():
    # the System EventRecordID (the id analysts see; a filtered export renumbers the record headers)
    ids = sorted(json.loads(record["data"])["Event"]["System"]["EventRecordID"]
                 for record in evtx.PyEvtxParser(str(ANYDESK)).records_json())
    expected = {(a, b) for a, b in zip(ids, ids[1:]) if b > a + 1}
    found = find_gaps([ANYDESK], GapOptions(kinds=("record_ids",))).gaps
    assert expected  # the sample is filtered: it has holes
    assert {(g.before, g.after) for g in found} == expected
    assert all(g.missing == g.after - g.before - 1 for g in found)
    assert {g.scope for g in found} == {"Microsoft-Windows-Sysmon/Operational@ar-win-dc.attackrange.local"}


def test_cleared_logs_are_reported_with_who_and_which_channel():
    found = find_gaps([CLEARED], GapOptions(kinds=("cleared",))).gaps
    events = [json.loads(line)["Event"] for line in CLEARED.read_text().splitlines() if line.strip()]
    clears = [e for e in events if e["System"]["EventID"] in (104, 1102)]
    assert len(found) == len(clears) > 1
    security = [g for g in found if g.detail.startswith("the Security log was cleared")]
    assert len(security) == sum(e["System"]["EventID"] == 1102 for e in clears) >= 1
    assert security[0].scope == "Security@FS03.offsec.lan" and security[0].detail.endswith("by admmig")
    assert any("(Application)" in g.detail for g in found)  # 104 names the channel it cleared, not System


def test_clears_in_an_export_that_keeps_only_the_rendered_message():
    # Security-Datasets rows (flat, no UserData): the channel and the account are in the message text
    recording = next((REPO / "shared" / "realdata" / "otrf" / "atomic" / "windows").glob(
        "*/host/cmd_bitsadmin_download_psh_script_2020-10-2302365189.json"))
    found = find_gaps([recording], GapOptions(kinds=("cleared",))).gaps
    assert [g.detail for g in found] == ["the Security log was cleared (Security) by wardog",
                                         "an event log was cleared (System)", "an event log was cleared (Application)"]


def _syslog(tmp_path, stamps: list[datetime]):
    path = tmp_path / "messages"
    path.write_text("".join(f"{t:%b %d %H:%M:%S} host1 cron[{i}]: job {i} ran\n" for i, t in enumerate(stamps)))
    return path


def test_a_silence_far_longer_than_the_files_rhythm_is_one_finding_with_its_times(tmp_path):
    start = datetime(2024, 6, 3, 8, 0, 0)
    stamps = [start + timedelta(seconds=10 * i) for i in range(30)]
    stamps += [stamps[-1] + timedelta(hours=2, seconds=10 * i) for i in range(1, 31)]
    path = _syslog(tmp_path, stamps)
    found = find_gaps([path]).gaps
    assert [g.kind for g in found] == ["quiet"]
    quiet = found[0]
    assert (quiet.before, quiet.after) == (30, 31)  # line numbers either side
    assert quiet.seconds == 2 * 3600 + 10
    assert quiet.end - quiet.start == timedelta(hours=2, seconds=10)
    assert "2h" in quiet.detail and "10s between lines" in quiet.detail
    assert find_gaps([path], GapOptions(min_quiet=timedelta(hours=3))).gaps == []


def test_a_silence_seen_by_two_interleaved_writers_is_one_finding(tmp_path):
    # a merged file: writer A's lines, then writer B's over the same hours; both are silent 09:00-12:00
    start = datetime(2024, 6, 3, 8, 0, 0)
    block = [start + timedelta(minutes=2 * i) for i in range(31)] + [datetime(2024, 6, 3, 12, 0, 0)]
    found = find_gaps([_syslog(tmp_path, block + block)]).gaps
    assert [(g.kind, g.seconds, g.before, g.after) for g in found] == [("quiet", 3 * 3600, 31, 32)]


def test_a_silence_in_a_journald_export(tmp_path):
    start = 1717401600_000000  # microseconds, as journalctl -o json writes __REALTIME_TIMESTAMP
    stamps = [start + 5_000_000 * i for i in range(25)] + [start + 5_000_000 * 24 + 3_600_000_000 + 5_000_000 * i
                                                           for i in range(1, 26)]
    path = tmp_path / "journal.json"
    path.write_text("".join(json.dumps({"__REALTIME_TIMESTAMP": str(t), "_HOSTNAME": "h1", "SYSLOG_IDENTIFIER": "cron",
                                        "_SYSTEMD_UNIT": "cron.service", "MESSAGE": f"job {i}"}) + "\n"
                            for i, t in enumerate(stamps)))
    found = find_gaps([path]).gaps
    assert [(g.kind, g.seconds, g.before, g.after) for g in found] == [("quiet", 3605.0, 25, 26)]


def _audit(tmp_path, serials: list[int]):
    path = tmp_path / "audit.log"
    path.write_text("".join(f"type=SYSCALL msg=audit({1717401600 + i}.{i % 1000:03d}:{s}): arch=c000003e syscall=59 "
                            f"success=yes exit=0 pid={100 + i} uid=0 comm=\"ls\" exe=\"/usr/bin/ls\"\n"
                            for i, s in enumerate(serials)))
    return path


def test_audit_serial_holes_and_restarts(tmp_path):
    # several records share a serial, two arrive out of order; 104-106 are missing; then a reboot
    serials = [100, 100, 101, 103, 102, 102, 107, 108, 108, 109, 5000, 5001, 3, 4, 5, 6]
    found = find_gaps([_audit(tmp_path, serials)], GapOptions(kinds=("audit_serials",))).gaps
    holes = [(g.before, g.after, g.missing) for g in found if g.missing]
    assert sorted(holes) == [(103, 107, 3), (109, 5000, 4890)]
    restarts = [g for g in found if not g.missing]
    assert [(g.before, g.after) for g in restarts] == [(5001, 3)] and "restart" in restarts[0].detail


def test_windows_json_record_ids_by_channel_and_computer(tmp_path):
    def line(record_id: int, channel: str, minute: int) -> str:
        system = {"EventID": 4688, "Channel": channel, "Computer": "ws1", "EventRecordID": record_id,
                  "TimeCreated": {"#attributes": {"SystemTime": f"2024-06-03T08:{minute:02d}:00Z"}}}
        return json.dumps({"Event": {"System": system, "EventData": {"NewProcessName": "C:\\x.exe"}}})

    path = tmp_path / "security.jsonl"
    path.write_text("\n".join([line(1, "Security", 0), line(2, "Security", 1), line(7, "Security", 2),
                               line(50, "System", 3), line(51, "System", 4)]) + "\n")
    found = find_gaps([path]).gaps
    assert [(g.scope, g.before, g.after, g.missing) for g in found] == [("Security@ws1", 2, 7, 4)]
    assert found[0].start == datetime(2024, 6, 3, 8, 1, tzinfo=timezone.utc)
    assert found[0].detail == "4 EventRecordIDs missing: 3-6"


def test_cli_json_table_and_exit_codes(tmp_path):
    runner = CliRunner()
    done = runner.invoke(cli, ["gaps", str(CLEARED), "--json"])
    assert done.exit_code == 0, done.output
    report = json.loads(done.stdout)
    assert report["files"] == 1 and {g["kind"] for g in report["gaps"]} >= {"cleared"}
    assert all(g["start"].endswith("Z") for g in report["gaps"])
    table = runner.invoke(cli, ["gaps", str(SAMPLE_LOGS / "windows_security.jsonl"), "--limit", "2"])
    assert table.exit_code == 0 and "cleared" in table.stdout
    missing = runner.invoke(cli, ["gaps", str(tmp_path / "nope.evtx")])
    assert missing.exit_code == 2 and "Traceback" not in missing.output
    assert runner.invoke(cli, ["gaps", "--help"]).exit_code == 0
    assert runner.invoke(cli, ["gaps", str(CLEARED), "--kind", "bogus"]).exit_code == 2


def test_an_unreadable_file_in_a_folder_is_exit_1_and_the_rest_is_read(tmp_path):
    (tmp_path / "blob.log").write_bytes(bytes(range(256)) * 16)
    (tmp_path / "security.jsonl").write_text(CLEARED.read_text())
    done = CliRunner().invoke(cli, ["gaps", str(tmp_path), "--json"])
    assert done.exit_code == 1
    report = json.loads(done.stdout)
    assert report["errors"] and "binary" in report["errors"][0]
    assert any(g["kind"] == "cleared" for g in report["gaps"])
