"""Small real-format logs written into a tmp folder, for pipeline/CLI/watcher tests."""

from __future__ import annotations

import gzip
from pathlib import Path

BRUTE_IP = "203.0.113.7"
SQLI_IP = "198.51.100.9"


def auth_lines() -> list[str]:
    lines = [f"Mar  1 10:00:{i:02d} web01 sshd[{1000 + i}]: Failed password for invalid user admin{i} "
             f"from {BRUTE_IP} port {40000 + i} ssh2" for i in range(30)]
    lines.append(f"Mar  1 10:01:00 web01 sshd[2000]: Accepted password for root from {BRUTE_IP} port 50000 ssh2")
    lines += [f"Mar  1 10:0{2 + i // 60}:{i % 60:02d} web01 CRON[{3000 + i}]: (root) CMD (run-parts /etc/cron.hourly)"
              for i in range(20)]
    return lines


def access_lines() -> list[str]:
    lines = [f'{SQLI_IP} - - [01/Mar/2026:10:00:{i:02d} +0000] "GET /item.php?id=1%27%20UNION%20SELECT%20'
             f'password%20FROM%20users-- HTTP/1.1" 200 512 "-" "sqlmap/1.7.2#stable (https://sqlmap.org)"'
             for i in range(15)]
    lines += [f'10.0.0.{i % 9 + 2} - - [01/Mar/2026:10:01:{i:02d} +0000] "GET /docs/page{i}.html HTTP/1.1" 200 '
              f'{1000 + i} "-" "Mozilla/5.0 (X11; Linux x86_64)"' for i in range(25)]
    return lines


def write_logs(folder: Path) -> dict[str, int]:
    """auth.log, access.log, a rotated gz and a corrupt gz; returns lines written per readable file."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "auth.log").write_text("\n".join(auth_lines()) + "\n")
    (folder / "access.log").write_text("\n".join(access_lines()) + "\n")
    with gzip.open(folder / "access.log.1.gz", "wt") as fh:
        fh.write("\n".join(access_lines()[15:]) + "\n")
    good = gzip.compress(("\n".join(auth_lines()) + "\n").encode())
    (folder / "broken.log.gz").write_bytes(good[: len(good) // 2])
    return {"auth.log": len(auth_lines()), "access.log": len(access_lines()), "access.log.1.gz": 25}


# CSIC 2010 style raw HTTP requests (method line, headers, blank line, body), as `http_request` parses them.
RAW_REQUESTS = [
    "GET http://localhost:8080/tienda1/publico/anadir.jsp?id=2&nombre=Jam%F3n&cantidad=%27%3B+DROP+TABLE+usuarios HTTP/1.1",
    "User-Agent: Mozilla/5.0 (compatible; Konqueror/3.5; Linux) KHTML/3.5.8 (like Gecko)",
    "Pragma: no-cache", "Cache-control: no-cache", "Host: localhost:8080", "Connection: close", "",
    "POST http://localhost:8080/tienda1/publico/autenticar.jsp HTTP/1.1",
    "User-Agent: sqlmap/1.7.2#stable (https://sqlmap.org)",
    "Content-Type: application/x-www-form-urlencoded", "Content-Length: 68", "",
    "modo=entrar&login=bob%27+or+%271%27%3D%271&pwd=x&remember=on&B1=Entrar", "",
    "GET /tienda1/index.jsp HTTP/1.1", "Host: localhost:8080", "",
]
