"""Template mining, windowing and the digest on real-format sshd lines."""

from datetime import datetime, timedelta

from logwarden.app.digest import build_digest
from logwarden.app.mine import CombinedMasking, SourceMiner, windows
from logwarden.app.models import Event, Signal

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


def test_digest_compresses_and_keeps_evidence_lines():
    events = [sshd(i, f"Failed password for invalid user u{i} from 203.0.113.7 port {5000 + i} ssh2") for i in range(300)]
    events.append(sshd(300, "Accepted password for root from 203.0.113.7 port 6000 ssh2"))
    miner = SourceMiner()
    window = next(windows(events, miner, source="auth.log", inode=1, fmt="syslog"))
    signal = Signal(rule_id="lw-ssh-success-after-failures", title="login after failures", level="high",
                    category="brute_force", techniques=["T1110.001"], source="auth.log", line_numbers=[1, 301])
    digest = build_digest(window, miner, [signal])
    text = digest.render()
    assert "300x sshd: Failed password for invalid user <USER> from <IP> port <NUM> ssh2" in text
    assert "203.0.113.7 x301" in text
    assert "L301: " in text and "Accepted password for root" in text
    assert "lw-ssh-success-after-failures" in text
    assert len(text) * 10 < window.raw_chars  # the digest is >10x smaller than the raw lines


def test_digest_fit_respects_token_budget():
    # 30 message lengths → 30 templates (Drain clusters by token count first)
    events = [sshd(i, " ".join(["alpha"] * (i % 30 + 1)) + f" end{i}") for i in range(400)]
    miner = SourceMiner()
    window = next(windows(events, miner, source="auth.log", inode=1, fmt="syslog"))
    digest = build_digest(window, miner, [])
    count = lambda s: len(s) // 4  # noqa: E731
    fitted = digest.fit(150, count)
    assert count(fitted) <= 150 or fitted.count("\n L") <= 1
    assert len(fitted) < len(digest.render())
