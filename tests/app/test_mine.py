"""Template mining and windowing on real-format sshd lines (the digest: test_digest.py)."""

from datetime import datetime, timedelta

import pytest

from logwarden.app.events import Event
from logwarden.app.mine import CombinedMasking, SourceMiner, windows

T0 = datetime(2026, 3, 1, 10, 0, 0)


def sshd(i: int, message: str, seconds: int | None = None) -> Event:
    ts = T0 + timedelta(seconds=i if seconds is None else seconds)
    raw = f"{ts:%b %d %H:%M:%S} web01 sshd[{1000 + i}]: {message}"
    return Event(source="auth.log", line_no=i + 1, offset=i * 80, raw=raw, format="syslog", ts=ts,
                 host="web01", program="sshd", message=message,
                 fields={"src_ip": message.split(" from ")[-1].split()[0]} if " from " in message else {})


def test_masking_names_ips_numbers_users_paths():
    masked = CombinedMasking().mask("Failed password for invalid user admin from 203.0.113.7 port 52211 ssh2 "
                                    "file /etc/passwd uid=0x1f", "<", ">")
    assert masked == ("Failed password for invalid user <USER> from <IP> port <NUM> ssh2 file <PATH> uid=<HEX>")


@pytest.mark.parametrize("text, masked", [
    ("session opened for user root(uid=0) by (uid=0)", "session opened for user <USER>(uid=<NUM>) by (uid=<NUM>)"),
    ("user user bob port 22 user", "user <USER> <USER> port <NUM> user"),
    ("New session 1234 of user root.", "New session <NUM> of user <USER>"),
    # digits: a number below hash length, a hash at 32; Arabic-Indic digits are numbers too; "22." ends a sentence
    ("id 12345678901234567890123456789012 pid 0042 -5 +7 1.5 ١٢٣ 22.", "id <HASH> pid <NUM> <NUM> <NUM> <NUM> <NUM> <NUM>."),
    ("user=alice USER=root user", "user=<USER> USER=<USER> user"),
    ("Received disconnect from 10.0.8.15 port 48530:11: disconnected by user",
     "Received disconnect from <IP> port <NUM>:<NUM>: disconnected by user"),
])
def test_masking_the_same_text_twice_gives_the_same_template(text, masked):
    masking = CombinedMasking()
    assert masking.mask(text, "<", ">") == masked
    assert masking.mask(text, "<", ">") == masked  # from the token cache


def test_failed_password_and_disconnect_stay_apart():
    miner = SourceMiner()
    a = miner.add("sshd: Failed password for root from 203.0.113.7 port 5000 ssh2")
    b = miner.add("sshd: Failed password for admin from 198.51.100.2 port 6000 ssh2")
    c = miner.add("sshd: Disconnected from authenticating user root 203.0.113.7 port 5000 [preauth]")
    assert a == b
    assert c != a


def test_miner_state_round_trip_keeps_clusters():
    miner = SourceMiner()
    first = miner.add("sshd: Accepted publickey for deploy from 10.0.0.5 port 4000 ssh2")
    restored = SourceMiner(miner.state())
    assert restored.add("sshd: Accepted publickey for alice from 10.0.0.9 port 4100 ssh2") == first
    assert restored.cluster_count == 1


def test_windows_cut_on_gap_and_size():
    events = [sshd(i, f"Failed password for root from 203.0.113.7 port {5000 + i} ssh2") for i in range(10)]
    events += [sshd(10 + i, "Accepted publickey for deploy from 10.0.0.5 port 4000 ssh2", seconds=4000 + i)
               for i in range(5)]
    cut = list(windows(events, SourceMiner(), source="auth.log", inode=1, fmt="syslog", max_lines=4, max_gap_s=300))
    assert [len(w.events) for w in cut] == [4, 4, 2, 4, 1]
    assert sum(len(w.events) for w in cut) == len(events)
    assert cut[2].line_end == 10 and cut[3].line_start == 11
