"""Issue 39: the sniffer reads every real log it is given and skips only sure prose.

The corpus lines are short synthetic lines in the shapes of public log collections (loghub's BGL,
Thunderbird, HPC, HDFS, OpenStack, Zookeeper; Postfix/Dovecot mail; Cisco IOS/ASA and Juniper
network devices; Ceph and ZFS storage), written here, not copied from any file.
"""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from logwarden.app.parse import NOT_LOGS, detect_format
from logwarden.app.parse.timestamps import YearGuesser, find_timestamp

REF = datetime(2026, 6, 1)

CORPUS = {
    "bgl_ras": [  # Blue Gene/L RAS: '-' or an alert tag, epoch, dotted date, node, DB2 time
        "- 1117838570 2005.06.03 R02-M1-N0-C:J12-U11 2005-06-03-15.42.50.675872 R02-M1-N0-C:J12-U11 "
        "RAS KERNEL INFO instruction cache parity error corrected",
        "- 1117838573 2005.06.03 R02-M1-N0-C:J12-U11 2005-06-03-15.42.53.276129 R02-M1-N0-C:J12-U11 "
        "RAS KERNEL INFO 1 ddr errors(s) detected and corrected on rank 0, symbol 4 bit 6",
        "APPREAD 1117869872 2005.06.04 R33-M0-N9-C:J12-U11 2005-06-04-00.24.32.432192 "
        "R33-M0-N9-C:J12-U11 RAS APP FATAL ciod: failed to read message prefix on control stream",
        "KERNDTLB 1118536327 2005.06.11 R30-M0-N9-C:J16-U01 2005-06-11-17.32.07.581048 "
        "R30-M0-N9-C:J16-U01 RAS KERNEL FATAL data TLB error interrupt",
    ],
    "thunderbird": [  # '-', epoch, dotted date, node, then a whole syslog line
        "- 1131566461 2005.11.09 dn228 Nov 9 12:01:01 dn228/dn228 crond(pam_unix)[2915]: session closed for user root",
        "- 1131566470 2005.11.09 tbird-admin1 Nov 9 12:01:10 local@tbird-admin1 postfix/postdrop[10896]: "
        "warning: unable to look up public/pickup: No such file or directory",
        "VAPI 1131567232 2005.11.09 tbird-admin1 Nov 9 12:13:52 local@tbird-admin1 kernel: [KERNEL_IB][ib_mad_dispatch]"
        " bad mad",
    ],
    "hpc": [  # LANL HPC: id, node, component, state, epoch column, flag, text
        "134681 node-246 unix.hw state_change.unavailable 1077804742 1 Component State Change: Component "
        "is in the unavailable state (HWID=1973)",
        "2620 node-226 action start 1074120289 1 clusterAddMember  (command 1902)",
        "460 node-112 boot_cmd new 1076192311 1 Targeting domains:node-D1 and nodes:node-[40-63] child of command 486",
    ],
    "hdfs": [
        "081109 203615 148 INFO dfs.DataNode$PacketResponder: PacketResponder 1 for block blk_38865049064139660 "
        "terminating",
        "081109 203807 222 INFO dfs.DataNode$PacketResponder: Received block blk_-6952295868487656571 of size "
        "67108864 from /10.251.39.179",
    ],
    "ceph": [
        "2019-03-12 08:20:11.562 7f3c9a5fe700  0 log_channel(cluster) log [DBG] : pgmap v1042: 128 pgs: 128 "
        "active+clean",
        "2019-03-12 08:20:13.001 7f3c9a5fe700 -1 osd.3 1203 heartbeat_check: no reply from 10.0.0.12:6804 osd.7",
    ],
    "zfs_zed": [
        "1700000000 zed[1203]: eid=42 class=checksum pool='tank' vdev=sdb1 size=8192 offset=1048576",
        "1700000061 zed[1203]: eid=43 class=io pool='tank' vdev=sdb1",
    ],
    "mail": [
        "Jun  3 10:01:02 mx1 postfix/smtpd[4121]: connect from unknown[203.0.113.9]",
        "Jun  3 10:01:03 mx1 postfix/smtpd[4121]: warning: unknown[203.0.113.9]: SASL LOGIN authentication "
        "failed: authentication failure",
        "Jun  3 10:01:07 mx1 dovecot: imap-login: Disconnected (auth failed, 3 attempts in 12 secs): user=<bob>, "
        "rip=203.0.113.9, lip=192.0.2.1",
    ],
    "cisco_ios": [  # a device's own buffer, no syslog header
        "*Mar  1 00:01:23.456: %LINK-3-UPDOWN: Interface GigabitEthernet0/1, changed state to up",
        "*Mar  1 00:02:10.001: %SEC_LOGIN-4-LOGIN_FAILED: Login failed [user: admin] [Source: 198.51.100.7] "
        "[localport: 22] [Reason: Login Authentication Failed] at 00:02:10 UTC Mon Mar 1 1993",
    ],
    "cisco_asa": [
        "Jun 12 2024 10:00:00 fw01 : %ASA-6-302013: Built inbound TCP connection 1234 for outside:198.51.100.7/51515 "
        "(198.51.100.7/51515) to inside:10.0.0.5/22 (10.0.0.5/22)",
        "Jun 12 2024 10:00:04 fw01 : %ASA-4-106023: Deny tcp src outside:198.51.100.7/51516 dst inside:10.0.0.5/3389 "
        "by access-group \"outside_in\"",
    ],
    "juniper": [
        "2024-06-12 10:00:00 srx1 RT_FLOW: RT_FLOW_SESSION_DENY: session denied 198.51.100.7/51516->10.0.0.5/3389 "
        "junos-rdp 6(0) default-deny(global)",
    ],
}

READMES = {
    "dataset_readme": [
        "## BGL",
        "",
        "BGL is an open dataset of logs collected from a BlueGene/L supercomputer system at Lawrence Livermore "
        "National Labs, with 131,072 processors and 32,768 GB memory.",
        "",
        "The log contains alert and non-alert messages identified by alert category tags.",
        "- In the first column of the log, \"-\" indicates non-alert messages while others are alert messages.",
        "- The label information is amenable to alert detection and prediction research.",
        "",
        "### Download",
        "The raw logs are available for download at the link below.",
        "| Dataset | Lines | Size |",
        "|---|---|---|",
        "| BGL | 4,747,963 | 708.76 MB |",
    ],
    "project_readme": [
        "# mytool",
        "",
        "A small tool that reads files and prints what it finds in them, one line per finding.",
        "",
        "## Install",
        "```",
        "pip install mytool",
        "```",
        "## Usage",
        "1. Point it at a folder.",
        "2. Read the summary at the end of the output.",
        "> It never changes the files it reads.",
    ],
}


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_real_log_shapes_are_read_not_skipped(name):
    lines = CORPUS[name] * 10
    decision = detect_format(lines, f"/var/log/{name}.log")
    assert decision.name not in NOT_LOGS, decision.reason


@pytest.mark.parametrize("name", ["bgl_ras", "thunderbird", "hpc", "zfs_zed"])
def test_machine_log_lines_have_a_timestamp(name):
    years = YearGuesser(REF)
    assert all(find_timestamp(line, years) is not None for line in CORPUS[name])


def test_bgl_takes_its_microsecond_time_and_hpc_its_epoch_column():
    years = YearGuesser(REF)
    assert find_timestamp(CORPUS["bgl_ras"][0], years) == datetime(2005, 6, 3, 15, 42, 50, 675872)
    assert find_timestamp(CORPUS["hpc"][0], years) == datetime.fromtimestamp(1077804742, tz=timezone.utc)


@pytest.mark.parametrize("text", ["user 1117838570x logged", "order 11178385701 shipped", "ref=1117838570 ok",
                                  "path /srv/1117838570/x"])
def test_a_ten_digit_number_inside_a_word_or_value_is_no_time(text):
    assert find_timestamp(text, YearGuesser(REF)) is None


def test_a_date_alone_in_a_column_is_its_midnight():
    assert find_timestamp("SRV 2005.06.03 up", YearGuesser(REF)) == datetime(2005, 6, 3)


@pytest.mark.parametrize("name", sorted(READMES))
def test_readmes_and_markdown_are_still_skipped(name):
    decision = detect_format(READMES[name], f"/data/{name}/README.md")
    assert decision.name == "prose", decision.reason


def test_one_log_line_in_prose_makes_the_file_read():
    lines = [*READMES["dataset_readme"], CORPUS["bgl_ras"][0]]
    assert detect_format(lines, "/data/x/notes.md").name not in NOT_LOGS


def test_a_named_file_that_is_skipped_is_warned_about_counted_and_listed(tmp_path, caplog):
    import json

    from click.testing import CliRunner

    from logwarden.cli.main import main as cli

    readme, ras = tmp_path / "README.md", tmp_path / "ras.log"
    readme.write_text("\n".join(READMES["project_readme"]) + "\n")
    ras.write_text("\n".join(CORPUS["bgl_ras"] * 5) + "\n")
    done = CliRunner().invoke(cli, ["analyze", str(readme), str(ras), "--rules-only", "--json", "--final",
                                    "--db", f"sqlite:///{tmp_path / 'lw.db'}"])
    assert done.exit_code == 0, done.output
    assert f"{readme}: named on the command line but not read" in caplog.text  # a warning, as it happens
    report = json.loads(done.stdout[done.stdout.index("{"):])
    assert list(report["metrics"]["skipped"]) == [str(readme)]
    assert report["metrics"]["lines"] == 20 and str(ras) in report["metrics"]["formats"]
