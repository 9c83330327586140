#!/usr/bin/env python3
"""Write a large, realistic mixed log set for benchmarks: auth, web access, syslog and JSON events.

Owns: splitting a line budget over five streams (auth.log, access.log, syslog, windows.jsonl,
cloudtrail.jsonl), dense benign noise with attack bursts sprinkled in at a low rate, exactly
`--lines` lines in total, and a `labels.jsonl` in the sample logs' format (every line in one unit).
Reuses the formats, noise makers and attack scenarios of `scripts/gen_sample_logs.py`, so the
benchmark reads the same shapes as the samples. Deterministic for a seed and a line count.
The web site's visitors are the one difference: the samples' 45 visitors sit in nine /24 networks,
and the baselines count a client by its network, so no site would ever warm up and the "with
baselines" figure would measure no judging. Here they are spread over `--web-networks` networks.

Does not know about: logwarden itself, or what a benchmark measures on these files.

Usage: python bench/gen_mixed_log.py --lines 1000000 --out /tmp/mixed [--seed 1] [--attack-every 20000]
       [--web-networks 300]
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

ROOT = Path(__file__).resolve().parent.parent


def _load_sample_generator():
    """scripts/ is not a package: load the sample generator from its path (once per process)."""
    if "gen_sample_logs" not in sys.modules:
        spec = importlib.util.spec_from_file_location("gen_sample_logs", ROOT / "scripts" / "gen_sample_logs.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["gen_sample_logs"] = module  # dataclasses look their module up here
        spec.loader.exec_module(module)
    return sys.modules["gen_sample_logs"]


gen = _load_sample_generator()
DENSE_GAP = (0.05, 1.5)  # seconds between benign events: a busy host, about a day per 100k events
ATTACK_ROOM = 400  # an attack is only started with at least this many lines of budget left
WEB_NETWORKS = 300  # /24 networks the web visitors come from (0: the samples' own 45 visitors)
VISITORS_PER_NETWORK = 2
# private and CGNAT space only: the scenarios' attackers (documentation ranges) never share a visitor's network
VISITOR_SPACE = ("10.{a}.{b}", "172.{c}.{b}", "100.{d}.{b}")


@dataclass(frozen=True)
class Stream:
    name: str
    share: float
    host: str
    noise: "gen.Noise"
    scenarios: tuple["gen.Scenario", ...]
    benign_note: str


def _scenarios(table: dict, *, without: Sequence[str] = ()) -> tuple:
    return tuple(scenario for name, scenario in table.items() if name not in without)


STREAMS = (
    Stream("auth.log", 0.30, "web01", gen.AUTH_NOISE, _scenarios(gen.AUTH_SCENARIOS),
           "sshd publickey logins, cron, sudo, su"),
    Stream("access.log", 0.40, "web01", gen.ACCESS_NOISE,
           _scenarios(gen.ACCESS_SCENARIOS) + _scenarios(gen.ROTATED_SCENARIOS), "web traffic"),
    Stream("syslog", 0.18, "web01", gen.SYSLOG_NOISE,
           _scenarios(gen.SYSLOG_SCENARIOS, without=("kernel_panic", "reboot_after_panic")), "daemons and timers"),
    Stream("windows.jsonl", 0.06, "", gen.WINDOWS_NOISE, _scenarios(gen.WINDOWS_SCENARIOS),
           "domain logons, Kerberos, ordinary processes"),
    Stream("cloudtrail.jsonl", 0.06, "", gen.CLOUDTRAIL_NOISE,
           _scenarios(gen.CLOUDTRAIL_SCENARIOS, without=("start_logging_again",)), "read-only API calls"),
)


def budgets(total: int) -> list[int]:
    """Lines per stream; the rounding remainder goes to the largest stream."""
    shares = [int(total * stream.share) for stream in STREAMS]
    shares[1] += total - sum(shares)
    return shares


def web_visitors(ctx: "gen.Ctx", networks: int) -> list[tuple[str, str]]:
    """`networks` distinct /24 networks, a few visitors (address, user agent) in each."""
    prefixes: dict[str, None] = {}
    while len(prefixes) < networks:
        space = ctx.pick(VISITOR_SPACE)
        prefixes[space.format(a=ctx.rng.randint(0, 255), b=ctx.rng.randint(0, 255), c=ctx.rng.randint(16, 31),
                              d=ctx.rng.randint(64, 127))] = None
    return [(f"{prefix}.{gen.benign_octet(ctx)}", ctx.pick(gen.UAS))
            for prefix in prefixes for _ in range(VISITORS_PER_NETWORK)]


def build_stream(stream: Stream, lines: int, seed: int, attack_every: int,
                 web_networks: int = WEB_NETWORKS) -> "gen.LogFile":
    ctx = gen.Ctx(seed, f"bench:{stream.name}", start=gen.DAY, host=stream.host)
    if web_networks and stream.noise is gen.ACCESS_NOISE:
        ctx.clients = web_visitors(ctx, web_networks)  # the pool `gen.web_clients` would otherwise make
    noise, note = gen.Noise(stream.noise.makers, gap=DENSE_GAP), gen.benign(stream.benign_note)
    log = gen.LogFile(stream.name)
    while lines - len(log.lines) > ATTACK_ROOM:
        stretch = ctx.rng.randint(attack_every // 2, attack_every * 3 // 2)
        log.add(gen.fill(ctx, noise, lines=min(stretch, lines - len(log.lines) - ATTACK_ROOM)), note)
        scenario = ctx.pick(stream.scenarios)
        log.add(scenario.make(ctx), scenario.verdict)
    log.add(gen.fill(ctx, noise, lines=lines - len(log.lines)) + ctx.drain(), note)
    return trim(log, lines)


def trim(log: "gen.LogFile", lines: int) -> "gen.LogFile":
    """Cut the closing benign stretch so the stream holds exactly its budget."""
    last = log.units[-1]
    assert last["category"] == "benign" and last["line_start"] <= lines
    del log.lines[lines:]
    last["line_end"] = lines
    return log


def generate(out_dir: Path, *, lines: int, seed: int = 1, attack_every: int = 20_000,
             web_networks: int = WEB_NETWORKS) -> list[Path]:
    """Write the streams and labels.jsonl into `out_dir`; return their paths (labels last)."""
    if lines < len(STREAMS) * ATTACK_ROOM:
        raise SystemExit(f"--lines must be at least {len(STREAMS) * ATTACK_ROOM}")
    out_dir.mkdir(parents=True, exist_ok=True)
    paths, units = [], []
    for stream, budget in zip(STREAMS, budgets(lines)):
        log = build_stream(stream, budget, seed, attack_every, web_networks)
        path = out_dir / stream.name
        path.write_text(log.text(), encoding="utf-8")
        paths.append(path)
        units.append(log)  # only the labels are kept; each stream's lines are freed here
        log.lines = []
    gen.write_labels(out_dir / "labels.jsonl", units)
    return paths + [out_dir / "labels.jsonl"]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=1_000_000, help="total lines over all files")
    parser.add_argument("--out", type=Path, required=True, help="folder to write into")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--attack-every", type=int, default=20_000, help="mean benign lines between attacks per file")
    parser.add_argument("--web-networks", type=int, default=WEB_NETWORKS,
                        help="/24 networks the web visitors come from (0: the sample generator's 45 visitors)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    paths = generate(args.out, lines=args.lines, seed=args.seed, attack_every=args.attack_every,
                     web_networks=args.web_networks)
    print(f"wrote {args.lines} lines in {len(paths) - 1} files + labels.jsonl to {args.out} "
          f"in {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
