"""Issue 32, items 5-6: a rule pack (or its name) must not delete data, fill the machine or stay
installed when it is hostile. Names are slugs checked to stay under LOGWARDEN_HOME/sigma; zips,
links and YAML are read within bounds; a pack is compiled before it replaces the old one.

Inputs that hung or filled the disk before the fix run the real CLI in a child under a deadline and
a file-size / memory limit, so a regression fails the test instead of the machine."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from _hostile import BILLION_LAUGHS, GOOD_RULE, pack_folder, zip_bomb
from _repo import REPO


@pytest.fixture
def home(tmp_path) -> Path:
    """A LOGWARDEN_HOME with a database in it: what `--name ..` used to delete."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "logwarden.db").write_bytes(b"precious")
    return home


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (64 << 20, 64 << 20))  # no file past 64 MiB (/dev/zero copied)
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))  # no 6 GB billion laughs
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an oversized write fails with EFBIG instead of killing


def logwarden(home: Path, *args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    env = {**os.environ, "LOGWARDEN_HOME": str(home)}
    done = subprocess.run([sys.executable, "-m", "logwarden.cli.main", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=REPO, env=env, preexec_fn=_limits)
    done.stderr = " ".join(done.stderr.split())  # messages wrapped at 80 columns read as one line
    return done


def installed(home: Path) -> list[str]:
    folder = home / "sigma"
    return sorted(p.name for p in folder.iterdir() if not p.name.startswith(".")) if folder.is_dir() else []


def intact(home: Path) -> bool:
    return (home / "logwarden.db").read_bytes() == b"precious"


# -- 5. names and paths ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["..", "../..", "../../x", ".", "a/b", "/tmp", ".hidden", "UPPER", "x" * 65, ""])
def test_a_pack_name_is_a_slug_and_nothing_outside_the_packs_folder_is_touched(tmp_path, home, name):
    archive = tmp_path / "pack.zip"
    with __import__("zipfile").ZipFile(archive, "w") as z:
        z.writestr("rules/good.yml", GOOD_RULE)
    done = logwarden(home, "rules", "update", "--from", str(archive), "--name", name)
    assert done.returncode == 2, done.stderr
    assert "pack name" in done.stderr and "Traceback" not in done.stderr
    assert intact(home) and installed(home) == []


@pytest.fixture
def served_pack(tmp_path):
    """A real HTTP server that answers every GET with a good pack's zip."""
    import http.server
    import threading
    import zipfile

    archive = tmp_path / "served.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("rules/good.yml", GOOD_RULE)
    body = archive.read_bytes()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the http.server name
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_a_url_ending_in_dotdot_gets_a_safe_name_and_the_home_survives(home, served_pack):
    done = logwarden(home, "rules", "update", "--from", f"{served_pack}/rules/..", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["installed"] == str(home / "sigma" / "pack")
    assert intact(home) and installed(home) == ["pack"]
    unreachable = logwarden(home, "rules", "update", "--from", "http://127.0.0.1:9/rules/..")
    assert unreachable.returncode == 2 and "cannot download" in unreachable.stderr and intact(home)


def test_a_pack_installs_into_a_folder_of_its_own_with_a_marker(tmp_path, home):
    done = logwarden(home, "rules", "update", "--from", str(pack_folder(tmp_path / "My Pack")), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["installed"] == str(home / "sigma" / "my-pack") and report["loaded"] == 1
    assert (home / "sigma" / "my-pack" / ".logwarden-pack").is_file()
    assert not any(p.name.startswith(".incoming") for p in (home / "sigma").iterdir())


def test_rules_remove_takes_an_installed_pack_away_and_nothing_else(tmp_path, home):
    assert logwarden(home, "rules", "update", "--from", str(pack_folder(tmp_path / "p")), "--name", "p").returncode == 0
    outside = tmp_path / "outside"
    outside.mkdir()
    (home / "sigma" / "linked").symlink_to(outside)  # a link in the packs folder: removed as a link
    for bad in ("..", "../x", "nope"):
        done = logwarden(home, "rules", "remove", bad)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert logwarden(home, "rules", "remove", "linked").returncode == 0 and outside.is_dir()
    done = logwarden(home, "rules", "remove", "p", "--json")
    assert done.returncode == 0 and json.loads(done.stdout)["removed"] == [str(home / "sigma" / "p")]
    assert installed(home) == [] and intact(home)


# -- 6. bounded packs, compiled before they replace the old one --------------------------------------


def test_a_zip_bomb_is_refused_quickly_and_is_not_installed(tmp_path, home):
    bomb = zip_bomb(tmp_path / "bomb.zip")
    assert bomb.stat().st_size < 1 << 20
    done = logwarden(home, "rules", "update", "--from", str(bomb), "--name", "bomb", timeout=120)
    assert done.returncode == 2 and "not installed" in done.stderr, done.stderr
    assert installed(home) == []
    run = logwarden(home, "rules", "--sigma", str(bomb), "--state", "error", "--json", timeout=120)
    assert run.returncode == 0, run.stderr
    assert any("zip bomb" in (r["reason"] or "") for r in json.loads(run.stdout)["rules"])


def test_billion_laughs_is_one_refused_file_and_the_rest_of_the_pack_loads(tmp_path, home):
    pack = pack_folder(tmp_path / "laughs", ("laughs.yml", BILLION_LAUGHS))
    done = logwarden(home, "rules", "update", "--from", str(pack), "--json", timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["loaded"] == 1
    listed = logwarden(home, "rules", "--state", "error", "--json", timeout=120)
    assert any("billion laughs" in (r["reason"] or "") for r in json.loads(listed.stdout)["rules"])


def test_links_to_dev_zero_out_of_the_pack_and_loops_are_skipped_not_copied(tmp_path, home):
    pack = pack_folder(tmp_path / "links")
    (pack / "zero.yml").symlink_to("/dev/zero")
    (pack / "passwd.yml").symlink_to("/etc/passwd")
    (pack / "loop").symlink_to(pack)
    (pack / "inside.yml").symlink_to(pack / "good.yml")  # a link that stays inside is fine
    done = logwarden(home, "rules", "update", "--from", str(pack), "--json", timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert {Path(r["file"]).name for r in report["refused"]} == {"zero.yml", "passwd.yml"}
    copied = sorted(p.relative_to(home / "sigma" / "links").as_posix() for p in (home / "sigma" / "links").rglob("*"))
    assert copied == [".logwarden-pack", "good.yml", "inside.yml"]


def test_a_file_that_is_no_rule_does_not_break_the_rules_listing(tmp_path, home):
    pack = pack_folder(tmp_path / "odd", ("foo.yml", "foo: bar\n"), ("list.yml", "- 1\n- 2\n"),
                       ("types.yml", "title: [1]\ndescription: 5\nlogsource: 3\ndetection: x\n"))
    assert logwarden(home, "rules", "update", "--from", str(pack)).returncode == 0
    listed = logwarden(home, "rules", "--search", "o")
    assert listed.returncode == 0 and "Traceback" not in listed.stderr, listed.stderr


def test_a_pack_that_fails_to_compile_does_not_replace_the_installed_one(tmp_path, home):
    assert logwarden(home, "rules", "update", "--from", str(pack_folder(tmp_path / "p")), "--name", "p").returncode == 0
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "x.yml").write_text("title: x\ndetection: [unclosed\n")
    done = logwarden(home, "rules", "update", "--from", str(broken), "--name", "p")
    assert done.returncode == 2 and "not installed" in done.stderr
    assert (home / "sigma" / "p" / "good.yml").read_text() == GOOD_RULE


def test_a_hostile_pack_already_in_the_home_does_not_stop_later_runs(tmp_path, home):
    """Copied in by hand (or by an older logwarden): analyze still runs, with the pack's error reported."""
    (home / "sigma").mkdir()
    zip_bomb(home / "sigma" / "bomb.zip")
    pack = pack_folder(home / "sigma" / "laughs", ("laughs.yml", BILLION_LAUGHS))
    (pack / "zero.yml").symlink_to("/dev/zero")
    log = tmp_path / "auth.log"
    log.write_text("".join(f"Mar  1 10:00:{i:02d} h sshd[1]: Failed password for root from 203.0.113.9 port 1 ssh2\n"
                           for i in range(30)))
    done = logwarden(home, "analyze", str(log), "--rules-only", "--final", "--json", "--db",
                     f"sqlite:///{tmp_path / 'lw.db'}", timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["metrics"]["records"] >= 1
    errors = json.loads(logwarden(home, "rules", "--state", "error", "--json").stdout)["rules"]
    reasons = {Path(r["source"]).name: r["reason"] for r in errors}
    assert "billion laughs" in reasons["laughs.yml"] and "zip bomb" in reasons["bomb.yml"]  # refused, not run out of memory
