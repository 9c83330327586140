"""Issue 43, item 2: a value an attacker writes cannot forge who did it. Daemons write a user name
verbatim (spaces included) before the client address, so every "user … from ADDR" format is read
from the right; a JSON key written twice keeps its first value everywhere and is noted."""

from __future__ import annotations

import json

from _hostile import sshd, write_lines
from click.testing import CliRunner

from logwarden.app.events import LogLine
from logwarden.app.parse import bounded_json
from logwarden.app.parse.jsonlog import JsonParser, parse_file_json
from logwarden.app.parse.messages import message_fields
from logwarden.app.parse.windows import WindowsParser
from logwarden.cli.main import main

ATTACKER = "203.0.113.9"


def forged(i: int) -> str:
    """A user name that ends the way sshd's line does, naming an innocent address."""
    return f"x from 10.0.0.{i % 250 + 1} port 22 ssh2"


def test_sshd_failures_whose_user_names_forge_an_address_are_blamed_on_the_real_client(tmp_path):
    lines = [sshd(i, user=forged(i), ip=ATTACKER).replace(" for ", " for invalid user ") for i in range(60)]
    lines.append(sshd(60, user="root", ip=ATTACKER).replace("Failed password", "Accepted password"))
    log = write_lines(tmp_path / "auth.log", lines)
    done = CliRunner().invoke(main, ["analyze", str(log), "--rules-only", "--final", "--json",
                                     "--db", f"sqlite:///{tmp_path / 'lw.db'}"])
    assert done.exit_code == 0, done.output
    records = json.loads(done.stdout)["records"]
    blamed = {ip for r in records for ip in r["indicators"]["ips"]}
    assert ATTACKER in blamed and not any(ip.startswith("10.0.0.") for ip in blamed), blamed
    assert any(r["category"] == "brute_force" and r["risk_level"] in ("high", "critical") for r in records)


def test_every_sshd_user_from_address_format_takes_the_last_address():
    name = "a b from 10.0.0.5 port 22 ssh2"
    for message in (f"Failed password for invalid user {name} from {ATTACKER} port 4711 ssh2",
                    f"Failed none for invalid user {name} from {ATTACKER} port 4711 ssh2 [preauth]",
                    f"Invalid user {name} from {ATTACKER} port 4711",
                    f"error: maximum authentication attempts exceeded for invalid user {name} from {ATTACKER} "
                    "port 4711 ssh2 [preauth]",
                    f"Accepted publickey for {name} from {ATTACKER} port 4711 ssh2: ED25519 SHA256:abcDEF+/x"):
        found = message_fields("sshd", message)
        assert (found["src_ip"], found["port"], found["user"]) == (ATTACKER, 4711, name), message
    spaced = "a 10.0.0.5 port 22"  # the forms without "from": "user NAME ADDR port N"
    for message in (f"Connection closed by invalid user {spaced} {ATTACKER} port 4711 [preauth]",
                    f"Disconnected from invalid user {spaced} {ATTACKER} port 4711 [preauth]",
                    f"Disconnecting invalid user {spaced} {ATTACKER} port 4711: Too many authentication failures "
                    "[preauth]"):
        found = message_fields("sshd", message)
        assert (found["src_ip"], found["port"], found["user"]) == (ATTACKER, 4711, spaced), message


def test_ftp_and_app_login_failures_do_not_take_an_address_from_the_typed_name():
    vsftpd = message_fields("vsftpd", f'[x] FAIL LOGIN: Client "10.0.0.5" [y] FAIL LOGIN: Client "::ffff:{ATTACKER}"')
    assert vsftpd["src_ip"] == ATTACKER
    app = message_fields(None, f"Authentication failure for user 'a from 10.0.0.5' from {ATTACKER}: Bad credentials")
    assert app["src_ip"] == ATTACKER
    two = message_fields(None, f"login failed for user=a from 10.0.0.5 from {ATTACKER}")
    assert "src_ip" not in two  # two unquoted addresses: which one the app wrote cannot be told, none is believed


def test_pam_pairs_stated_twice_are_not_believed():
    typed = "x rhost=10.0.0.5"  # what a client typed as its user, PAM's user= (the last pair)
    found = message_fields("login", f"pam_unix(login:auth): authentication failure; logname= uid=0 euid=0 tty=ftp "
                                    f"ruser= rhost={ATTACKER}  user={typed}")
    assert "src_ip" not in found  # which rhost= PAM wrote cannot be told: neither is believed
    plain = message_fields("sshd", f"pam_unix(sshd:auth): authentication failure; logname= uid=0 euid=0 tty=ssh "
                                   f"ruser= rhost={ATTACKER}  user=root")
    assert (plain["src_ip"], plain["user"]) == (ATTACKER, "root")


def line(text: str) -> LogLine:
    return LogLine(source="t.json", inode=1, offset=0, line_no=1, text=text)


def test_a_duplicated_json_key_keeps_its_first_value_and_is_noted():
    text = json.dumps({"msg": "login failed", "src_ip": ATTACKER, "user": "root"})[:-1] + ', "src_ip": "10.0.0.5"}'
    event = JsonParser().parse(line(text))
    assert event.fields["src_ip"] == ATTACKER and event.fields["json_duplicate_keys"] == "src_ip"
    assert bounded_json.loads(text)["src_ip"] == ATTACKER  # the rule engine's view of `raw` agrees
    whole = parse_file_json([line("[" + text + "]")])
    assert whole[0].fields["src_ip"] == ATTACKER and whole[0].fields["json_duplicate_keys"] == "src_ip"


def test_a_windows_event_with_a_second_ip_address_keeps_the_first():
    event = {"EventID": 4625, "Channel": "Security", "Computer": "DC01",
             "EventData": {"TargetUserName": "admin", "IpAddress": ATTACKER}}
    text = json.dumps(event)[:-2] + ', "IpAddress": "10.0.0.5"}}'
    parsed = WindowsParser().parse(line(text))
    assert parsed.fields["src_ip"] == ATTACKER and "IpAddress" in parsed.fields["json_duplicate_keys"]


def test_a_dotted_key_cannot_override_the_nested_one_written_first():
    text = json.dumps({"message": "login failed", "source": {"ip": ATTACKER}, "source.ip": "10.0.0.5"})
    assert JsonParser().parse(line(text)).fields["source.ip"] == ATTACKER
