"""Issue 43, item 9: lines that are all unique made a template each, and each line was compared with
every template of its tree leaf (300k unique lines ran at ~800 lines/s against 16.6k for sshd
lines). A source mines at most `max_templates` templates (LOGWARDEN_MAX_TEMPLATES); beyond them a
line no template matches is kept as a line. Every line is still in a window."""

from __future__ import annotations

import random
import string

from _hostile import accounted, brute_force, write_lines

from logwarden.app.mine import SourceMiner
from logwarden.app.pipeline import Pipeline
from logwarden.app.run_options import RunOptions
from logwarden.app.store import open_store


def unique_lines(n: int) -> list[str]:
    rng = random.Random(43)

    def word() -> str:
        return "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(4, 9)))

    return [f"Mar  1 10:{5 + i // 600:02d}:{i // 10 % 60:02d} web01 app[42]: {' '.join(word() for _ in range(6))}"
            for i in range(n)]


def test_unique_lines_stop_making_templates_at_the_bound_and_every_line_is_in_a_window(tmp_path):
    later = [line.replace("10:00:", "10:20:") for line in brute_force(30, ip="198.51.100.77")]
    path = write_lines(tmp_path / "flood.log", brute_force(30) + unique_lines(3000) + later)
    db = tmp_path / "lw.db"
    store = open_store(f"sqlite:///{db}")
    pipeline = Pipeline(store, None, RunOptions(rules_only=True, final=True, max_templates=50))
    metrics = pipeline.analyze([path])
    assert metrics.lines == 3060 and metrics.errors == 0
    assert accounted(db, str(path)) == (3060, 0)
    state = store.get_source(str(path), path.stat().st_ino).miner_state
    assert SourceMiner(state.encode(), max_templates=50).cluster_count <= 50
    ips = {ip for r in store.query_records(limit=100) if r.category == "brute_force" for ip in r.indicators.ips}
    assert {"203.0.113.9", "198.51.100.77"} <= ips  # the bursts before and after the flood are both found
    store.close()


def test_a_line_beyond_the_bound_is_its_own_template_and_a_known_message_still_joins_its_own():
    miner = SourceMiner(max_templates=2)
    first = miner.add("sshd: Failed password for root from 10.0.0.1 port 22 ssh2")
    miner.add("app: alpha beta gamma")
    assert miner.cluster_count == 2
    assert miner.add("sshd: Failed password for admin from 10.0.0.2 port 23 ssh2") == first
    rare = miner.add("app: delta epsilon zeta eta")
    assert rare < 0 and miner.cluster_count == 2
    assert miner.template(rare) == "app: delta epsilon zeta eta" and miner.cluster_size(rare) == 1
    assert miner.add("app: delta epsilon zeta eta") == rare and miner.cluster_size(rare) == 2
