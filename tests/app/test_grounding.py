"""Faithful narratives: entities a model's text names are checked against its digest; a clause
naming one the digest lacks is removed and the entity reported."""

from logwarden.app.grounding import entities, ground

DIGEST = """source: /var/log/auth.log (syslog) host: dc01
lines 1-12 (12 lines)
templates (2, id count x template):
 T1 10x sshd: Failed password for <USER> from <IP> port <NUM> ssh2
lines:
 L3 (T1): Mar  1 10:00:02 dc01 sshd[901]: Failed password for svc-sql from 10.23.23.9 port 4000 ssh2
 L12: Mar  1 10:00:09 dc01 sshd[910]: Accepted password for svc-sql from 10.23.23.9 port 4011 ssh2"""


def test_entities_of_every_kind_are_found():
    text = ("10 failures for user svc-sql from 10.23.23.9 on host dc01, then C:\\Temp\\plink.exe and /etc/shadow; "
            "hash d41d8cd98f00b204e9800998ecf8427e by sqlmap/1.7 'backup2' (T1110.001, L3, T1)")
    found = entities(text)
    for expected in ("10", "svc-sql", "10.23.23.9", "dc01", "C:\\Temp\\plink.exe", "/etc/shadow",
                     "d41d8cd98f00b204e9800998ecf8427e", "sqlmap/1.7", "backup2"):
        assert expected in found, (expected, found)
    assert not {"T1110.001", "L3", "T1"} & set(found)  # vocabulary, not claims


def test_grounded_text_is_kept_whole():
    text = "10 failed logins for user svc-sql from 10.23.23.9, then a success on dc01 (L12)."
    checked = ground(text, DIGEST)
    assert checked.text == text and checked.ungrounded == []
    assert set(checked.entities) >= {"10", "svc-sql", "10.23.23.9", "dc01"}


def test_an_invented_fact_removes_its_clause_and_is_reported():
    """The issue's example: a single event turned into a story with an outside address and a download count."""
    text = ("Brute force against svc-sql from 10.23.23.9. administrator logged in from the outside address "
            "203.0.113.99 and downloaded 7 dumps; user mallory was created.")
    checked = ground(text, DIGEST)
    assert checked.text == "Brute force against svc-sql from 10.23.23.9."
    assert checked.ungrounded == ["203.0.113.99", "7", "mallory"]
    assert "203.0.113.99" not in checked.text and "mallory" not in checked.text


def test_case_and_thousands_separators_do_not_count_as_invention():
    assert ground("Host DC01 saw 1,200 requests.", "host: dc01 ... T1 1200x GET").ungrounded == []


def test_nothing_left_gives_empty_text():
    checked = ground("Exfiltration to 8.8.8.8.", DIGEST)
    assert checked.text == "" and checked.ungrounded == ["8.8.8.8"]


def test_a_windows_path_written_with_forward_slashes_is_the_same_fact():
    digest = r"L4: EventID=1 Image=C:\Users\Public\update.exe CommandLine=certutil.exe -urlcache"
    assert ground("certutil wrote C:/Users/Public/update.exe.", digest).ungrounded == []
    assert ground(r"Dropped C:\Users\Public\other.exe.", digest).ungrounded == [r"C:\Users\Public\other.exe"]
