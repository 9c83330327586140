"""The shipped rules on sudo to root by service accounts, setuid shells set through sudo, and kernel
fatal errors (issue 45): each fires on a real public line and stays quiet on its benign neighbours.

Where the lines come from:
- the www-data chmod line is the one issue 45 triaged (verdict benign before these rules);
- "wazuh-server … suid_find" is quoted as captured log evidence in a public SIEM lab write-up
  (Wazuh attack simulation, Attack #3), "Natan … /tmp/sys_check" in a public forensic write-up's
  auth.log output; "webserver … COMMAND=/bin/bash" in a public incident report's evidence block;
- the kernel lines: LogHub BGL_2k.log (logpai/loghub, the RAS KERNEL FATAL lines, labelled alerts
  there as KERNDTLB), LogHub Linux_2k.log (the machine-check start-up lines, benign), and the
  oops/BUG forms as the kernel prints them (docs.kernel.org admin-guide/bug-hunting).
"""

from __future__ import annotations

import pytest
from _rule_events import fired, parsed, syslog

ISSUE_45_LINE = ("Mar  3 10:17:44 web1 sudo: www-data : TTY=pts/0 ; PWD=/var/www ; USER=root ; "
                 "COMMAND=/bin/chmod u+s /bin/bash")
BGL_FATAL = ("KERNDTLB 1118536327 2005.06.11 R30-M0-N9-C:J16-U01 2005-06-11-17.32.07.581048 R30-M0-N9-C:J16-U01 "
             "RAS KERNEL FATAL data TLB error interrupt")


@pytest.mark.parametrize("line, expected", [
    (ISSUE_45_LINE, {"lw-sudo-service-account-root", "lw-sudo-setuid-shell"}),
    ("Jan 15 16:22:45 webserver sudo: www-data : TTY=unknown ; PWD=/var/www/html ; USER=root ; COMMAND=/bin/bash",
     {"lw-sudo-service-account-root"}),
    ("Mar  1 10:30:00 web-srv sudo: nginx : TTY=unknown ; PWD=/var/www/html ; USER=root ; "
     "COMMAND=/usr/bin/python3 -c import pty;pty.spawn('/bin/sh')", {"lw-sudo-service-account-root"}),
    ("Mar  1 10:31:00 web-srv sudo: postgres : TTY=unknown ; PWD=/var/lib/postgresql ; USER=root ; "
     "COMMAND=/usr/bin/vim /etc/hosts", {"lw-sudo-service-account-root"}),
    ("Mar  1 10:32:00 web-srv sudo: nobody : TTY=unknown ; PWD=/tmp ; USER=root ; COMMAND=/bin/chown root /tmp/x",
     {"lw-sudo-service-account-root"}),
])
def test_a_service_account_getting_a_root_shell_through_sudo_is_high(detector, line, expected):
    signals = detector.scan([syslog(line)])
    assert fired(signals) == expected
    assert {(s.level, s.category) for s in signals} == {("high", "privilege_escalation")}
    assert "T1548.003" in {t for s in signals for t in s.techniques}


@pytest.mark.parametrize("line", [
    "2026-07-15T14:07:43.805036+03:00 wazuh-server sudo:   ubuntu : PWD=/home/ubuntu ; USER=root ; "
    "COMMAND=/usr/bin/chmod u+s /tmp/absega_test/suid_find",
    "2026-06-07T23:00:19 Natan sudo: hp : TTY=pts/0 ; PWD=/home/hp ; USER=root ; COMMAND=/usr/bin/chmod u+s /tmp/sys_check",
    "Mar  3 10:20:00 web1 sudo:    alice : TTY=pts/0 ; PWD=/home/alice ; USER=root ; COMMAND=/bin/chmod 4755 /usr/bin/find",
])
def test_a_setuid_bit_on_a_shell_or_a_temporary_file_through_sudo_is_high(detector, line):
    signals = detector.scan(parsed([line], "syslog"))
    assert fired(signals) == {"lw-sudo-setuid-shell"}
    assert signals[0].level == "high" and "T1548.001" in signals[0].techniques


@pytest.mark.parametrize("line", [
    "Mar  3 10:17:44 web1 sudo:    alice : TTY=pts/0 ; PWD=/home/alice ; USER=root ; COMMAND=/bin/bash",
    "Mar  3 10:17:44 web1 sudo:    alice : TTY=pts/0 ; PWD=/home/alice ; USER=root ; COMMAND=/bin/chmod 755 /usr/local/bin/tool",
    "Mar  3 10:17:44 web1 sudo:    alice : TTY=pts/0 ; PWD=/home/alice ; USER=root ; COMMAND=/bin/chmod u+x /tmp/build.sh",
    "Mar  3 10:17:44 web1 sudo:   nagios : TTY=unknown ; PWD=/ ; USER=root ; "
    "COMMAND=/usr/lib/nagios/plugins/check_disk -w 10%",
    "Mar  3 10:17:44 web1 sudo: www-data : TTY=unknown ; PWD=/ ; USER=root ; COMMAND=/usr/bin/systemctl reload nginx",
    "Mar  3 10:17:44 web1 sudo: www-data : TTY=unknown ; PWD=/ ; USER=deploy ; COMMAND=/bin/bash",
    "Mar  3 10:17:44 web1 sudo: pam_unix(sudo:session): session opened for user root(uid=0) by www-data(uid=33)",
])
def test_ordinary_sudo_use_stays_quiet(detector, line):
    assert detector.scan([syslog(line)]) == []


@pytest.mark.parametrize("line, rule_id, level", [
    (BGL_FATAL, "lw-kernel-oops", "high"),
    ("Oct  3 12:01:02 db1 kernel: [ 1234.567890] BUG: unable to handle kernel NULL pointer dereference at "
     "0000000000000008", "lw-kernel-oops", "high"),
    ("Oct  3 12:01:02 db1 kernel: [ 1234.567891] BUG: kernel NULL pointer dereference, address: 0000000000000008",
     "lw-kernel-oops", "high"),
    ("Oct  3 12:01:02 db1 kernel: [ 1234.567892] Oops: 0002 [#1] SMP", "lw-kernel-oops", "high"),
    ("Oct  3 12:01:02 db1 kernel: [ 1234.567893] kernel BUG at mm/slub.c:3742!", "lw-kernel-oops", "high"),
    ("Oct  3 12:01:03 db1 kernel: [ 1240.1] mce: [Hardware Error]: Machine check events logged", "lw-machine-check",
     "medium"),
])
def test_kernel_fatal_errors_are_system_failures_not_attacks(detector, line, rule_id, level):
    events = parsed([line], "generic" if line is BGL_FATAL else "syslog", source="kern.log")
    [signal] = detector.scan(events)
    assert (signal.rule_id, signal.level, signal.category, signal.techniques) == (rule_id, level, "system_failure", [])


@pytest.mark.parametrize("line", [
    "Jul 27 14:41:58 combo kernel: Intel machine check architecture supported.",  # LogHub Linux_2k.log
    "Jul 27 14:41:58 combo kernel: Intel machine check reporting enabled on CPU#0.",  # LogHub Linux_2k.log
    "Oct  3 12:01:02 db1 kernel: [ 99.1] traps: chrome[4242] general protection fault ip:7f3a sp:7ffd error:0 in libc.so.6",
])
def test_kernel_start_up_and_user_process_faults_are_not_kernel_fatal(detector, line):
    assert not {"lw-kernel-oops", "lw-machine-check"} & fired(detector.scan([syslog(line, source="kern.log")]))
