"""sshd bursts as a syslog file holds them, for the incident tests: an attacker's address and
another one, on any host, at any minute."""

from __future__ import annotations

from pathlib import Path

ATTACKER, OTHER = "203.0.113.7", "198.51.100.50"


def burst(host: str, hour: int, minute: int, ip: str, n: int = 12, *, pid: int = 1000,
          accepted: bool = False) -> list[str]:
    lines = [f"Mar  1 {hour:02d}:{minute:02d}:{i:02d} {host} sshd[{pid + i}]: Failed password for root from {ip} "
             f"port {40000 + i} ssh2" for i in range(n)]
    if accepted:
        lines.append(f"Mar  1 {hour:02d}:{minute:02d}:{n + 5:02d} {host} sshd[{pid + n}]: Accepted password for "
                     f"root from {ip} port 50000 ssh2")
    return lines


def write(path: Path, lines: list[str], mode: str = "w") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, mode) as fh:
        fh.write("\n".join(lines) + "\n")
    return path
