"""Issue 43, item 5 (normalise before matching): an encoded or obfuscated payload got past every web rule
while its plain form was `high`. Each evasion, read by the real access-log parser and the shipped rules
into rules-only records, must come out at its plain payload's risk; benign requests that look a little
like them (quotes, globs, comments, `&lt=` parameters) still give no record."""

from __future__ import annotations

import pytest

from logwarden.app.triage import prepare

_LINE = '203.0.113.9 - - [01/Mar/2024:10:00:00 +0000] "GET {} HTTP/1.1" 404 153 "-" "Mozilla/5.0"'


def risk(target: str) -> str | None:
    """The highest risk of the rules-only records of one request for `target`, None for no record."""
    records = prepare(_LINE.format(target)).records(None, None)
    order = ["info", "low", "medium", "high", "critical"]
    return max((r.risk_level for r in records), key=order.index, default=None)


EVASIONS = [  # (plain payload, the same payload evading the rules as reported)
    pytest.param("/item?id=1'%20OR%20'1'='1", "/item?id=1%u0027%20OR%20%u00271%u0027=%u00271", id="percent-u"),
    pytest.param("/dl?f=../../secret.txt", "/dl?f=..%c0%af..%c0%afsecret.txt", id="overlong-utf8-slash"),
    pytest.param("/dl?f=../../secret.txt", "/dl?f=%c0%ae%c0%ae/%c0%ae%c0%ae/secret.txt", id="overlong-utf8-dot"),
    pytest.param("/q?s=<script>x</script>", "/q?s=%EF%BC%9Cscript%EF%BC%9Ex%EF%BC%9C/script%EF%BC%9E",
                 id="full-width-xss"),
    pytest.param("/item?id=1%20UNION%20SELECT%20pass%20FROM%20users",
                 "/item?id=1%20%EF%BC%B5%EF%BC%AE%EF%BC%A9%EF%BC%AF%EF%BC%AE%20%EF%BC%B3%EF%BC%A5%EF%BC%AC%EF%BC%A5"
                 "%EF%BC%A3%EF%BC%B4%20pass%20FROM%20users", id="full-width-sql"),
    pytest.param("/q?s=<a%20href=javascript:x>", "/q?s=<a%20href=%26%23106;avascript%26colon;x>", id="html-entities"),
    pytest.param("/item?id=1%20UNION%20SELECT%20pass%20FROM%20users",
                 "/item?id=1%20/*!50000UNION*/%20/*!50000SELECT*/%20pass%20FROM%20users", id="mysql-versioned-comment"),
    pytest.param("/item?id=1%20UNION%20SELECT%20pass%20FROM%20users", "/item?id=1%0bUNION%0bSELECT%0bpass%0bFROM%0busers",
                 id="vertical-tab-whitespace"),
    pytest.param("/item?id=1%20AND%20SLEEP(5)", "/item?id=1%20AND%20SLEEP/**/(5)", id="sql-comment"),
    pytest.param("/dl?f=/etc/passwd", "/dl?f=/etc/./passwd", id="dot-segment"),
    pytest.param("/dl?f=/etc/passwd", "/dl?f=/etc//passwd", id="double-slash"),
    pytest.param("/ping?h=1;cat%20index.php", "/ping?h=1;c'a't%20index.php", id="shell-quotes"),
    pytest.param("/ping?h=1;cat%20index.php", "/ping?h=1;c%5Ca%22t%22%20index.php", id="shell-backslash-and-double-quotes"),
    pytest.param("/ping?h=1;cat%20index.php", "/ping?h=1;c?t%20index.php", id="shell-glob"),
    pytest.param("/ping?h=1;cat%20index.php", "/ping?h=1;/???/c?t${IFS}index.php", id="shell-glob-path-and-ifs"),
    pytest.param("/ping?h=1|tac%20/etc/passwd", "/ping?h=1|tac%20/e't'c/pa''sswd", id="shell-quoted-file"),
    pytest.param("/ping?h=1|tac%20/etc/passwd", "/ping?h=1|tac%20/e??/p?ss??", id="shell-glob-file"),
    pytest.param("/item?id=1'%20OR%20'1'='1", "/item?id=1%2525u0027%2520OR%2520%2525u00271%2525u0027=%2525u00271",
                 id="double-encoded-percent-u"),
]


@pytest.mark.parametrize(("plain", "evasion"), EVASIONS)
def test_an_evasion_is_detected_at_its_plain_payloads_risk(plain, evasion):
    expected = risk(plain)
    assert expected in ("medium", "high")
    assert risk(evasion) == expected


@pytest.mark.parametrize("target", [
    "/search?q=it%27s+a+%22test%22",  # quotes in a search
    "/files/*.txt",  # a literal asterisk
    "/api/items?sort=name&lt=5&gt=1",  # parameters named like HTML entities without their `;`
    "/docs//guide/./intro.html",
    "/search?q=what+is+a+c%3Ft%3F",  # a question about c?t, no shell metacharacter before it
    "/blog/css-comments?snippet=/*+header+*/",
    "/search?q=%EF%BC%A1%EF%BC%A2%EF%BC%A3",  # full-width letters that are no payload
    "/img/caf%C3%A9.png?w=100",
    "/redirect?to=http://example.org/a//b",
    "/dl?f=/e??/p?ss??",  # a glob in a parameter no shell reads
    "/page;jsessionid=A1B2?q=it%27s+c?t",
])
def test_benign_requests_that_look_alike_give_no_record(target):
    assert risk(target) is None
