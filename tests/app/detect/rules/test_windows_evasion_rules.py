"""logwarden's own Windows defense-evasion / credential-access / PowerShell-discovery rules
(app/detect/data/windows_evasion.yml).

Each rule gets the attack as the event logs it and the routine administration that looks like it,
which must stay quiet. Events are built as evtx_dump writes them (EventData as named fields or as an
unnamed `Data` list, as the classic PowerShell and ESENT logs do) and parsed by the real windows
parser."""
from __future__ import annotations

from test_windows_directory_rules import evtx, hits

from logwarden.app.events import Event


def sec(event_id: int, data: dict, line_no: int = 1) -> Event:
    subject = {"SubjectUserSid": "S-1-5-21-1-2-3-1108", "SubjectUserName": "pkiadm", "SubjectDomainName": "CORP",
               "SubjectLogonId": "0x91861a6"}
    return evtx(event_id, "Security", "Microsoft-Windows-Security-Auditing", {**data, **subject}, line_no)


def classic(event_id: int, first: list[str], host_app: str, command_line: str = "", line_no: int = 1,
            script_name: str = "") -> Event:
    """A classic "Windows PowerShell" log record (400/600/800): unnamed Data, HostApplication inside."""
    detail = ("\tDetailSequence=1\r\n\tDetailTotal=1\r\n\r\n\tSequenceNumber=15\r\n\r\n\tUserId=CORP\\eve\r\n"
              f"\tHostName=ConsoleHost\r\n\tHostVersion=5.1.19041.906\r\n\tHostApplication={host_app}\r\n"
              f"\tEngineVersion=5.1.19041.906\r\n\tPipelineId=7\r\n\tScriptName={script_name}\r\n\tCommandLine={command_line}")
    return evtx({"#attributes": {"Qualifiers": 0}, "#text": event_id}, "Windows PowerShell", "PowerShell",
                {"Data": {"#text": [*first, detail]}, "Binary": None}, line_no, computer="ws01.corp.local")


def script_block(text: str, line_no: int = 1) -> Event:
    return evtx(4104, "Microsoft-Windows-PowerShell/Operational", "Microsoft-Windows-PowerShell",
                {"MessageNumber": 1, "MessageTotal": 1, "ScriptBlockText": text,
                 "ScriptBlockId": "3a0c2649-0e3c-4282-8200-8037e1b4ccbe", "Path": ""}, line_no,
                computer="ws01.corp.local")


CONSOLE = "C:\\Windows\\System32\\WindowsPowerShell\\v1.0\\powershell.exe"


# --- defense evasion -----------------------------------------------------------------------------


def filter_manager(event_id: int, device: str) -> Event:
    return evtx(event_id, "System", "Microsoft-Windows-FilterManager",
                {"FinalStatus": "0x0", "DeviceVersionMajor": 0, "DeviceVersionMinor": 0,
                 "DeviceNameLength": len(device), "DeviceName": device, "DeviceTime": "2024-01-20T18:59:19.000000Z"})


def test_sysmon_driver_unloaded(rules):
    assert hits(rules, [filter_manager(1, "SysmonDrv")], "lw-win-sysmon-driver-unloaded") == [("medium", [1])]
    # another minifilter unloading, and Sysmon's driver loading (event 6), are routine
    quiet = [filter_manager(1, "wcifs"), filter_manager(6, "SysmonDrv")]
    assert hits(rules, quiet, "lw-win-sysmon-driver-unloaded") == []


OCSP_SD = ("\nAllow(0x00000101)\tBUILTIN\\Administrators\n\tOCSP Administrator\n\tRead\n"
           "Allow(0x00000101)\tCORP\\Some_Group\n\tOCSP Administrator\n\tRead\n"
           "Allow(0x00000300)\tIIS APPPOOL\\OCSPISAPIAppPool\n\tRead\n\tOCSP Requestor\n")


def test_ocsp_security_settings_changed(rules):
    assert hits(rules, [sec(5124, {"NewSecuritySettings": OCSP_SD})], "lw-win-ocsp-security-changed") == [("medium", [1])]
    # responder property tuning and the responder service starting are not its security settings
    quiet = [sec(5123, {"PropertyName": "NumOfThreads", "NewValue": "60"}), evtx(5120, "Security",
             "Microsoft-Windows-Security-Auditing", None, line_no=2)]
    assert hits(rules, quiet, "lw-win-ocsp-security-changed") == []


def test_pki_audit_filter_changed(rules):
    attack = [sec(5123, {"PropertyName": "AuditFilter", "NewValue": "0"}), sec(4885, {"AuditFilter": "0"}, line_no=2)]
    assert hits(rules, attack, "lw-win-pki-audit-filter-changed") == [("medium", [1, 2])]
    quiet = [sec(5123, {"PropertyName": "MaxNumOfCacheEntries", "NewValue": "5000"}),
             sec(4876, {"BackupType": "1"}, line_no=2)]
    assert hits(rules, quiet, "lw-win-pki-audit-filter-changed") == []


def dns_setting(setting: str, value: str) -> Event:
    return evtx(541, "Microsoft-Windows-DNSServer/Audit", "Microsoft-Windows-DNSServer",
                {"Setting": setting, "Scope": ".", "NewValue": value}, computer="dc01.corp.local")


def test_dns_server_logging_changed(rules):
    assert hits(rules, [dns_setting("UseSystemEventLog", "0")], "lw-win-dns-server-logging-changed") == [("medium", [1])]
    # forwarders and recursion are everyday DNS administration
    quiet = [dns_setting("Forwarders", "10.0.0.53"), dns_setting("NoRecursion", "1")]
    assert hits(rules, quiet, "lw-win-dns-server-logging-changed") == []


def share_changed(new_sd: str) -> Event:
    return sec(5143, {"ObjectType": "Directory", "ShareName": "\\\\*\\data$", "ShareLocalPath": "C:\\shares\\data$",
                      "OldRemark": "N/A", "NewRemark": "N/A", "OldMaxUsers": "0xffffffff",
                      "NewMaxUsers": "0xffffffff", "OldShareFlags": "0x0", "NewShareFlags": "0x0",
                      "OldSD": "O:BAG:DUD:(A;;0x1200a9;;;WD)", "NewSD": new_sd})


def test_share_opened_to_everyone_with_write(rules):
    attack = share_changed("O:BAG:DUD:(A;;FA;;;S-1-5-21-1-2-3-1107)(A;;0x1301bf;;;WD)")
    assert hits(rules, [attack], "lw-win-share-everyone-write") == [("medium", [1])]
    # Everyone read-only, and full control for a named group, are ordinary share ACLs
    quiet = [share_changed("O:BAG:DUD:(A;;0x1200a9;;;WD)"),
             share_changed("O:BAG:DUD:(A;;FA;;;S-1-5-21-1-2-3-1107)(A;;0x1200a9;;;WD)")]
    assert hits(rules, quiet, "lw-win-share-everyone-write") == []


# --- PowerShell ------------------------------------------------------------------------------------


def test_pipeshell(rules):
    call = script_block("Invoke-PipeShell -mode client -server localhost -aeskey aaaabbbbccccdddd -pipe svc_pipe -i")
    pipeline = classic(800, ["\t\tTry {$PipeObject = New-Object System.IO.Pipes.NamedPipeServerStream($Pipe)}\r\n"],
                       CONSOLE, line_no=2, script_name="C:\\Users\\eve\\Downloads\\Invoke-PipeShell.ps1")
    assert hits(rules, [call, pipeline], "lw-win-pipeshell") == [("high", [1, 2])]
    # a script using named pipes for its own IPC is not the tool
    quiet = [script_block("$p = New-Object System.IO.Pipes.NamedPipeClientStream('.', 'app_ipc')"),
             classic(800, ["Get-Service"], CONSOLE, "Get-Service", line_no=2)]
    assert hits(rules, quiet, "lw-win-pipeshell") == []


CME = ("powershell.exe -exec bypass -noni -nop -w 1 -C & ( $PshOMe[4]+$PshoME[30]+'X')(( (91 , 78,101 ,116 ,46, "
       "83,101) | % {([int]$_ -as [char])}) -join '')")


def test_classic_obfuscated_iex(rules):
    events = [classic(600, ["Registry", "Started"], CME), classic(400, ["Available", "None"], CME, line_no=2)]
    assert hits(rules, events, "lw-win-powershell-classic-obfuscated-iex") == [("high", [1, 2])]
    # a plain console, and a script that only reads $PSHome, stay quiet
    quiet = [classic(600, ["Registry", "Started"], CONSOLE),
             classic(800, ["Join-Path $PSHome 'Modules'"], CONSOLE, "Join-Path $PSHome 'Modules'", line_no=2)]
    assert hits(rules, quiet, "lw-win-powershell-classic-obfuscated-iex") == []


def test_classic_kerberos_ticket_request(rules):
    req = "New-Object System.IdentityModel.Tokens.KerberosRequestorSecurityToken -ArgumentList $SPNName"
    assert hits(rules, [classic(800, [req], CONSOLE, req)],
                "lw-win-powershell-classic-kerberos-ticket-request") == [("high", [1])]
    quiet = [classic(800, ["Add-Type -AssemblyName System.IdentityModel"], CONSOLE,
                     "Add-Type -AssemblyName System.IdentityModel")]
    assert hits(rules, quiet, "lw-win-powershell-classic-kerberos-ticket-request") == []


def test_privileged_group_enumeration(rules):
    cmd_ad = "Get-ADGroupMember -Identity 'Domain Admins'"
    cmd_local = "Get-LocalGroupMember -Name Administrators"
    attack = [script_block(cmd_ad), classic(800, [cmd_local], CONSOLE, cmd_local, line_no=2)]
    assert hits(rules, attack, "lw-win-powershell-privileged-group-enum") == [("medium", [1, 2])]
    # membership of an ordinary group, and an admin listing processes, are not this
    quiet = [script_block("Get-ADGroupMember -Identity 'Marketing'"),
             classic(800, ["Get-LocalGroupMember -Name 'Remote Desktop Users'"], CONSOLE,
                     "Get-LocalGroupMember -Name 'Remote Desktop Users'", line_no=2),
             script_block("Get-Process | Where-Object { $_.Name -eq 'Administrators' }", line_no=3)]
    assert hits(rules, quiet, "lw-win-powershell-privileged-group-enum") == []


# --- credential access -----------------------------------------------------------------------------


def esent(event_id: int, data: list[str], line_no: int = 1) -> Event:
    return evtx({"#attributes": {"Qualifiers": 0}, "#text": event_id}, "Application", "ESENT",
                {"Data": {"#text": data}, "Binary": None}, line_no, computer="dc01.corp.local")


def test_ntds_dit_copy_created(rules):
    timing = "[1] 0.000, [2] 0.000, [3] 0.031."
    attack = [esent(325, ["NTDS", "7148", "", "2", "c:\\temp\\ifm\\Active Directory\\ntds.dit", "0", timing]),
              esent(327, ["NTDS", "7148", "", "1", "C:\\$SNAP_202406051936_VOLUMEC$\\Windows\\NTDS\\ntds.dit", "0",
                          timing, "0 0"], line_no=2)]
    assert hits(rules, attack, "lw-win-ntds-dit-copy-created") == [("high", [1, 2])]
    # the DC's own database attached at boot, a VSS backup's location note, another ESE database
    quiet = [esent(326, ["lsass", "548", "", "1", "C:\\Windows\\NTDS\\ntds.dit", "0", timing]),
             esent(216, ["lsass", "548", "", "C:\\Windows\\NTDS\\ntds.dit",
                         "\\\\?\\GLOBALROOT\\Device\\HarddiskVolumeShadowCopy5\\Windows\\NTDS\\ntds.dit"], line_no=2),
             esent(325, ["svchost", "1320", "SRUJet: ", "2", "C:\\Windows\\system32\\SRU\\SRUDB.dat", "0", timing],
                   line_no=3)]
    assert hits(rules, quiet, "lw-win-ntds-dit-copy-created") == []


def sysmon_file(image: str, target: str) -> Event:
    return evtx(11, "Microsoft-Windows-Sysmon/Operational", "Microsoft-Windows-Sysmon",
                {"RuleName": "-", "UtcTime": "2024-06-04 09:30:48.170", "ProcessId": 19108, "Image": image,
                 "TargetFilename": target, "CreationUtcTime": "2024-01-21 10:20:36.244"}, computer="exch01.corp.local")


AGENTS = "E:\\Exchange\\TransportRoles\\Shared\\agents.config"


def test_exchange_agents_config_written_by_other_process(rules):
    attack = sysmon_file("C:\\Program Files (x86)\\Notepad++\\notepad++.exe", AGENTS)
    assert hits(rules, [attack], "lw-win-exchange-agents-config-write") == [("medium", [1])]
    # Exchange setup writing it, and the editor touching another config file, are routine
    quiet = [sysmon_file("E:\\Exchange\\Bin\\ExSetup.exe", AGENTS),
             sysmon_file("C:\\Program Files (x86)\\Notepad++\\notepad++.exe",
                         "E:\\Exchange\\TransportRoles\\Shared\\fetemplates.config")]
    assert hits(rules, quiet, "lw-win-exchange-agents-config-write") == []


def proc(image: str, command_line: str, line_no: int = 1) -> Event:
    return sec(4688, {"NewProcessId": "0xc70", "NewProcessName": image, "TokenElevationType": "%%1937",
                      "ProcessId": "0x14c4", "CommandLine": command_line, "TargetUserSid": "S-1-0-0",
                      "ParentProcessName": "C:\\Windows\\System32\\cmd.exe", "MandatoryLabel": "S-1-16-12288"}, line_no)


def test_mssql_single_user_mode(rules):
    attack = [proc("C:\\Windows\\System32\\net.exe", '"C:\\Windows\\system32\\net.exe" start MSSQL$SALES /m'),
              proc("C:\\Windows\\System32\\net1.exe", "C:\\Windows\\system32\\net1 start MSSQL$SALES /m", line_no=2)]
    assert hits(rules, attack, "lw-win-mssql-single-user-mode") == [("medium", [1, 2])]
    # an ordinary service start, and the service manager starting the engine normally
    quiet = [proc("C:\\Windows\\System32\\net.exe", "net start MSSQL$SALES"),
             proc("C:\\Program Files\\Microsoft SQL Server\\MSSQL15.SALES\\MSSQL\\Binn\\sqlservr.exe",
                  '"C:\\Program Files\\Microsoft SQL Server\\MSSQL15.SALES\\MSSQL\\Binn\\sqlservr.exe" -sSALES',
                  line_no=2)]
    assert hits(rules, quiet, "lw-win-mssql-single-user-mode") == []


def test_credential_manager_backup(rules):
    backup = sec(5376, {"BackupFileName": "C:\\Windows\\TEMP\\CRD46C3.tmp",
                        "ProcessCreationTime": "2024-09-24T19:57:27.170660Z", "ClientProcessId": 5400})
    assert hits(rules, [backup], "lw-win-credential-manager-backup") == [("medium", [1])]
    # reading credentials (5379) happens at every logon and Outlook start
    read = sec(5379, {"TargetName": "MicrosoftOffice16_Data:SSPI:*", "Type": 0, "CountOfCredentialsReturned": 0,
                      "ReadOperation": "%%8100", "ReturnCode": 3221226021, "ClientProcessId": 1312})
    assert hits(rules, [read], "lw-win-credential-manager-backup") == []
