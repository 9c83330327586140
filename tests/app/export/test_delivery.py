"""Issue 44 item 6: exports deliver exactly once per destination. Each reported case against a real
server on loopback (the HEC double of `_hec.py`, a TCP listener for syslog) and a real SQLite store
holding the delivery cursor, through `logwarden export --forward` where the case was reported."""

from __future__ import annotations

import json
import socket
import struct
import threading

import pytest
from _hec import TOKEN, start_hec
from _store_helpers import make_record
from click.testing import CliRunner
from test_export import parse_cef

from logwarden.app.export import ForwardError, export_incidents, export_records, forward_splunk_hec, forward_syslog
from logwarden.app.store import open_store
from logwarden.cli.main import main as cli
from logwarden.schemas.incident import Incident


@pytest.fixture()
def hec():
    server = start_hec()
    yield server
    server.close()


def _store(tmp_path, count: int) -> tuple[str, list[str]]:
    url = f"sqlite:///{tmp_path / 'lw.db'}"
    records = [make_record(line_start=i * 10 + 1, line_end=i * 10 + 9, anomaly=f"finding {i}") for i in range(count)]
    with open_store(url) as store:
        store.upsert_records(records)
    return url, [r.id for r in records]


def _export(db: str, url: str, *extra: str, fmt: str = "splunk-hec"):
    return CliRunner().invoke(cli, ["export", "--format", fmt, "--forward", url, "--db", db, *extra],
                              env={"SPLUNK_HEC_TOKEN": TOKEN})


def said(result) -> str:
    """The command's words, without the terminal's line wrapping."""
    return " ".join(result.output.split())


def _states(db: str, destination: str) -> dict[str, str]:
    with open_store(db) as store:
        return store.deliveries.states(destination, "records")


# -- Splunk HEC --------------------------------------------------------------------------------


def test_hec_failing_after_three_batches_then_the_advised_rerun_indexes_each_record_once(tmp_path, hec):
    """Reported: 842 events indexed for 542 records (300 before the failure, all 542 again on the re-run)."""
    db, ids = _store(tmp_path, 542)
    hec.fail_after = 3
    failed = _export(db, hec.url)
    assert failed.exit_code == 1 and "Traceback" not in said(failed)
    assert "Of 542 events: 300 accepted" in said(failed) and "242 not sent" in said(failed)
    assert "re-run" in said(failed)
    hec.fail_after = None
    again = _export(db, hec.url)
    assert again.exit_code == 0, again.output
    assert "300 already delivered" in said(again)
    assert len(hec.events) == 542 and sorted(hec.ids()) == sorted(ids)
    assert _export(db, hec.url).exit_code == 0 and len(hec.events) == 542  # a third run sends nothing


def test_hec_slower_than_the_timeout_gets_the_batch_once_and_the_ids_are_marked(tmp_path, hec):
    """Reported: a HEC slower than the 30 s time-out indexed the same batch 4 times (1 + 3 retries)."""
    db, ids = _store(tmp_path, 5)
    hec.stall = True
    failed = _export(db, hec.url, "--timeout", "0.5")
    assert failed.exit_code == 1 and "may have indexed them" in said(failed) and "5 uncertain" in said(failed)
    assert len(hec.events) == 5 and hec.requests == 1
    assert set(_states(db, hec.url + "/services/collector/event").values()) == {"uncertain"}
    hec.stall = False
    assert _export(db, hec.url).exit_code == 0 and len(hec.events) == 5  # uncertain is not re-sent unasked
    resent = _export(db, hec.url, "--resend", "uncertain", "--json")
    assert resent.exit_code == 0 and json.loads(resent.stdout)["this_run"]["accepted"] == 5
    assert sorted(hec.ids()) == sorted(ids + ids)  # sent twice on request, with the same ids to deduplicate


def test_hec_timeout_is_not_retried_by_the_forwarder(hec):
    hec.stall = True
    events = list(export_records([make_record(line_start=i, line_end=i) for i in range(1, 4)], "splunk-hec"))
    with pytest.raises(ForwardError, match="may have indexed") as caught:
        forward_splunk_hec(events, hec.url, token=TOKEN, timeout=0.5, backoff_s=0)
    assert len(hec.events) == 3 and caught.value.tally.uncertain == 3


def test_hec_indexer_acknowledgement_is_used_where_offered(tmp_path, hec):
    db, ids = _store(tmp_path, 250)
    hec.use_ack, hec.acks_pending = True, 1  # the first ack query says "not yet"
    done = _export(db, hec.url, "--json")
    assert done.exit_code == 0, done.output
    report = json.loads(done.stdout)
    assert report["this_run"]["indexed"] == 250 and report["confirmed"] is True
    assert len(hec.channels) == 1 and hec.ack_queries >= 2
    assert set(_states(db, hec.url + "/services/collector/event").values()) == {"indexed"}


def test_hec_acknowledgement_that_never_comes_leaves_the_batches_uncertain(hec):
    hec.use_ack, hec.acks_pending = True, 10**6
    marks: list[tuple[list[str], str]] = []
    events = list(export_records([make_record(line_start=i, line_end=i) for i in range(1, 4)], "splunk-hec"))
    tally = forward_splunk_hec(events, hec.url, token=TOKEN, ids=["a", "b", "c"], batch=2,
                               mark=lambda ids, state: marks.append((ids, state)), ack_timeout=0.2, ack_poll_s=0.05)
    assert tally.counts == {"uncertain": 3}
    assert sorted(marks) == [(["a", "b"], "uncertain"), (["c"], "uncertain")]


# -- syslog over TCP ---------------------------------------------------------------------------


class Listener:
    """A real TCP listener: `read` (read all, count the octet-framed messages, close), `close` (accept and
    close without reading a byte) or `reset` (accept and abort the connection without reading)."""

    def __init__(self, mode: str) -> None:
        self.mode, self.data = mode, b""
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                if self.mode == "reset":
                    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                if self.mode in ("reset", "close"):
                    continue
                while chunk := conn.recv(65536):
                    self.data += chunk

    def messages(self) -> int:
        count, rest = 0, self.data
        while rest:
            length, rest = rest.split(b" ", 1)
            rest = rest[int(length):]
            count += 1
        return count

    def close(self) -> None:
        self.sock.close()


@pytest.fixture()
def listener(request):
    server = Listener(request.param)
    yield server
    server.close()


@pytest.mark.parametrize("listener", ["reset", "close"], indirect=True)
def test_syslog_tcp_reset_is_a_failure_with_the_count(tmp_path, listener):
    """Reported: syslog over TCP reported success to a receiver that read nothing, and no count on a reset."""
    db, _ = _store(tmp_path, 1)  # one message: a write into a closed connection succeeds, only the next fails
    url = f"syslog+tcp://127.0.0.1:{listener.port}"
    failed = _export(db, url, fmt="cef")
    assert failed.exit_code == 1 and "Traceback" not in said(failed)
    # the reset may come before the connection is made (nothing written) or after the message was
    assert "Of 1 events:" in said(failed) and ("1 not sent" in said(failed) or "1 uncertain" in said(failed))
    assert listener.data == b""


@pytest.mark.parametrize("listener", ["read"], indirect=True)
def test_syslog_tcp_says_sent_not_confirmed_and_a_rerun_sends_nothing(tmp_path, listener):
    db, ids = _store(tmp_path, 3)
    url = f"syslog+tcp://127.0.0.1:{listener.port}"
    done = _export(db, url, fmt="cef")
    assert done.exit_code == 0, done.output
    assert "3 sent, not confirmed" in said(done)
    assert listener.messages() == 3
    assert _states(db, url) == dict.fromkeys(ids, "sent")
    again = _export(db, url, "--json", fmt="cef")
    assert json.loads(again.stdout)["already_delivered"] == 3 and listener.messages() == 3


def test_syslog_tcp_receiver_that_closes_unread_while_we_write_is_seen():
    """More than the sockets' buffers hold (20 MB): the client is still writing when the receiver, which
    read nothing, closes."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        thread = threading.Thread(target=lambda: server.accept()[0].close(), daemon=True)
        thread.start()
        with pytest.raises(ForwardError, match="reset the connection|closed the connection") as caught:
            forward_syslog(["x" * 60_000] * 350, f"syslog+tcp://127.0.0.1:{port}", timeout=10)
    thread.join(10)
    assert caught.value.tally.uncertain < 350 and "of 350 messages were written" in str(caught.value)


# -- one deterministic event id in every format ------------------------------------------------


def test_every_format_carries_the_record_id_as_the_event_id():
    records = [make_record(line_start=1, line_end=5), make_record(line_start=6, line_end=9)]
    paths = {"jsonl": lambda d: d["id"], "ecs": lambda d: d["event"]["id"], "ocsf": lambda d: d["metadata"]["uid"],
             "splunk-hec": lambda d: d["fields"]["record_id"]}
    for fmt, event_id in paths.items():
        first, second = list(export_records(records, fmt)), list(export_records(records, fmt))
        assert [event_id(json.loads(line)) for line in first] == [r.id for r in records], fmt
        assert [event_id(json.loads(line)) for line in second] == [r.id for r in records], fmt
    assert [parse_cef(line)[1]["externalId"] for line in export_records(records, "cef")] == [r.id for r in records]


def test_incident_formats_carry_the_incident_id():
    incident = Incident(id="inc-0123456789abcdef", title="t", summary="s", risk_level="high", category="brute_force",
                        record_ids=["r1"])
    paths = {"jsonl": lambda d: d["id"], "ecs": lambda d: d["event"]["id"], "ocsf": lambda d: d["metadata"]["uid"]}
    for fmt, event_id in paths.items():
        assert [event_id(json.loads(line)) for line in export_incidents([incident], fmt)] == [incident.id], fmt
