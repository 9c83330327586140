"""logwarden's own Windows directory / server-application rules (app/detect/data/windows_directory.yml).

Each rule gets the attack as the event logs it and the routine administration that looks like it,
which must stay quiet. Events are built as the parsers build them: Security events through
tests/_rule_events.py's helpers, the other channels as evtx_dump writes them, parsed by the real
windows parser."""
from __future__ import annotations

import json
from datetime import timedelta

import pytest
from _rule_events import UTC0, by_rule, mssql_audit, security

from logwarden.app.detect import Detector
from logwarden.app.events import Event, LogLine
from logwarden.app.parse import parse_lines


def evtx(event_id: int, channel: str, provider: str, data: dict, line_no: int = 1,
         computer: str = "srv01.corp.local") -> Event:
    """One record as evtx_dump writes it (EventData as named fields or unnamed `Data`), parsed."""
    record = {"Event": {"System": {"Provider": {"#attributes": {"Name": provider}}, "EventID": event_id,
                                   "Channel": channel, "Computer": computer,
                                   "TimeCreated": {"#attributes": {"SystemTime": (UTC0 + timedelta(seconds=line_no)).isoformat()}}},
                        "EventData": data}}
    [event] = parse_lines([LogLine("export.json", 0, 0, line_no, json.dumps(record))], "windows")
    return event


def hits(rules, events: list[Event], rule_id: str) -> list[tuple[str, list[int]]]:
    return [(s.level, s.line_numbers) for s in by_rule(Detector(rules).scan(events), rule_id)]


# --- tool artefacts ----------------------------------------------------------------------------------


def service(name: str, image: str, kind: str = "kernel mode driver") -> Event:
    return evtx(7045, "System", "Service Control Manager",
                {"ServiceName": name, "ImagePath": image, "ServiceType": kind, "StartType": "auto start",
                 "AccountName": ""})


def test_mimikatz_artefacts_in_any_channel(rules):
    driver = evtx(13, "Microsoft-Windows-Sysmon/Operational", "Microsoft-Windows-Sysmon",
                  {"EventType": "SetValue", "Image": "C:\\Windows\\system32\\services.exe",
                   "TargetObject": "HKLM\\System\\CurrentControlSet\\Services\\mimidrv\\ImagePath",
                   "Details": "\\??\\C:\\Users\\eve\\mimidrv.sys"})
    printer = evtx(300, "Microsoft-Windows-PrintService/Operational", "Microsoft-Windows-PrintService",
                   {"PrinterCreated": {"Param1": "Kiwi Legit Printer"}}, line_no=2)
    assert hits(rules, [driver, printer], "lw-win-mimikatz-artefact") == [("high", [1, 2])]
    # an ordinary driver service and an ordinary printer
    quiet = [service("Npcap Packet Driver (NPCAP)", "\\SystemRoot\\system32\\DRIVERS\\npcap.sys"),
             evtx(300, "Microsoft-Windows-PrintService/Operational", "Microsoft-Windows-PrintService",
                  {"PrinterCreated": {"Param1": "HP LaserJet 4th floor"}}, line_no=2)]
    assert hits(rules, quiet, "lw-win-mimikatz-artefact") == []


def test_credential_dumping_tool_service(rules):
    assert hits(rules, [service("WCESERVICE", "C:\\Windows\\Temp\\wce.exe", "user mode service")],
                "lw-win-hacktool-service") == [("high", [1])]
    assert hits(rules, [service("mimikatz driver (mimidrv)", "C:\\tools\\mimidrv.sys")],
                "lw-win-hacktool-service") == [("high", [1])]
    quiet = [service("Npcap Packet Driver (NPCAP)", "\\SystemRoot\\system32\\DRIVERS\\npcap.sys"),
             service("Microsoft Office Click-to-Run Service",
                     '"C:\\Program Files\\Common Files\\Microsoft Shared\\ClickToRun\\OfficeClickToRun.exe" /service',
                     "user mode service")]
    assert hits(rules, quiet, "lw-win-hacktool-service") == []


def test_dns_server_plugin_dll(rules):
    loaded = evtx(770, "DNS Server", "Microsoft-Windows-DNS-Server-Service",
                  {"param1": "C:\\Windows\\Temp\\plugin.dll", "param2": "dc01.corp.local"})
    failed = evtx(150, "DNS Server", "Microsoft-Windows-DNS-Server-Service", {"param1": "\\\\10.0.0.5\\s\\x.dll"},
                  line_no=2)
    assert hits(rules, [loaded, failed], "lw-win-dns-server-plugin-dll") == [("high", [1, 2])]
    # the DNS server starting, and zone loading, are its everyday events
    routine = [evtx(2, "DNS Server", "Microsoft-Windows-DNS-Server-Service", {}),
               evtx(4, "DNS Server", "Microsoft-Windows-DNS-Server-Service", {}, line_no=2)]
    assert hits(rules, routine, "lw-win-dns-server-plugin-dll") == []


# --- Active Directory accounts ------------------------------------------------------------------------


def test_dsrm_password_set(rules):
    dsrm = security(4794, {"SubjectUserName": "admmig", "SubjectDomainName": "CORP", "Workstation": "DC01",
                           "Status": "0x0"})
    assert hits(rules, [dsrm], "lw-win-dsrm-password-set") == [("high", [1])]
    reset = security(4724, {"TargetUserName": "alice", "SubjectUserName": "helpdesk"})  # an ordinary reset
    assert hits(rules, [reset], "lw-win-dsrm-password-set") == []


def renamed(old: str, new: str) -> Event:
    return security(4781, {"OldTargetUserName": old, "NewTargetUserName": new, "TargetDomainName": "CORP",
                           "TargetSid": "S-1-5-21-1-2-3-1296", "SubjectUserName": "eve"})


def test_computer_account_renamed_without_dollar_is_samaccountname_spoofing(rules):
    assert hits(rules, [renamed("ws-88$", "dc01")], "lw-win-samaccountname-spoofing") == [("high", [1])]
    # a machine renamed by Windows keeps its $, a user rename has none, and renaming back is not the step
    routine = [renamed("ws-88$", "ws-89$"), renamed("jdoe", "john.doe"), renamed("dc01", "ws-88$")]
    assert hits(rules, routine, "lw-win-samaccountname-spoofing") == []


def user_created(name: str) -> Event:
    return security(4720, {"TargetUserName": name, "TargetDomainName": "CORP", "TargetSid": "S-1-5-21-1-2-3-1168",
                           "SubjectUserName": "lambda-user", "SamAccountName": name,
                           "UserAccountControl": "\r\n\t\t%%2080\r\n\t\t%%2082\r\n\t\t%%2084"})


def test_user_named_like_a_computer_is_a_hidden_account(rules):
    assert hits(rules, [user_created("FAKE-COMPUTER$")], "lw-win-hidden-account-created") == [("high", [1])]
    # a plain new user is lw-win-user-created's (medium), not this
    signals = Detector(rules).scan([user_created("jdoe")])
    assert by_rule(signals, "lw-win-hidden-account-created") == []
    assert [s.level for s in by_rule(signals, "lw-win-user-created")] == ["medium"]


def directory_write(attribute: str, value: str, object_dn: str = "CN=SRV7,CN=Computers,DC=corp,DC=local",
                    operation: str = "%%14674", line_no: int = 1) -> Event:
    return security(5136, {"SubjectUserName": "eve", "SubjectDomainName": "CORP", "DSName": "corp.local",
                           "DSType": "%%14676", "ObjectDN": object_dn, "ObjectClass": "computer",
                           "AttributeLDAPDisplayName": attribute, "AttributeSyntaxOID": "2.5.5.15",
                           "AttributeValue": value, "OperationType": operation}, line_no=line_no)


def test_resource_based_constrained_delegation_written(rules):
    rbcd = directory_write("msDS-AllowedToActOnBehalfOfOtherIdentity", "O:BAD:(A;;CCDCLCSWRPWPDTLOCRSDRCWDWO;;;S-1-5-21-1-2-3-1299)")
    assert hits(rules, [rbcd], "lw-win-rbcd-delegation-set") == [("high", [1])]
    # removing it (%%14675, value deleted) and writing an ordinary attribute are not this
    quiet = [directory_write("msDS-AllowedToActOnBehalfOfOtherIdentity", "O:BAD:", operation="%%14675"),
             directory_write("description", "file server, 3rd floor")]
    assert hits(rules, quiet, "lw-win-rbcd-delegation-set") == []


def account_changed(event_id: int, delegate_to: str, line_no: int = 1) -> Event:
    return security(event_id, {"TargetUserName": "WEB01$", "TargetDomainName": "CORP", "SubjectUserName": "eve",
                               "SamAccountName": "-", "AllowedToDelegateTo": delegate_to, "UserAccountControl": "-",
                               "ServicePrincipalNames": "-"}, line_no=line_no)


def test_constrained_delegation_targets_set(rules):
    attribute = directory_write("msDS-AllowedToDelegateTo", "cifs/dc01.corp.local")
    column = account_changed(4742, "\r\n\t\tcifs/DC01\r\n\t\tcifs/dc01.corp.local", line_no=2)
    assert [level for level, _ in hits(rules, [attribute, column], "lw-win-constrained-delegation-set")] == ["high", "high"]
    # a 4742 that changed something else shows "-" in the column
    quiet = [account_changed(4742, "-"), account_changed(4738, ""), directory_write("dNSHostName", "web01.corp.local")]
    assert hits(rules, quiet, "lw-win-constrained-delegation-set") == []


# --- SAM enumeration ----------------------------------------------------------------------------------


def sam_open(object_type: str, object_name: str, access: str, subject: str = "eve", line_no: int = 1) -> Event:
    return security(4661, {"SubjectUserName": subject, "SubjectDomainName": "CORP", "ObjectServer": "Security Account Manager",
                           "ObjectType": object_type, "ObjectName": object_name, "AccessList": access,
                           "AccessMask": "0x20094", "ProcessName": "C:\\Windows\\System32\\lsass.exe"}, line_no=line_no)


def test_password_policy_read_through_sam(rules):
    read = sam_open("SAM_DOMAIN", "DC=corp,DC=local", "%%1537\r\n\t\t\t\t%%5392\r\n\t\t\t\t%%5394\r\n")
    assert hits(rules, [read], "lw-win-sam-password-policy-read") == [("medium", [1])]
    # the domain controller's own account reading it, and a domain opened without that right
    quiet = [sam_open("SAM_DOMAIN", "DC=corp,DC=local", "%%5392", subject="DC01$"),
             sam_open("SAM_DOMAIN", "DC=corp,DC=local", "%%5393\r\n\t\t\t\t%%5394\r\n", line_no=2)]
    assert hits(rules, quiet, "lw-win-sam-password-policy-read") == []


def test_privileged_group_lookup_through_sam(rules):
    admins = sam_open("SAM_GROUP", "S-1-5-21-1-2-3-512", "%%5424")
    builtin = sam_open("SAM_ALIAS", "S-1-5-32-544", "%%5424", line_no=2)
    assert hits(rules, [admins, builtin], "lw-win-sam-privileged-lookup") == [("medium", [1, 2])]
    # an ordinary group or user (RID 1512 ends in 512 but is not Domain Admins), or a computer account asking
    quiet = [sam_open("SAM_GROUP", "S-1-5-21-1-2-3-1512", "%%5424"),
             sam_open("SAM_USER", "S-1-5-21-1-2-3-1104", "%%5424", line_no=2),
             sam_open("SAM_GROUP", "S-1-5-21-1-2-3-512", "%%5424", subject="DC01$", line_no=3)]
    assert hits(rules, quiet, "lw-win-sam-privileged-lookup") == []


# --- print spooler ------------------------------------------------------------------------------------


def spoolss(mask: str, line_no: int = 1) -> Event:
    return security(5145, {"SubjectUserName": "eve", "SubjectDomainName": "CORP", "ObjectType": "File",
                           "IpAddress": "10.23.123.11", "IpPort": "47156", "ShareName": "\\\\*\\IPC$",
                           "ShareLocalPath": "", "RelativeTargetName": "spoolss", "AccessMask": mask,
                           "AccessList": "%%4416\r\n\t\t\t\t%%4417\r\n\t\t\t\t", "AccessReason": "-"}, line_no=line_no)


def test_spoolss_pipe_opened_with_minimal_rights(rules):
    assert hits(rules, [spoolss("0x3")], "lw-win-spoolss-pipe-minimal-access") == [("high", [1])]
    # Windows' own print client asks for generic read/write
    assert hits(rules, [spoolss("0x12019f")], "lw-win-spoolss-pipe-minimal-access") == []


# --- SQL Server and Exchange --------------------------------------------------------------------------


def sql_config(option: str, old: str, new: str) -> Event:
    return evtx(15457, "Application", "MSSQL$RADAR", {"Data": {"#text": [option, old, new]}, "Binary": "613C"},
                computer="mssql01.corp.local")


def test_sql_server_code_execution_option_switched_on(rules):
    for option in ("xp_cmdshell", "clr enabled", "Ole Automation Procedures"):
        assert hits(rules, [sql_config(option, "0", "1")], "lw-win-mssql-code-execution-enabled") == [("high", [1])]
    # switching it off again, and tuning an ordinary option
    quiet = [sql_config("xp_cmdshell", "1", "0"), sql_config("max server memory (MB)", "0", "1")]
    assert hits(rules, quiet, "lw-win-mssql-code-execution-enabled") == []


def test_sql_server_audit_stopped_or_dropped(rules):
    stopped = mssql_audit(1, "AL  ", "ALTER SERVER AUDIT [srv-audit]\nWITH (STATE = OFF)", "true")
    dropped = mssql_audit(2, "DR  ", "DROP SERVER AUDIT SPECIFICATION [srv-spec]", "true")
    assert hits(rules, [stopped, dropped], "lw-win-mssql-server-audit-tampering") == [("high", [1, 2])]
    # turning the audit on, and a logon, are routine
    quiet = [mssql_audit(1, "AL  ", "ALTER SERVER AUDIT [srv-audit]\nWITH (STATE = ON)", "true"),
             mssql_audit(2, "LGIS", "-- network protocol: TCP/IP", "true")]
    assert hits(rules, quiet, "lw-win-mssql-server-audit-tampering") == []


def exchange_cmdlet(event_id: int, cmdlet: str, parameters: str) -> Event:
    return evtx(event_id, "MSExchange Management", "MSExchange CmdletLogs",
                {"Data": {"#text": [cmdlet, parameters, "corp.local/Users/admin", "S-1-5-21-1-2-3-500"]}},
                computer="exch01.corp.local")


def test_exchange_transport_agent_installed(rules):
    install = exchange_cmdlet(1, "Install-TransportAgent", '-Name "Filter" -AssemblyPath "C:\\x\\agent.dll"')
    assert hits(rules, [install], "lw-win-exchange-transport-agent") == [("high", [1])]
    routine = [exchange_cmdlet(1, "Get-TransportAgent", ""), exchange_cmdlet(1, "Set-Mailbox", '-Identity "bob"')]
    assert hits(rules, routine, "lw-win-exchange-transport-agent") == []


# --- Sysmon for Linux ---------------------------------------------------------------------------------


def linux_connection(image: str, destination: str) -> Event:
    return evtx(3, "Linux-Sysmon/Operational", "Linux-Sysmon",
                {"Image": image, "User": "tomcat", "Protocol": "tcp", "Initiated": "true", "SourceIp": "192.168.2.5",
                 "SourcePort": "39634", "DestinationIp": destination, "DestinationPort": "443"}, computer="web01")


@pytest.mark.parametrize("image", ["bash", "/bin/bash", "/usr/bin/dash"])
def test_shell_with_a_socket_is_a_reverse_shell(rules, image):
    assert hits(rules, [linux_connection(image, "203.0.113.9")], "lw-lnx-shell-network-connection") == [("high", [1])]


def test_shell_loopback_and_other_programs_are_quiet(rules):
    quiet = [linux_connection("/bin/bash", "127.0.0.1"), linux_connection("/bin/bash", "0:0:0:0:0:0:0:0"),
             linux_connection("/usr/bin/curl", "203.0.113.9"), linux_connection("/usr/sbin/bashful", "203.0.113.9")]
    assert hits(rules, quiet, "lw-lnx-shell-network-connection") == []


# --- Kerberos, rights, audit policy -------------------------------------------------------------------


def tgt(pre_auth: str, encryption: str, status: str = "0x0") -> Event:
    return security(4768, {"TargetUserName": "svc-legacy", "TargetSid": "S-1-5-21-1-2-3-1620", "ServiceName": "krbtgt",
                           "TicketOptions": "0x40800010", "Status": status, "TicketEncryptionType": encryption,
                           "PreAuthType": pre_auth, "IpAddress": "::ffff:10.23.23.9", "IpPort": "51335"})


def test_tgt_without_preauthentication_is_asrep_roasting(rules):
    assert hits(rules, [tgt("0", "0x17")], "lw-win-asrep-roasting") == [("high", [1])]
    # an ordinary pre-authenticated AES logon, and a refused request for a pre-auth account
    quiet = [tgt("2", "0x12"), tgt("15", "0x12"), tgt("0", "0xffffffff", status="0x19")]
    assert hits(rules, quiet, "lw-win-asrep-roasting") == []


def right_assigned(privilege: str, subject: str = "admmig") -> Event:
    return security(4704, {"SubjectUserName": subject, "SubjectDomainName": "CORP", "TargetSid": "S-1-5-21-1-2-3-1158",
                           "PrivilegeList": privilege})


def test_sensitive_user_right_assigned(rules):
    assert hits(rules, [right_assigned("SeDebugPrivilege")], "lw-win-sensitive-privilege-assigned") == [("high", [1])]
    # an everyday right, and group policy (the computer account) applying a sensitive one
    quiet = [right_assigned("SeChangeNotifyPrivilege"), right_assigned("SeBackupPrivilege", subject="DC01$")]
    assert hits(rules, quiet, "lw-win-sensitive-privilege-assigned") == []


def audit_change(changes: str, subject: str = "admmig") -> Event:
    return security(4719, {"SubjectUserName": subject, "SubjectDomainName": "CORP", "CategoryId": "%%8272",
                           "SubcategoryId": "%%12288", "SubcategoryGuid": "0CCE9210-69AE-11D9-BED3-505054503030",
                           "AuditPolicyChanges": changes})


def test_audit_policy_removed(rules):
    assert hits(rules, [audit_change("%%8448, %%8450")], "lw-win-audit-policy-removed") == [("medium", [1])]
    # auditing added (%%8449 success added, %%8451 failure added), and group policy applying a removal
    quiet = [audit_change("%%8449, %%8451"), audit_change("%%8448", subject="WS01$")]
    assert hits(rules, quiet, "lw-win-audit-policy-removed") == []


def test_special_group_logon(rules):
    special = security(4964, {"SubjectUserName": "DC01$", "TargetUserName": "breakglass", "TargetDomainName": "CORP",
                              "TargetLogonId": "0x80e3882", "SidList": "\r\n\t\t%{S-1-5-21-1-2-3-1613}"})
    assert hits(rules, [special], "lw-win-special-group-logon") == [("medium", [1])]
    logon = security(4624, {"TargetUserName": "breakglass", "LogonType": "3", "IpAddress": "10.0.0.7"})
    assert hits(rules, [logon], "lw-win-special-group-logon") == []


# --- directory-wide changes ---------------------------------------------------------------------------


def spns_changed(spns: str) -> Event:
    return security(4742, {"TargetUserName": "JUMP01$", "TargetDomainName": "CORP", "SubjectUserName": "eve",
                           "AllowedToDelegateTo": "-", "UserAccountControl": "-", "ServicePrincipalNames": spns})


def object_created(object_dn: str, object_class: str) -> Event:
    return security(5137, {"SubjectUserName": "eve", "DSName": "corp.local", "DSType": "%%14676",
                           "ObjectDN": object_dn, "ObjectClass": object_class})


def test_computer_registered_as_a_domain_controller(rules):
    drs = spns_changed("\r\n\t\tHOST/jump01.corp.local\r\n\t\tE3514235-4B06-11D1-AB04-00C04FC2DCD2/097b2e16-f2c3/corp.local")
    server = object_created("CN=JUMP01,CN=Servers,CN=HQ,CN=Sites,CN=Configuration,DC=corp,DC=local", "server")
    assert [level for level, _ in hits(rules, [drs, server], "lw-win-rogue-dc-registration")] == ["high", "high"]
    # ordinary SPNs (a web service), and an ordinary object created in an OU
    quiet = [spns_changed("\r\n\t\tHOST/web01.corp.local\r\n\t\tHTTP/web01.corp.local"),
             object_created("CN=bob,OU=Sales,DC=corp,DC=local", "user")]
    assert hits(rules, quiet, "lw-win-rogue-dc-registration") == []


def test_domain_trust_created(rules):
    trust = security(4706, {"DomainName": "partner.example", "DomainSid": "S-1-5-21-9-9-9", "SubjectUserName": "Administrator",
                            "TdoType": 2, "TdoDirection": 3, "TdoAttributes": 8, "SidFilteringEnabled": "%%1796"})
    assert hits(rules, [trust], "lw-win-domain-trust-created") == [("high", [1])]
    # a trust's information being read or its account logging on is not a new trust
    quiet = [security(4624, {"TargetUserName": "PARTNER$", "LogonType": "3", "IpAddress": "10.0.0.9"})]
    assert hits(rules, quiet, "lw-win-domain-trust-created") == []


DOMAIN_SD = ("O:BAG:BAD:AI(OA;;CR;1131f6aa-9c07-11d1-f79f-00c04fc2dcd2;;ED)"
             "(OA;;CR;1131f6ad-9c07-11d1-f79f-00c04fc2dcd2;;BA)(OA;;CR;89e95b76-444d-4c62-991a-0facbeda640c;;DD)"
             "(OA;;CR;1131f6aa-9c07-11d1-f79f-00c04fc2dcd2;;S-1-5-21-1-2-3-498)(A;;RPLCLORC;;;AU)")


def test_replication_rights_granted_on_the_domain(rules):
    backdoor = directory_write("nTSecurityDescriptor",
                               DOMAIN_SD + "(OA;;CR;1131f6ad-9c07-11d1-f79f-00c04fc2dcd2;;S-1-5-21-1-2-3-1242)",
                               object_dn="DC=corp,DC=local")
    assert hits(rules, [backdoor], "lw-win-dcsync-rights-granted") == [("high", [1])]
    # the domain's default ACL rewritten (e.g. another ACE edited), and an OU whose inherited ACEs include the rights
    quiet = [directory_write("nTSecurityDescriptor", DOMAIN_SD, object_dn="DC=corp,DC=local"),
             directory_write("nTSecurityDescriptor",
                             "O:DAG:DAD:AI(OA;CIID;CR;1131f6aa-9c07-11d1-f79f-00c04fc2dcd2;;S-1-5-21-1-2-3-1242)",
                             object_dn="OU=Servers,DC=corp,DC=local", line_no=2)]
    assert hits(rules, quiet, "lw-win-dcsync-rights-granted") == []


def test_sql_server_sysadmin_granted_or_sa_enabled(rules):
    granted = mssql_audit(1, "APRL", "ALTER SERVER ROLE [sysadmin] ADD MEMBER [CORP\\eve]", "true")
    legacy = mssql_audit(2, "APRL", "EXEC sp_addsrvrolemember 'CORP\\eve', 'sysadmin'", "true")
    sa = mssql_audit(3, "LGEA", "ALTER LOGIN [sa] ENABLE", "true")
    assert hits(rules, [granted, legacy, sa], "lw-win-mssql-sysadmin-granted") == [("high", [1, 2, 3])]
    # a lesser role, and another login being enabled
    quiet = [mssql_audit(1, "APRL", "ALTER SERVER ROLE [dbcreator] ADD MEMBER [CORP\\eve]", "true"),
             mssql_audit(2, "LGEA", "ALTER LOGIN [app_reader] ENABLE", "true")]
    assert hits(rules, quiet, "lw-win-mssql-sysadmin-granted") == []


def test_adfs_dkm_master_key_read_by_a_user_not_by_the_service_account(rules):
    def read(user: str, properties: str, line_no: int = 1):
        return security(4662, {"SubjectUserName": user, "SubjectDomainName": "CORP", "AccessMask": "0x10",
                               "ObjectServer": "DS", "ObjectType": "%{5cb41ed0-0e4c-11d0-a286-00aa003049e2}",
                               "ObjectName": "%{9736f74f-fd37-4b02-80e8-8120a72ad6c2}",
                               "Properties": f"%%7684 \t\t{{77b5b886-944a-11d1-aebd-0000f80367c1}} \t\t\t{properties} "
                                             "\t{5cb41ed0-0e4c-11d0-a286-00aa003049e2}"}, line_no=line_no)
    thumbnail = "{8d3bca50-1d7e-11d0-a081-00aa006c33ed}"
    assert hits(rules, [read("mallory", thumbnail)], "lw-win-adfs-dkm-key-read") == [("high", [1])]
    # the AD FS service's gMSA reading the key, and a user reading another attribute of a contact
    quiet = [read("gmsa-adfs$", thumbnail), read("mallory", "{bf967a0e-0de6-11d0-a285-00aa003049e2}", line_no=2)]
    assert hits(rules, quiet, "lw-win-adfs-dkm-key-read") == []
