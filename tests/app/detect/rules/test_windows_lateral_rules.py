"""logwarden's own Windows lateral-movement / remote-execution rules (app/detect/data/windows_lateral.yml).

Each rule gets the attack as the event logs it (fields as the EVTX samples show them, values
anonymised) and the routine administration that looks like it, which must stay quiet. Security
events go through tests/_rule_events.py's helper; the other channels as evtx_dump writes them,
parsed by the real windows parser."""
from __future__ import annotations

from datetime import timedelta

from _rule_events import UTC0, security
from test_windows_directory_rules import evtx, hits

from logwarden.app.events import Event

# --- SMB: named pipes and admin shares (5145) --------------------------------------------------------


def share_access(i: int, share: str, target: str, logon_id: str = "0x5a41984", mask: str = "0x1") -> Event:
    return security(5145, {"SubjectUserSid": "S-1-5-21-1-2-3-1111", "SubjectUserName": "opsadmin",
                           "SubjectDomainName": "CORP", "SubjectLogonId": logon_id, "ObjectType": "File",
                           "IpAddress": "10.0.12.11", "IpPort": "56594", "ShareName": f"\\\\*\\{share}",
                           "ShareLocalPath": "" if share == "IPC$" else "\\??\\C:\\Windows",
                           "RelativeTargetName": target, "AccessMask": mask,
                           "AccessList": "%%4416\r\n\t\t\t\t", "AccessReason": "-"},
                    line_no=i, ts=UTC0 + timedelta(seconds=i))


def test_atexec_task_pipe_then_output_read_back(rules):
    attack = [share_access(1, "IPC$", "atsvc", mask="0x3"),
              share_access(2, "ADMIN$", "Temp\\kqZTpWhc.tmp"),
              share_access(3, "ADMIN$", "Temp\\kqZTpWhc.tmp", mask="0x10080")]
    assert hits(rules, attack, "lw-win-atexec-remote-task") == [("high", [1, 2])]
    # remote schtasks /s opens the pipe only; an agent reading a temp file over ADMIN$ is not a task;
    # the two in different sessions are not one round trip
    assert hits(rules, [share_access(1, "IPC$", "atsvc", mask="0x3")], "lw-win-atexec-remote-task") == []
    assert hits(rules, [share_access(1, "ADMIN$", "Temp\\agent.tmp")], "lw-win-atexec-remote-task") == []
    split = [share_access(1, "IPC$", "atsvc", logon_id="0x1111"), share_access(2, "ADMIN$", "Temp\\x.tmp", logon_id="0x2222")]
    assert hits(rules, split, "lw-win-atexec-remote-task") == []


def test_service_run_after_probing_the_remote_shell_over_admin_share(rules):
    attack = [share_access(1, "ADMIN$", "System32\\WindowsPowerShell\\v1.0\\powershell.exe"),
              share_access(2, "IPC$", "svcctl", mask="0x7")]
    assert hits(rules, attack, "lw-win-smb-service-shell-execution") == [("high", [1, 2])]
    # Sysinternals PsExec copies its own service binary and opens svcctl: an admin tool, not this
    psexec = [share_access(1, "ADMIN$", "PSEXESVC.exe", mask="0x2"), share_access(2, "IPC$", "svcctl", mask="0x7")]
    assert hits(rules, psexec, "lw-win-smb-service-shell-execution") == []
    # services.msc pointed at another server: svcctl alone
    assert hits(rules, [share_access(1, "IPC$", "svcctl", mask="0x7")], "lw-win-smb-service-shell-execution") == []


# --- services (System 7009 / 7000) --------------------------------------------------------------------


def scm(event_id: int, name: str, line_no: int = 1) -> Event:
    data = ({"param1": "30000", "param2": name, "Binary": ""} if event_id == 7009
            else {"param1": name, "param2": "%%1053", "Binary": ""})
    return evtx(event_id, "System", "Service Control Manager", data, line_no)


def test_random_name_service_timing_out_is_a_metasploit_payload(rules):
    attack = [scm(7009, "gdKhvCScykzNFZKd", 1), scm(7009, "ItUrroruwhZwMrnl", 2), scm(7000, "JyZPMMxJQxHFDMHV", 3)]
    assert hits(rules, attack, "lw-win-random-name-service-timeout") == [("high", [1, 2, 3])]
    # real services that hang on start: words, camel case with few humps, all-lower
    routine = [scm(7009, "DiagTrackService", 1), scm(7009, "wuauserv", 2), scm(7009, "MapsBroker", 3),
               scm(7000, "SensorDataService", 4), scm(7009, "abcdefghijklmnop", 5)]
    assert hits(rules, routine, "lw-win-random-name-service-timeout") == []


# --- accounts -----------------------------------------------------------------------------------------


def password_change(subject: str, target: str, subject_sid: str = "S-1-5-21-1-2-3-1111") -> Event:
    return security(4723, {"TargetUserName": target, "TargetDomainName": "CORP", "TargetSid": "S-1-5-21-1-2-3-1242",
                           "SubjectUserSid": subject_sid, "SubjectUserName": subject, "SubjectDomainName": "CORP",
                           "SubjectLogonId": "0x10e7c4430", "PrivilegeList": "-"})


def test_password_changed_by_another_account_is_changentlm(rules):
    assert hits(rules, [password_change("opsadmin", "svc-backup")], "lw-win-password-changed-by-other-account") == \
        [("high", [1])]
    # a user changing their own password (any case), and the logon screen changing an expired one
    routine = [password_change("alice", "alice"), password_change("Alice", "alice"),
               password_change("WS-12$", "alice", "S-1-5-18"), password_change("ANONYMOUS LOGON", "bob", "S-1-5-7")]
    assert hits(rules, routine, "lw-win-password-changed-by-other-account") == []


def failed_logon(i: int, status: str = "0xc000006d", sub: str = "0xc000006a", logon_type: int = 3,
                 user: str = "alice", ip: str = "-") -> Event:
    return security(4625, {"SubjectUserSid": "S-1-5-18", "SubjectUserName": "SRV01$", "TargetUserSid": "S-1-0-0",
                           "TargetUserName": user, "TargetDomainName": "", "Status": status, "FailureReason": "%%2313",
                           "SubStatus": sub, "LogonType": logon_type, "LogonProcessName": "Advapi  ",
                           "ProcessName": "C:\\Program Files\\OpenSSH-Win64\\sshd.exe", "IpAddress": ip, "IpPort": "-"},
                    line_no=i, ts=UTC0 + timedelta(seconds=i))


def test_logon_refused_by_account_restriction(rules):
    restricted = failed_logon(1, status="0xc000006e", sub="0x0", logon_type=10, user="-", ip="10.0.23.9")
    assert hits(rules, [restricted], "lw-win-logon-account-restriction") == [("medium", [1])]
    assert hits(rules, [failed_logon(1, ip="10.0.23.9")], "lw-win-logon-account-restriction") == []  # a typo


def test_cleartext_logon_guessing_on_one_account(rules):
    guesses = [failed_logon(i, logon_type=8, user="admin@corp.local") for i in range(1, 6)]
    [(level, lines)] = hits(rules, guesses, "lw-win-cleartext-logon-failure-burst")
    assert level == "medium" and lines == [1, 2, 3, 4, 5]
    # four typos; a mapped drive with a stale password (network logon); five users mistyping once each
    quiet = ([failed_logon(i, logon_type=8) for i in range(1, 5)],
             [failed_logon(i, logon_type=3) for i in range(1, 8)],
             [failed_logon(i, logon_type=8, user=f"user{i}") for i in range(1, 6)])
    for events in quiet:
        assert hits(rules, events, "lw-win-cleartext-logon-failure-burst") == []


# --- SQL Server (Application 18456 / 33205) -----------------------------------------------------------


def sql_audit_failure(i: int, login: str, reason: str, state: int) -> Event:
    text = (f"audit_schema_version:1\nevent_time:2020-07-15 11:31:15.6737961\nsequence_number:1\naction_id:LGIF\n"
            f"succeeded:false\nclass_type:LX\nsession_server_principal_name:\nserver_principal_name:{login}\n"
            f"server_instance_name:SQL01\\PROD\ndatabase_name:\nstatement:Login failed for user '{login}'. "
            f"Reason: {reason} [CLIENT: 10.0.23.9]\nadditional_information:<action_info xmlns=\"http://schemas."
            f"microsoft.com/sqlserver/2008/sqlaudit_data\"><pooled_connection>0</pooled_connection><error>0x00004818"
            f"</error><state>{state}</state><address>10.0.23.9</address></action_info>\n")
    return evtx(33205, "Application", "MSSQL$PROD", {"Data": {"#text": text}, "Binary": None}, i,
                computer="sql01.corp.local")


def sql_error(i: int, login: str, reason: str) -> Event:
    return evtx(18456, "Application", "MSSQL$PROD",
                {"Data": {"#text": [login, f" Reason: {reason}", " [CLIENT: 10.0.23.9]"]}, "Binary": ""}, i,
                computer="sql01.corp.local")


DISABLED = "An error occurred while evaluating the password."
WINDOWS_ONLY = "An attempt to login using SQL authentication failed. Server is configured for Windows authentication only."
MISMATCH = "Password did not match that for the login provided."


def test_logon_as_the_disabled_sa(rules):
    assert hits(rules, [sql_audit_failure(1, "sa", DISABLED, 7)], "lw-win-mssql-disabled-sa-logon") == [("medium", [1])]
    # sa enabled with a wrong password (the burst rule's), another disabled login, a login named sa_reports
    quiet = [sql_audit_failure(1, "sa", MISMATCH, 8), sql_audit_failure(2, "app_ro", DISABLED, 7),
             sql_audit_failure(3, "sa_reports", DISABLED, 7)]
    assert hits(rules, quiet, "lw-win-mssql-disabled-sa-logon") == []


def test_sql_logins_tried_on_a_windows_auth_only_server(rules):
    errors = [sql_error(i, "probe-user", WINDOWS_ONLY) for i in range(1, 6)]
    assert hits(rules, errors, "lw-win-mssql-sql-auth-on-windows-only") == [("medium", [1, 2, 3, 4, 5])]
    audit = [sql_audit_failure(i, "probe-user", WINDOWS_ONLY, 58) for i in range(1, 6)]
    assert hits(rules, audit, "lw-win-mssql-sql-auth-on-windows-only") == [("medium", [1, 2, 3, 4, 5])]
    # four attempts, and five plain wrong passwords on a mixed-mode server
    assert hits(rules, errors[:4], "lw-win-mssql-sql-auth-on-windows-only") == []
    mismatches = [sql_error(i, "app_rw", MISMATCH) for i in range(1, 6)]
    assert hits(rules, mismatches, "lw-win-mssql-sql-auth-on-windows-only") == []
