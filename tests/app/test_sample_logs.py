"""The sample logs, their ground truth (sample_logs/labels.jsonl) and the benchmark log generator.

Checks that regenerating gives byte-identical files, that every label is valid and points at lines
that carry its attack's tell-tale text (independently of the generator: patterns live here), that
labels cover every line exactly once, that the files have their formats' shapes and ordered
timestamps, and that `bench/gen_mixed_log.py` is deterministic and writes exactly what it says.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import re
import sys
from datetime import datetime
from pathlib import Path
from types import ModuleType

import pytest
from _repo import REPO

from logwarden.schemas import CATEGORIES, RISK_LEVELS, risk_rank
from logwarden.schemas.assessment import TECHNIQUE_PATTERN

ROOT = REPO
SAMPLES = ROOT / "sample_logs"
LABEL_KEYS = ["file", "line_start", "line_end", "category", "risk_min", "risk_max", "techniques", "note"]


def load_script(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


gen = load_script(ROOT / "scripts" / "gen_sample_logs.py")
bench = load_script(ROOT / "bench" / "gen_mixed_log.py")


def read_text(path: Path) -> str:
    data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    return data.decode("utf-8")


def read_lines(path: Path) -> list[str]:
    # split on "\n" only: auditd's ENRICHED separator 0x1d is a line break to str.splitlines()
    text = read_text(path)
    assert text.endswith("\n"), f"{path.name} must end with a newline"
    return text[:-1].split("\n")


def read_labels(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


LABELS = read_labels(SAMPLES / "labels.jsonl")
FILES = sorted({label["file"] for label in LABELS})
LINES = {name: read_lines(SAMPLES / name) for name in FILES}


# --- what each category looks like in any of the formats, written without the generator ------

TELLTALE = {
    "brute_force": r"Failed password|authentication failure|Invalid user|invalid user|maximum authentication "
                   r"attempts|PAM \d+ more|ignoring max retries|check pass; user unknown|Bye Bye|Accepted password|"
                   r"session opened|New session|pam_faillock|LOGIN_FAIL|LOCKOUT|\"event_id\":\"462[45]\"|"
                   r"ConsoleLogin|res=failed|POST /login\.php HTTP/1\.1\" 401|Authentication failure",
    "reconnaissance": r"Nikto|filter_IN_public_REJECT|AH01630|AH02811|AH01276|/\.(env|git|aws|ssh|npmrc|docker)|\.env",
    "web_attack": r"sqlmap|UNION|SLEEP|%27|'|<script|%3Cscript|%3Csvg|onerror|javascript:|\.\./|\.%2e|%2F\.\.|%252f|"
                  r"php://|/proc/self|diag\.cgi|\(\) \{|shell\.php|upload\.php|SQL syntax|AH10244|jndi|AH01215",
    "privilege_escalation": r"incorrect password attempts|NOT in sudoers|FAILED SU|pam_unix\((su|sudo):auth\)|"
                            r"comm=\"chmod\"|\"u\+s\"|a1=\"-p\"",
    "malware_execution": r"REPLACE \(www-data\)|curl -fsSL|certutil|update\.exe|-Enc |-enc |mimikatz|lsass|"
                         r"WinDefendUpd|comm=\"(nc|ncat|sh)\"|nc -e",
    "account_persistence": r"useradd|usermod|new (user|group)|passwd|sudo:session|\"event_id\":\"47(20|22|24|38|32)\"|"
                           r"ADD_USER|ADD_GROUP|USER_MGMT|USER_CHAUTHTOK|CreateAccessKey|CreateUser|AttachUserPolicy|"
                           r"CreateLoginProfile",
    "data_exfiltration": r"sftp|subsystem request|Accepted publickey|session (opened|closed)|disconnect|/backup/|"
                         r"PutBucketAcl|GetObject",
    "system_failure": r"oom|Out of memory|Killed process|mysql\.service|MySQL|Mem-Info|active_anon|CPU: \d|"
                      r"Hardware name|sdb|EXT4|I/O error|segfault|Code:|dumped core|Kernel panic|BUG:|#PF|Oops|"
                      r"RIP:|Call Trace|IRQ|ena_|dev_hard_start_xmit|Kernel Offset|Exception|HikariPool",
    "policy_violation": r"Accepted password for root|session opened for user root|New session \d+ of user root|"
                        r"\"event_id\":\"1102\"|StopLogging|ConsoleLogin",
}

# Never in benign noise: unambiguous attack indicators and the attackers' own addresses.
NEVER_BENIGN = re.compile(
    r"sqlmap|Nikto|<script|%3Cscript|\.\./|\.%2e|jndi:|mimikatz|certutil|-Enc |-enc |lsass|WinDefendUpd|"
    r"StopLogging|PutBucketAcl|CreateAccessKey|CreateUser|oom-killer|Out of memory|Kernel panic|segfault|"
    r"EXT4-fs error|I/O error|Failed password for (root|invalid)|Invalid user|useradd|usermod|NOT in sudoers|"
    r"FAILED SU|shell\.php|/backup/|ignore previous instructions|\"event_id\":\"(4625|1102|4720|4732|7045)\"|"
    r"res=failed|NullPointer|Connection is not available|nc -e|pam_unix\((sudo|su):auth\)|\[sdb\]|Medium Error|"
    r"blk_update_request|Buffer I/O|BUG: unable|Oops:|REPLACE \(www-data\)|curl -fsSL|"
    r"\b(203\.0\.113\.(9|14|23|45|50|66|77|80|99)|198\.51\.100\.(23|61|62|77|140)|192\.0\.2\.(77|150))\b")
HOSTILE = (gen.XSS_USERNAME, gen.MARKDOWN_LINK, "ignore previous instructions")
LOG_EVENT_START = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} ")
AUDIT_SERIAL = re.compile(r"msg=audit\(\d+\.\d+:(\d+)\)")


def event_starts(name: str, lines: list[str]) -> list[bool]:
    """Which lines begin an event: a stack trace, an audit serial, a pretty JSON record span lines."""
    if name == "app.log":
        return [bool(LOG_EVENT_START.match(line)) for line in lines]
    if name == "audit.log":
        serials = [AUDIT_SERIAL.search(line).group(1) for line in lines]
        return [i == 0 or serials[i] != serials[i - 1] for i in range(len(lines))]
    if name == "cloudtrail_records.json":
        return [i == 0 or line == "    {" for i, line in enumerate(lines)]
    return [True] * len(lines)


def unit_events(name: str, label: dict) -> list[str]:
    lines = LINES[name]
    starts = event_starts(name, lines)
    events: list[str] = []
    for i in range(label["line_start"] - 1, label["line_end"]):
        if starts[i] or not events:
            events.append(lines[i])
        else:
            events[-1] += "\n" + lines[i]
    return events


def attack_labels() -> list[dict]:
    return [label for label in LABELS if label["category"] != "benign"]


def label_id(label: dict) -> str:
    return f"{label['file']}:{label['line_start']}-{label['line_end']}:{label['category']}"


# --- determinism ----------------------------------------------------------------------------

def test_regenerating_gives_byte_identical_files(tmp_path: Path) -> None:
    written = gen.generate(tmp_path)
    committed = sorted(p.name for p in SAMPLES.iterdir() if p.name != "README.md")
    assert sorted(p.name for p in written) == committed
    for path in written:
        if path.suffix == ".gz":  # compressor builds may differ; the content and header may not
            assert read_text(path) == read_text(SAMPLES / path.name), path.name
            assert path.read_bytes()[4:8] == b"\0\0\0\0", "gzip mtime must be 0"
        else:
            assert path.read_bytes() == (SAMPLES / path.name).read_bytes(), path.name


def test_another_seed_gives_other_logs_with_the_same_story() -> None:
    ours, theirs = gen.build_auth_log(gen.SEED), gen.build_auth_log(gen.SEED + 1)
    assert ours.lines != theirs.lines
    assert [u["category"] for u in ours.units] == [u["category"] for u in theirs.units]


# --- labels ---------------------------------------------------------------------------------

@pytest.mark.parametrize("label", LABELS, ids=label_id)
def test_label_is_valid(label: dict) -> None:
    assert list(label) == LABEL_KEYS
    assert label["category"] in CATEGORIES
    assert label["risk_min"] in RISK_LEVELS
    assert label["risk_max"] is None or risk_rank(label["risk_min"]) <= risk_rank(label["risk_max"])
    assert all(re.fullmatch(TECHNIQUE_PATTERN, t) for t in label["techniques"])
    assert len(label["techniques"]) <= 3 and label["note"]
    if label["category"] == "benign":
        assert (label["risk_min"], label["risk_max"], label["techniques"]) == ("info", "low", [])
    else:
        assert risk_rank(label["risk_min"]) >= risk_rank("low")


@pytest.mark.parametrize("name", FILES)
def test_units_cover_every_line_exactly_once(name: str) -> None:
    units = sorted((u for u in LABELS if u["file"] == name), key=lambda u: u["line_start"])
    expected_start = 1
    for unit in units:
        assert unit["line_start"] == expected_start and unit["line_end"] >= unit["line_start"], unit
        expected_start = unit["line_end"] + 1
    assert expected_start == len(LINES[name]) + 1


@pytest.mark.parametrize("label", attack_labels(), ids=label_id)
def test_attack_unit_starts_on_its_telltale_and_mostly_shows_it(label: dict) -> None:
    pattern = re.compile(TELLTALE[label["category"]], re.IGNORECASE | re.MULTILINE)
    events = unit_events(label["file"], label)
    assert pattern.search(events[0]), f"first event is not {label['category']}: {events[0][:200]}"
    matching = sum(bool(pattern.search(event)) for event in events)
    assert matching * 2 >= len(events), f"only {matching}/{len(events)} events look like {label['category']}"


@pytest.mark.parametrize("label", attack_labels(), ids=label_id)
def test_attack_unit_does_not_split_an_event(label: dict) -> None:
    starts = event_starts(label["file"], LINES[label["file"]])
    assert starts[label["line_start"] - 1]
    assert label["line_end"] == len(starts) or starts[label["line_end"]]


@pytest.mark.parametrize("label", [u for u in LABELS if u["category"] == "benign"], ids=label_id)
def test_benign_unit_holds_no_attack_indicator(label: dict) -> None:
    lines = LINES[label["file"]][label["line_start"] - 1:label["line_end"]]
    hits = [line for line in lines if NEVER_BENIGN.search(line)]
    assert not hits, hits[:3]


def test_hostile_strings_are_present_and_stay_attacks() -> None:
    seen = set()
    for label in LABELS:
        for line in LINES[label["file"]][label["line_start"] - 1:label["line_end"]]:
            for hostile in HOSTILE:
                if hostile in line:
                    seen.add(hostile)
                    assert label["category"] != "benign", (hostile, label_id(label))
    assert seen == set(HOSTILE)


def test_labels_cover_the_categories_and_every_file_mixes_attack_and_noise() -> None:
    categories = {label["category"] for label in LABELS} - {"benign"}
    assert len(categories) >= 8 and categories <= set(CATEGORIES)
    for name in FILES:
        kinds = {label["category"] == "benign" for label in LABELS if label["file"] == name}
        assert kinds == {True, False}, name


@pytest.mark.parametrize("name", FILES)
def test_file_sizes_are_small_but_real(name: str) -> None:
    assert 200 <= len(LINES[name]) <= 1500


# --- shapes of the formats ------------------------------------------------------------------

RFC3164 = re.compile(r"(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [ \d]\d \d\d:\d\d:\d\d \S+ "
                     r"[\w.()-]+(\[\d+\])?: .+")
RFC5424 = re.compile(r"<\d{1,3}>1 \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z \S+ \S+ \d+ \S+ (-|(\[[^\]]+\])+) .+")
COMBINED = re.compile(r'\S+ - \S+ \[\d\d/\w{3}/\d{4}:\d\d:\d\d:\d\d \+0000\] "[A-Z]+ \S+ HTTP/1\.1" \d{3} (\d+|-) '
                      r'"(?:[^"\\]|\\.)*" "(?:[^"\\]|\\.)*"')
APACHE_ERROR = re.compile(r"\[\w{3} \w{3} \d\d \d\d:\d\d:\d\d\.\d{6} \d{4}\] \[\w+:\w+\] \[pid \d+:tid \d+\]"
                          r"( \[client [\d.]+:\d+\])? (\(\d+\)[^:]+: )?AH\d{5}: ")
AUDIT = re.compile(r"type=[A-Z_]+ msg=audit\(\d{10}\.\d{3}:\d+\): \S")
SHAPES = {"auth.log": RFC3164, "secure": RFC3164, "syslog": RFC3164, "messages": RFC3164, "rfc5424.log": RFC5424,
          "access.log": COMBINED, "access.log.1": COMBINED, "access.log.2.gz": COMBINED,
          "error.log": APACHE_ERROR, "audit.log": AUDIT}


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_every_line_has_its_formats_shape(name: str) -> None:
    bad = [line for line in LINES[name] if not SHAPES[name].match(line)]
    assert not bad, bad[:3]


@pytest.mark.parametrize("name", ["windows_security.jsonl", "cloudtrail.jsonl"])
def test_json_lines_are_objects_of_their_kind(name: str) -> None:
    for line in LINES[name]:
        record = json.loads(line)
        assert ("winlog" in record and "event_id" in record["winlog"]) or "eventName" in record


def test_cloudtrail_delivery_file_is_one_records_document() -> None:
    document = json.loads(read_text(SAMPLES / "cloudtrail_records.json"))
    assert list(document) == ["Records"] and len(document["Records"]) >= 20
    names = [record["eventName"] for record in document["Records"]]
    assert {"CreateUser", "AttachUserPolicy", "CreateLoginProfile"} <= set(names)


def timestamp(name: str, line: str) -> datetime | None:
    if name in ("auth.log", "secure", "syslog", "messages"):
        return datetime.strptime("2024 " + line[:15], "%Y %b %d %H:%M:%S")
    if name.startswith("access.log"):
        return datetime.strptime(re.search(r"\[([^\]]+)\]", line).group(1), "%d/%b/%Y:%H:%M:%S %z")
    if name == "error.log":
        return datetime.strptime(line[1:32], "%a %b %d %H:%M:%S.%f %Y")
    if name == "audit.log":
        return datetime.fromtimestamp(float(re.search(r"audit\(([\d.]+):", line).group(1)))
    if name in ("app.log",):
        return datetime.fromisoformat(line[:23]) if LOG_EVENT_START.match(line) else None
    if name == "rfc5424.log":
        return datetime.fromisoformat(line.split(" ")[1].replace("Z", "+00:00"))
    if name.endswith(".jsonl"):
        record = json.loads(line)
        return datetime.fromisoformat((record.get("@timestamp") or record["eventTime"]).replace("Z", "+00:00"))
    return None


@pytest.mark.parametrize("name", [n for n in FILES if n != "cloudtrail_records.json"])
def test_timestamps_never_go_backwards(name: str) -> None:
    stamps = [ts for ts in (timestamp(name, line) for line in LINES[name]) if ts is not None]
    assert len(stamps) > 100
    backwards = [(a, b) for a, b in zip(stamps, stamps[1:]) if b < a]
    assert not backwards, backwards[:3]


# --- the benchmark generator ----------------------------------------------------------------

def test_bench_generator_is_deterministic_and_exact(tmp_path: Path) -> None:
    first = bench.generate(tmp_path / "a", lines=6000, seed=7, attack_every=400)
    second = bench.generate(tmp_path / "b", lines=6000, seed=7, attack_every=400)
    assert [p.name for p in first] == [p.name for p in second]
    for a, b in zip(first, second):
        assert a.read_bytes() == b.read_bytes(), a.name
    logs = [p for p in first if p.name != "labels.jsonl"]
    assert sum(len(read_lines(p)) for p in logs) == 6000
    assert {"auth.log", "access.log", "syslog", "windows.jsonl", "cloudtrail.jsonl"} == {p.name for p in logs}


def test_bench_labels_cover_their_files_and_point_at_attacks(tmp_path: Path) -> None:
    paths = bench.generate(tmp_path, lines=8000, seed=3, attack_every=300)
    labels = read_labels(tmp_path / "labels.jsonl")
    attacks = [label for label in labels if label["category"] != "benign"]
    assert len(attacks) >= 10
    for path in paths[:-1]:
        lines = read_lines(path)
        units = sorted((u for u in labels if u["file"] == path.name), key=lambda u: u["line_start"])
        assert units[0]["line_start"] == 1 and units[-1]["line_end"] == len(lines)
        assert all(a["line_end"] + 1 == b["line_start"] for a, b in zip(units, units[1:]))
        for unit in units:
            text = lines[unit["line_start"] - 1]
            if unit["category"] == "benign":
                assert not any(NEVER_BENIGN.search(line) for line in lines[unit["line_start"] - 1:unit["line_end"]])
            else:
                assert re.search(TELLTALE[unit["category"]], text, re.IGNORECASE), (unit, text[:200])


def web_networks(path: Path) -> set[str]:
    return {line.split(" ", 1)[0].rsplit(".", 1)[0] for line in read_lines(path)}


def test_bench_web_visitors_come_from_many_networks_the_samples_from_few(tmp_path: Path) -> None:
    """The baselines count a client by its /24: the samples' visitors (nine networks) warm no site up,
    so the bench spreads its own over many; `--web-networks 0` is the samples' pool again."""
    spread = web_networks(bench.generate(tmp_path / "spread", lines=6000, seed=7)[1])
    samples = web_networks(bench.generate(tmp_path / "samples", lines=6000, seed=7, web_networks=0)[1])
    assert len(spread) >= 150 and len(samples) <= 20


def test_the_bench_mix_gives_the_baseline_judge_deviations(tmp_path: Path) -> None:
    """What the bench's "with baselines" figure measures: a warmed-up judge that reports deviations
    (with the samples' visitors it reported none)."""
    from logwarden.app.pipeline import Pipeline
    from logwarden.app.run_options import RunOptions
    from logwarden.app.store import open_store

    paths = bench.generate(tmp_path / "logs", lines=40_000, seed=1)
    store = open_store(f"sqlite:///{tmp_path / 'lw.db'}")
    metrics = Pipeline(store, None, RunOptions(rules_only=True, baseline="judge")).analyze(paths[:-1])
    assert metrics.lines == 40_000 and metrics.deviations > 0
