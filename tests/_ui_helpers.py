"""Fixtures for the UI tests: a real SQLite store filled by the real pipeline (rules-only) from real
auth.log / access.log lines, hostile records for the safety tests, and an AppTest factory.

Import what you need: `from _ui_helpers import APP, fill_store, hostile_records, XSS_MARKERS`.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from _store_helpers import BASE_TS, make_record

from logwarden.app.pipeline import Pipeline
from logwarden.app.run_options import RunOptions
from logwarden.app.store import Store, open_store
from logwarden.schemas import Evidence, ExemplarLine, Indicators, RiskRecord, Technique

REPO = Path(__file__).resolve().parents[1]
APP = REPO / "logwarden" / "ui" / "app.py"
SAMPLES = REPO / "sample_logs"

AUTH_LOG = """\
Nov 29 10:00:01 bastion-1 sshd[811]: Failed password for root from 203.0.113.7 port 50122 ssh2
Nov 29 10:00:03 bastion-1 sshd[811]: Failed password for root from 203.0.113.7 port 50124 ssh2
Nov 29 10:00:05 bastion-1 sshd[812]: Failed password for invalid user admin from 203.0.113.7 port 50126 ssh2
Nov 29 10:00:07 bastion-1 sshd[813]: Failed password for invalid user oracle from 203.0.113.7 port 50128 ssh2
Nov 29 10:00:09 bastion-1 sshd[814]: Failed password for root from 203.0.113.7 port 50130 ssh2
Nov 29 10:00:11 bastion-1 sshd[815]: Failed password for root from 203.0.113.7 port 50132 ssh2
Nov 29 10:00:13 bastion-1 sshd[816]: Failed password for root from 203.0.113.7 port 50134 ssh2
Nov 29 10:00:15 bastion-1 sshd[817]: Accepted password for root from 203.0.113.7 port 50136 ssh2
Nov 29 10:00:16 bastion-1 sshd[817]: pam_unix(sshd:session): session opened for user root by (uid=0)
Nov 29 10:05:00 bastion-1 sudo:    alice : TTY=pts/0 ; PWD=/home/alice ; USER=root ; COMMAND=/bin/bash
Nov 29 10:17:01 bastion-1 CRON[900]: (root) CMD (   cd / && run-parts --report /etc/cron.hourly)
"""

ACCESS_LOG = """\
198.51.100.23 - - [29/Nov/2026:11:01:13 +0000] "GET /products.php?id=1%27%20UNION%20SELECT%20username,password%20FROM%20users--%20 HTTP/1.1" 200 5123 "-" "sqlmap/1.7.2#stable (https://sqlmap.org)"
198.51.100.23 - - [29/Nov/2026:11:01:14 +0000] "GET /../../etc/passwd HTTP/1.1" 404 162 "-" "sqlmap/1.7.2#stable (https://sqlmap.org)"
192.0.2.10 - - [29/Nov/2026:11:02:00 +0000] "GET /index.html HTTP/1.1" 200 1043 "-" "Mozilla/5.0"
198.51.100.23 - - [29/Nov/2026:11:03:14 +0000] "GET /cgi-bin/test.cgi?cmd=;cat%20/etc/shadow HTTP/1.1" 200 55 "-" "curl/8.0"
192.0.2.77 - - [29/Nov/2026:11:04:02 +0000] "GET /robots.txt HTTP/1.1" 404 162 "-" "Nikto/2.5.0"
"""

FIXTURE_LINES = AUTH_LOG.count("\n") + ACCESS_LOG.count("\n")

XSS_SCRIPT = "<script>alert(1)</script>"
XSS_IMG = "<img src=x onerror=alert(1)>"
XSS_LINK = "[click](javascript:alert(1))"
XSS_URL = "javascript:alert(document.cookie)"
XSS_MARKERS = (XSS_SCRIPT, XSS_IMG, XSS_LINK, XSS_URL)


APP_TIMEOUT = 120  # AppTest's wait: cold imports of pandas/altair on a loaded 2-core machine; not a performance bound


def open_app_page(page: str | None = None, **query):
    """The app run through Streamlit's AppTest, switched to views/<page>.py with `query` (the home
    page when no page is named); a page that raised fails the test with the exception's text."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(APP), default_timeout=APP_TIMEOUT).run()
    if page:
        at.query_params.update(query)
        at.switch_page(f"views/{page}.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def write_logs(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    auth, access = folder / "auth.log", folder / "access.log"
    auth.write_text(AUTH_LOG, encoding="utf-8")
    access.write_text(ACCESS_LOG, encoding="utf-8")
    return [auth, access]


def fill_store(folder: Path, *, with_samples: bool = False, url: str | None = None) -> tuple[str, Store]:
    """Analyse the fixture logs (and the repo's sample_logs/, if asked and present) rules-only into a
    fresh SQLite file (or the empty database at `url`); returns (url, store)."""
    url = url or f"sqlite:///{folder / 'ui.db'}"
    store = open_store(url)
    paths: list[Path] = write_logs(folder / "logs")
    if with_samples and SAMPLES.is_dir():
        paths += sorted(p for p in SAMPLES.iterdir() if p.is_file() and p.suffix != ".md" and p.name != "labels.jsonl")
    Pipeline(store, None, RunOptions(rules_only=True)).analyze(paths)
    return url, store


def hostile_records() -> list[RiskRecord]:
    """Records whose every free-text field carries markup an attacker could write into a log."""
    payload = f"{XSS_SCRIPT} {XSS_IMG} {XSS_LINK} {XSS_URL} # heading *bold* :red[colour] $x^2$"
    return [make_record(
        source=f"/var/log/hostile-{i}.log", line_start=1, line_end=3, risk_level="critical",
        category="web_attack", last_ts=BASE_TS + timedelta(hours=2, minutes=i),
        anomaly=f"ANOMALY-XSS-{i} {payload}", trace=f"trace {payload}", recommendation=f"do {payload}",
        host=XSS_IMG, detections=[XSS_SCRIPT],
        techniques=[Technique(id="T1190", name=XSS_LINK, tactic=XSS_SCRIPT)],
        indicators=Indicators(ips=["198.51.100.66"], users=[XSS_SCRIPT], urls=[XSS_URL], hosts=[XSS_IMG]),
        evidence=Evidence(line_numbers=[1, 2, 3], exemplars=[ExemplarLine(line_no=2, text=f"GET /?q={payload}")]),
        raw_model_output=payload, analyst_note=XSS_LINK,
    ) for i in range(2)]
