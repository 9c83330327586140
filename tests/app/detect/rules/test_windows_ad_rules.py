"""logwarden's own Active Directory / Kerberos / SMB-enumeration rules (app/detect/data/windows_ad.yml).

Each rule gets the attack as the Security log records it (fields as the real samples show them,
values anonymised) and the routine administration that looks like it, which must stay quiet.
Events are built as evtx_dump writes them and parsed by the real windows parser, so field names
and value types are the parser's."""
from __future__ import annotations

import json
from datetime import timedelta

from _rule_events import UTC0
from test_windows_directory_rules import hits

from logwarden.app.events import Event, LogLine
from logwarden.app.parse import parse_lines

DOMAIN_SID = "S-1-5-21-1111111111-2222222222-3333333333"


def sec(event_id: int, data: dict, line_no: int = 1, computer: str = "dc01.corp.local") -> Event:
    """One Security record as evtx_dump writes it, parsed; line N is N seconds after UTC0."""
    record = {"Event": {"System": {"Provider": {"#attributes": {"Name": "Microsoft-Windows-Security-Auditing"}},
                                   "EventID": event_id, "Channel": "Security", "Computer": computer,
                                   "Keywords": "0x8020000000000000",
                                   "TimeCreated": {"#attributes": {"SystemTime": (UTC0 + timedelta(seconds=line_no)).isoformat()}}},
                        "EventData": data}}
    [event] = parse_lines([LogLine("Security.json", 0, 0, line_no, json.dumps(record))], "windows")
    return event


# --- directory configuration tampering ----------------------------------------------------------------


def ds_change(object_dn: str, object_class: str, attribute: str, value: str, operation: str = "%%14674",
              line_no: int = 1) -> Event:
    return sec(5136, {"OpCorrelationID": "C37C1925-0000-0000-0000-000000000000", "AppCorrelationID": "-",
                      "SubjectUserSid": f"{DOMAIN_SID}-1111", "SubjectUserName": "adm-eve", "SubjectDomainName": "CORP",
                      "SubjectLogonId": "0x1b790f9", "DSName": "corp.local", "DSType": "%%14676", "ObjectDN": object_dn,
                      "ObjectGUID": "16BFBCBA-6758-4CDE-BDEB-8E3F661E271E", "ObjectClass": object_class,
                      "AttributeLDAPDisplayName": attribute, "AttributeSyntaxOID": "2.5.5.9", "AttributeValue": value,
                      "OperationType": operation}, line_no=line_no)


def test_extended_right_display_id_rewritten(rules):
    right = "CN=User-Force-Change-Password,CN=Extended-Rights,CN=Configuration,DC=corp,DC=local"
    # the value is deleted and re-added under another display id (the obfuscation step)
    events = [ds_change(right, "controlAccessRight", "localizationDisplayId", "3", "%%14675", line_no=1),
              ds_change(right, "controlAccessRight", "localizationDisplayId", "2", line_no=2)]
    assert hits(rules, events, "lw-win-ad-extended-right-tampered") == [("high", [1, 2])]
    # everyday directory writes: a user's description, a GPO's version, a computer's SPN
    quiet = [ds_change("CN=jdoe,OU=Staff,DC=corp,DC=local", "user", "description", "Accounting"),
             ds_change("CN={127328D6-A8A8-49E3-BA71-410C945F42CE},CN=Policies,CN=System,DC=corp,DC=local",
                       "groupPolicyContainer", "versionNumber", "2", line_no=2),
             ds_change("CN=WEB01,OU=Servers,DC=corp,DC=local", "computer", "servicePrincipalName", "HTTP/web01",
                       line_no=3)]
    assert hits(rules, quiet, "lw-win-ad-extended-right-tampered") == []


def ds_access(subject: str, properties: str, access: str = "%%7688", mask: str = "0x100",
              object_type: str = "%{19195a5b-6da0-11d0-afd3-00c04fd930c9}", object_name: str = "%{0b32719a-0000-4ad5-b9dc-56200eba0ce0}",
              info: str = "-", line_no: int = 1) -> Event:
    return sec(4662, {"SubjectUserSid": f"{DOMAIN_SID}-1111", "SubjectUserName": subject, "SubjectDomainName": "CORP",
                      "SubjectLogonId": "0x882e4a", "ObjectServer": "DS", "ObjectType": object_type,
                      "ObjectName": object_name, "OperationType": "Object Access", "HandleId": "0x0",
                      "AccessList": f"{access}\r\n\t\t\t\t", "AccessMask": mask,
                      "Properties": f"{access}\r\n\t\t{{{properties}}}\r\n\t{{19195a5b-6da0-11d0-afd3-00c04fd930c9}}\r\n",
                      "AdditionalInfo": info, "AdditionalInfo2": ""}, line_no=line_no)


def test_dcshadow_install_replica_and_server_object(rules):
    install = ds_access("adm-eve", "9923a32a-3607-11d2-b9be-0000f87a36b2")
    server_child = ds_access("adm-eve", "bf967a92-0de6-11d0-a285-00aa003049e2", access="%%7680", mask="0x1",
                             object_type="%{f780acc0-56f0-11d1-a9c6-0000f80367c1}",
                             info="CN=WS42,CN=Servers,CN=Default-First-Site-Name,CN=Sites,CN=Configuration,DC=corp,DC=local",
                             line_no=2)
    assert hits(rules, [install], "lw-win-dcshadow-replica-rights") == [("high", [1])]
    assert hits(rules, [server_child], "lw-win-dcshadow-replica-rights") == [("high", [2])]
    # DCs replicating with each other, an admin's "Replicate now" (DS-Replication-Synchronize), and
    # an admin creating a user in an OU (Create Child, not under Sites)
    quiet = [ds_access("DC02$", "9923a32a-3607-11d2-b9be-0000f87a36b2"),
             ds_access("DC02$", "1131f6aa-9c07-11d1-f79f-00c04fc2dcd2", line_no=2),
             ds_access("adm-eve", "1131f6ab-9c07-11d1-f79f-00c04fc2dcd2", line_no=3),
             ds_access("adm-eve", "bf967aba-0de6-11d0-a285-00aa003049e2", access="%%7680", mask="0x1",
                       info="CN=jdoe,OU=Staff,DC=corp,DC=local", line_no=4)]
    assert hits(rules, quiet, "lw-win-dcshadow-replica-rights") == []


# --- probing and enumeration --------------------------------------------------------------------------


def logon(user: str, domain: str, package: str = "NTLM", logon_type=3, line_no: int = 1) -> Event:
    return sec(4624, {"SubjectUserSid": "S-1-0-0", "SubjectUserName": "-", "SubjectDomainName": "-",
                      "SubjectLogonId": "0x0", "TargetUserSid": "S-1-5-7" if user == "ANONYMOUS LOGON" else f"{DOMAIN_SID}-1111",
                      "TargetUserName": user, "TargetDomainName": domain, "TargetLogonId": "0x1e5ac4e4",
                      "LogonType": logon_type, "LogonProcessName": "NtLmSsp ", "AuthenticationPackageName": package,
                      "WorkstationName": "", "LogonGuid": "00000000-0000-0000-0000-000000000000",
                      "TransmittedServices": "-", "LmPackageName": "NTLM V2", "KeyLength": 128, "ProcessId": "0x0",
                      "ProcessName": "-", "IpAddress": "10.1.2.3", "IpPort": "49711"},
               line_no=line_no, computer="fs01.corp.local")


def test_anonymous_logon_naming_a_domain(rules):
    assert hits(rules, [logon("ANONYMOUS LOGON", "corp")], "lw-win-anonymous-logon-with-domain") == [("medium", [1])]
    # the string form of LogonType (other exports) matches too
    assert hits(rules, [logon("ANONYMOUS LOGON", "CORP", logon_type="3")], "lw-win-anonymous-logon-with-domain") \
        == [("medium", [1])]
    # Windows' own null session (NT AUTHORITY), and a named user's NTLM logon to the same share
    quiet = [logon("ANONYMOUS LOGON", "NT AUTHORITY"), logon("jdoe", "CORP", line_no=2),
             logon("ANONYMOUS LOGON", "-", line_no=3)]
    assert hits(rules, quiet, "lw-win-anonymous-logon-with-domain") == []


GROUP = "%{bf967a9c-0de6-11d0-a285-00aa003049e2}"


def confidential_read(subject: str, n: int, start: int = 1) -> list[Event]:
    """n different group objects whose confidential unixUserPassword the subject's query touched."""
    return [sec(4662, {"SubjectUserSid": f"{DOMAIN_SID}-1111", "SubjectUserName": subject, "SubjectDomainName": "CORP",
                       "SubjectLogonId": "0x11ac8266", "ObjectServer": "DS", "ObjectType": GROUP,
                       "ObjectName": f"%{{7a2aa51b-a49d-4a86-8d4d-{i:012x}}}", "OperationType": "Object Access",
                       "HandleId": "0x0", "AccessList": "%%7688\r\n\t\t\t\t", "AccessMask": "0x100",
                       "Properties": "%%7688\r\n\t\t{771727b1-31b8-4cdf-ae62-4fe39fadf89e}\r\n"
                                     "\t\t\t{612cb747-c0e8-4f92-9221-fdd5f15b550d}\r\n"
                                     "\t{bf967a9c-0de6-11d0-a285-00aa003049e2}\r\n",
                       "AdditionalInfo": "-", "AdditionalInfo2": ""}, line_no=start + i) for i in range(n)]


def test_bulk_confidential_attribute_read(rules):
    found = hits(rules, confidential_read("eve", 12), "lw-win-confidential-attribute-sweep")
    assert [level for level, _ in found] == ["medium"]
    assert found[0][1][:10] == list(range(1, 11))
    # an admin opening a few objects' attributes, and a computer account's own reads
    quiet = confidential_read("eve", 4) + confidential_read("FS01$", 12, start=20)
    assert hits(rules, quiet, "lw-win-confidential-attribute-sweep") == []


def service_ticket(client: str, service: str, line_no: int, ip: str = "::ffff:10.1.2.3") -> Event:
    return sec(4769, {"TargetUserName": client, "TargetDomainName": "CORP.LOCAL", "ServiceName": service,
                      "ServiceSid": f"{DOMAIN_SID}-{1100 + line_no}", "TicketOptions": "0x40810000",
                      "TicketEncryptionType": "0x12", "IpAddress": ip, "IpPort": "50270", "Status": "0x0",
                      "LogonGuid": "3FB7FCCA-0000-0000-0000-9C0C075CBC8A", "TransmittedServices": "-"}, line_no=line_no)


def test_kerberos_ticket_sweep_over_many_hosts(rules):
    sweep = [service_ticket("eve@CORP.LOCAL", f"SRV{i:02d}$", i) for i in range(1, 13)]
    assert [level for level, _ in hits(rules, sweep, "lw-win-kerberos-host-ticket-sweep")] == ["medium"]
    # a user's day (mail, file server, intranet, the DC, krbtgt renewals) and a server's machine
    # account that talks to every host (it is filtered by its $@ name)
    day = [service_ticket("jdoe@CORP.LOCAL", s, i) for i, s in
           enumerate(["FS01$", "EXCH01$", "WEB01$", "DC01$", "krbtgt", "FS01$", "DC01$"], 1)]
    machine = [service_ticket("SCCM01$@CORP.LOCAL", f"SRV{i:02d}$", 20 + i) for i in range(12)]
    assert hits(rules, day + machine, "lw-win-kerberos-host-ticket-sweep") == []


def pipe_open(pipe: str, host: str, line_no: int, user: str = "eve", ip: str = "10.1.2.3") -> Event:
    return sec(5145, {"SubjectUserSid": f"{DOMAIN_SID}-1111", "SubjectUserName": user, "SubjectDomainName": "CORP",
                      "SubjectLogonId": "0x2f4a1", "ObjectType": "File", "IpAddress": ip, "IpPort": "51122",
                      "ShareName": "\\\\*\\IPC$", "ShareLocalPath": "", "RelativeTargetName": pipe,
                      "AccessMask": "0x12019f", "AccessList": "%%1538\r\n\t\t\t\t%%1541\r\n\t\t\t\t%%4416\r\n\t\t\t\t",
                      "AccessReason": "-"}, line_no=line_no, computer=host)


def test_rpc_pipe_sweep_over_many_hosts(rules):
    sweep = [pipe_open(p, f"srv{h}.corp.local", h * 3 + k) for h in range(6) for k, p in
             enumerate(["srvsvc", "samr", "lsarpc"])]
    assert [level for level, _ in hits(rules, sweep, "lw-win-smb-rpc-pipe-sweep")] == ["medium"]
    # an admin browsing one server's shares and groups, a computer account's own traffic on many
    # hosts, and a user opening files on several file servers
    one_host = [pipe_open(p, "fs01.corp.local", i) for i, p in enumerate(["srvsvc", "samr", "lsarpc"] * 3, 1)]
    machine = [pipe_open("lsarpc", f"srv{h}.corp.local", 20 + h, user="WS042$") for h in range(6)]
    files = [sec(5145, {"SubjectUserName": "eve", "ShareName": "\\\\*\\Finance", "RelativeTargetName": "q3.xlsx",
                        "IpAddress": "10.1.2.3"}, line_no=40 + h, computer=f"fs{h}.corp.local") for h in range(6)]
    assert hits(rules, one_host + machine + files, "lw-win-smb-rpc-pipe-sweep") == []


def admins_enumerated(host: str, line_no: int, caller: str = "-", user: str = "eve") -> Event:
    return sec(4799, {"TargetUserName": "Administrators", "TargetDomainName": "Builtin", "TargetSid": "S-1-5-32-544",
                      "SubjectUserSid": f"{DOMAIN_SID}-1111", "SubjectUserName": user, "SubjectDomainName": "CORP",
                      "SubjectLogonId": "0x88f313a8", "CallerProcessId": "0x0" if caller == "-" else "0x1a2c",
                      "CallerProcessName": caller}, line_no=line_no, computer=host)


def test_local_admins_enumerated_remotely_on_many_hosts(rules):
    sweep = [admins_enumerated(f"srv{h}.corp.local", h + 1) for h in range(4)]
    assert [level for level, _ in hits(rules, sweep, "lw-win-remote-admin-group-sweep")] == ["medium"]
    # one server's admins checked twice, local programs (net.exe, an agent) reading it on each host,
    # and a computer account
    quiet = ([admins_enumerated("fs01.corp.local", 1), admins_enumerated("fs01.corp.local", 2)]
             + [admins_enumerated(f"srv{h}.corp.local", 10 + h, caller="C:\\Windows\\System32\\net1.exe")
                for h in range(4)]
             + [admins_enumerated(f"srv{h}.corp.local", 20 + h, user="MGMT01$") for h in range(4)])
    assert hits(rules, quiet, "lw-win-remote-admin-group-sweep") == []
