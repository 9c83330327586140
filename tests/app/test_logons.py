"""`logwarden logons` (issue 45 item 7): a logon summary per account and source address (Hayabusa's
`logon-summary`) over sshd, Windows and CloudTrail sign-ins, counted on real logs and checked
against counts made independently of logwarden's parsers."""

from __future__ import annotations

import json
import re

from _repo import REPO, SAMPLE_LOGS
from click.testing import CliRunner

from logwarden.app.logons import summarise
from logwarden.cli.main import main as cli

EVTX_TO_MITRE = REPO / "shared" / "realdata" / "evtx_to_mitre"
KERBEROS = EVTX_TO_MITRE / "TA0006-Credential_Access" / "T1110.xxx-Brut_force" / "ID4771-Kerberos_brutforce_with_valid_user.jsonl"
NTLM = EVTX_TO_MITRE / "TA0006-Credential_Access" / "T1110.xxx-Brut_force" / "ID_4776_4625-AccountRestore_local_bruteforce.jsonl"


def rows_by_key(summary) -> dict:
    return {(r.account, r.source): r for r in summary.rows}


def _said(text: str, outcome: str, user: str, address: str) -> int:
    """How many times sshd said it, a "message repeated N times: [ … ]" line counting N."""
    said = rf"{outcome} \S+ for (?:invalid user )?{user} from {re.escape(address)} "
    plain = len(re.findall(rf"sshd\[\d+\]: {said}", text))
    return plain + sum(int(n) for n in re.findall(rf"sshd\[\d+\]: message repeated (\d+) times: \[ ?{said}", text))


def test_sshd_counts_match_the_accepted_and_failed_lines_of_the_file():
    text = (SAMPLE_LOGS / "auth.log").read_text()
    summary = rows_by_key(summarise([SAMPLE_LOGS / "auth.log"]))
    assert "message repeated 2 times: [ Failed password for deploy" in text  # the case counted twice
    for user, address in (("deploy", "203.0.113.80"), ("root", "203.0.113.45"), ("mchen", "10.0.4.22")):
        failed, accepted = _said(text, "Failed", user, address), _said(text, "Accepted", user, address)
        row = summary[(user, address)]
        assert (row.failures, row.successes) == (failed, accepted), user
        assert row.via == {"sshd"}
    deploy = summary[("deploy", "203.0.113.80")]
    assert deploy.failures > 1 and deploy.successes == 1
    assert deploy.first_failure <= deploy.last_failure <= deploy.first_success  # the guess that worked came last


def test_kerberos_pre_authentication_failures_are_counted_per_account_and_address():
    events = [json.loads(line)["Event"] for line in KERBEROS.read_text().splitlines() if line.strip()]
    expected: dict[tuple[str, str], int] = {}
    for event in events:
        if event["System"]["EventID"] == 4771:
            data = event["EventData"]
            key = (data["TargetUserName"], data["IpAddress"].removeprefix("::ffff:"))
            expected[key] = expected.get(key, 0) + 1
    summary = rows_by_key(summarise([KERBEROS]))
    assert expected
    assert {key: row.failures for key, row in summary.items() if "windows-4771" in row.via} == expected


def test_4625_failures_keep_the_domain_and_say_no_source_for_a_local_logon():
    summary = rows_by_key(summarise([NTLM]))
    admin = summary[("WIN\\Admin", "-")]
    assert admin.failures == 8 and admin.successes == 0 and "windows-4625" in admin.via


def test_console_logins_are_counted_by_outcome():
    lines = [json.loads(line) for line in (SAMPLE_LOGS / "cloudtrail.jsonl").read_text().splitlines() if line.strip()]
    logins = [x for x in lines if x.get("eventName") == "ConsoleLogin"]
    summary = summarise([SAMPLE_LOGS / "cloudtrail.jsonl"])
    assert sum(r.successes for r in summary.rows) == sum(x["responseElements"]["ConsoleLogin"] == "Success" for x in logins)
    assert sum(r.failures for r in summary.rows) == sum(x["responseElements"]["ConsoleLogin"] == "Failure" for x in logins)
    assert all(r.via == {"cloudtrail"} for r in summary.rows)


def test_entra_and_microsoft_365_sign_ins(tmp_path):
    # the shapes Microsoft documents: a diagnostic-settings SignInLogs row, unified audit log records
    path = tmp_path / "signins.json"
    path.write_text("\n".join(json.dumps(x) for x in [
        {"time": "2024-05-01T10:00:00Z", "operationName": "Sign-in activity", "category": "SignInLogs",
         "resultType": "50126", "callerIpAddress": "198.51.100.7",
         "properties": {"userPrincipalName": "bob@corp.example", "ipAddress": "198.51.100.7"}},
        {"time": "2024-05-01T10:01:00Z", "operationName": "Sign-in activity", "category": "SignInLogs",
         "resultType": "0", "callerIpAddress": "198.51.100.7",
         "properties": {"userPrincipalName": "bob@corp.example", "ipAddress": "198.51.100.7"}},
        {"CreationTime": "2024-05-01T11:00:00", "Operation": "UserLoginFailed", "RecordType": 15,
         "UserId": "eve@corp.example", "ClientIP": "203.0.113.9", "Workload": "AzureActiveDirectory"},
        {"CreationTime": "2024-05-01T11:02:00", "Operation": "UserLoggedIn", "RecordType": 15,
         "UserId": "eve@corp.example", "ClientIP": "203.0.113.9", "Workload": "AzureActiveDirectory"},
    ]) + "\n")
    rows = rows_by_key(summarise([path]))
    bob, eve = rows[("bob@corp.example", "198.51.100.7")], rows[("eve@corp.example", "203.0.113.9")]
    assert (bob.successes, bob.failures, bob.via) == (1, 1, {"entra"})
    assert (eve.successes, eve.failures, eve.via) == (1, 1, {"m365"})
    assert eve.first_failure.isoformat() == "2024-05-01T11:00:00+00:00"  # the audit log's bare times are UTC


def _windows_line(event_id: int, when: str, **data) -> str:
    system = {"EventID": event_id, "Channel": "Security", "Computer": "dc1",
              "Provider": {"#attributes": {"Name": "Microsoft-Windows-Security-Auditing"}},
              "TimeCreated": {"#attributes": {"SystemTime": when}}}
    return json.dumps({"Event": {"System": system, "EventData": data}})


def test_first_and_last_of_each_outcome_and_what_is_left_out(tmp_path):
    path = tmp_path / "security.jsonl"
    path.write_text("\n".join([
        _windows_line(4625, "2024-05-01T10:00:00Z", TargetUserName="bob", TargetDomainName="CORP", IpAddress="10.0.0.9",
                      LogonType=3),
        _windows_line(4624, "2024-05-01T10:05:00Z", TargetUserName="bob", TargetDomainName="CORP", IpAddress="10.0.0.9",
                      LogonType=3),
        _windows_line(4625, "2024-05-01T10:20:00Z", TargetUserName="bob", TargetDomainName="CORP", IpAddress="10.0.0.9",
                      LogonType=3),
        _windows_line(4624, "2024-05-01T09:00:00Z", TargetUserName="bob", TargetDomainName="CORP", IpAddress="10.0.0.9",
                      LogonType=10),
        _windows_line(4776, "2024-05-01T11:00:00Z", TargetUserName="bob", Workstation="WS7", Status="0x0"),
        _windows_line(4776, "2024-05-01T11:01:00Z", TargetUserName="bob", Workstation="WS7", Status="0xc000006a"),
        _windows_line(4624, "2024-05-01T10:00:00Z", TargetUserName="SYSTEM", TargetDomainName="NT AUTHORITY",
                      IpAddress="-", LogonType=5),
        _windows_line(4624, "2024-05-01T10:00:00Z", TargetUserName="DC1$", TargetDomainName="CORP", IpAddress="10.0.0.2",
                      LogonType=3),
    ]) + "\n")
    rows = rows_by_key(summarise([path]))
    assert set(rows) == {("CORP\\bob", "10.0.0.9"), ("bob", "WS7")}  # the service logon and the machine account are not people
    bob = rows[("CORP\\bob", "10.0.0.9")]
    assert (bob.successes, bob.failures) == (2, 2)
    assert bob.logon_types == {"3 network", "10 remote interactive"}
    assert (bob.first_success.isoformat(), bob.last_success.isoformat()) == ("2024-05-01T09:00:00+00:00",
                                                                            "2024-05-01T10:05:00+00:00")
    assert (bob.first_failure.isoformat(), bob.last_failure.isoformat()) == ("2024-05-01T10:00:00+00:00",
                                                                            "2024-05-01T10:20:00+00:00")
    ntlm = rows[("bob", "WS7")]
    assert (ntlm.successes, ntlm.failures) == (1, 1)
    assert len(rows_by_key(summarise([path], include_service=True))) == 4


def test_cli_json_table_and_exit_codes(tmp_path):
    runner = CliRunner()
    done = runner.invoke(cli, ["logons", str(SAMPLE_LOGS / "auth.log"), "--json"])
    assert done.exit_code == 0, done.output
    report = json.loads(done.stdout)
    deploy = next(r for r in report["rows"] if (r["account"], r["source"]) == ("deploy", "203.0.113.80"))
    assert deploy["successes"] == 1 and deploy["first_failure"].endswith("Z") and deploy["via"] == ["sshd"]
    table = runner.invoke(cli, ["logons", str(SAMPLE_LOGS / "auth.log"), "--failed-only", "--limit", "3"])
    assert table.exit_code == 0 and "deploy" in table.stdout
    missing = runner.invoke(cli, ["logons", str(tmp_path / "nope.log")])
    said = " ".join(missing.output.split())  # the message wraps where a long tmp path ends
    assert missing.exit_code == 2 and "Traceback" not in said and "no such file" in said
    assert runner.invoke(cli, ["logons", "--help"]).exit_code == 0
    assert runner.invoke(cli, ["logons"]).exit_code == 2


def test_an_unreadable_file_in_a_folder_is_exit_1_and_the_rest_is_read(tmp_path):
    (tmp_path / "blob.log").write_bytes(bytes(range(256)) * 16)
    (tmp_path / "auth.log").write_text((SAMPLE_LOGS / "auth.log").read_text())
    done = CliRunner().invoke(cli, ["logons", str(tmp_path), "--json"])
    assert done.exit_code == 1
    report = json.loads(done.stdout)
    assert report["errors"] and report["rows"]
