"""The one model-usage counter (engine/api.py `ModelUsage`) and a run's metrics built on it
(app/metrics.py): the review's and the stories' usage are added whole, and a run's row keeps the
same flat keys the runs page, the CLI and the device scripts read."""

from __future__ import annotations

from pathlib import Path

import pytest
from _fake_engine import NOTHING, FakeEngine
from _incident_helpers import ATTACKER, burst, write

from logwarden.app.incidents.story import StoryStats
from logwarden.app.metrics import RunMetrics
from logwarden.app.pipeline import Pipeline
from logwarden.app.review import ReviewStats
from logwarden.app.run_options import RunOptions
from logwarden.app.store import open_store
from logwarden.engine.api import Generation, GenStats, ModelUsage

# the keys a run's row has always kept (ui/views/runs.py, cli/summary.py, scripts/device_score.py read them)
ROW_KEYS = {"files", "lines", "windows", "windows_llm", "llm_calls", "llm_failures", "records", "errors",
            "elapsed_s", "prompt_tokens", "cached_prefix_tokens", "new_tokens", "ttft_s_sum", "generation_s",
            "peak_memory_mb", "tokens_per_s", "mean_ttft_s", "llm_calls_per_1000_lines", "compression_ratio",
            "lines_per_s", "stories", "deviations", "deviations_dismissed", "windows_split", "rare_lines_llm",
            "rare_lines_shown", "rare_line_coverage", "entities_named", "entities_ungrounded", "ungrounded_rate"}


def stats(prompt=100, cached=60, new=20, ttft=0.5, total=2.0, batch=1, peak=300.0) -> GenStats:
    return GenStats(prompt_tokens=prompt, cached_prefix_tokens=cached, new_tokens=new, ttft_s=ttft, total_s=total,
                    batch_size=batch, peak_memory_mb=peak)


def test_a_generation_counts_its_share_of_its_batchs_time_unless_told_its_seconds():
    usage = ModelUsage()
    usage.add(stats(total=4.0, batch=4))
    usage.add(stats(total=9.0), seconds=1.5)
    assert (usage.calls, usage.prompt_tokens, usage.cached_prefix_tokens, usage.new_tokens) == (2, 200, 120, 40)
    assert usage.generation_s == pytest.approx(1.0 + 1.5) and usage.ttft_s_sum == pytest.approx(1.0)
    assert usage.tokens == 240


def test_adding_counters_sums_them_and_keeps_the_larger_peak():
    review, stories = ModelUsage(), ModelUsage()
    review.add(stats(peak=300.0))
    stories.add(stats(prompt=50, cached=0, new=10, ttft=0.25, total=1.0, peak=900.0))
    total = ModelUsage()
    total += review
    total += stories
    assert (total.calls, total.prompt_tokens, total.new_tokens, total.tokens) == (2, 150, 30, 180)
    assert total.ttft_s_sum == pytest.approx(0.75) and total.generation_s == pytest.approx(3.0)
    assert total.peak_memory_mb == 900.0
    review += stories
    assert review == total  # `+=` changes the counter itself


def test_a_run_adds_the_reviews_and_the_stories_usage_into_its_flat_row():
    review, story = ReviewStats(asked=3), StoryStats(written=1)
    for _ in range(2):
        review.usage.add(stats(peak=300.0))
    story.usage.add(stats(prompt=40, cached=0, new=60, ttft=1.0, total=3.0, peak=800.0))
    metrics = RunMetrics(lines=1000)
    metrics.add_review(review, pending=0)
    metrics.add_stories(story)
    row = metrics.as_dict()
    assert ROW_KEYS <= row.keys() and "usage" not in row
    assert (row["llm_calls"], row["llm_generations"], row["prompt_tokens"], row["new_tokens"]) == (3, 3, 240, 100)
    assert row["cached_prefix_tokens"] == 120 and row["peak_memory_mb"] == 800.0  # the story's peak counts too
    assert row["generation_s"] == pytest.approx(7.0) and row["tokens_per_s"] == pytest.approx(100 / 7.0)
    assert row["mean_ttft_s"] == pytest.approx(2.0 / 3)  # over the generations that had one
    assert metrics.spent == (pytest.approx(7.0), 340)


def test_a_story_writers_report_is_flat_and_keeps_its_reason_counts():
    story = StoryStats(written=2)
    story.texts_rejected.update({"ungrounded": 2})
    story.usage.add(stats())
    report = story.as_dict()
    assert report["written"] == 2 and report["texts_rejected"] == {"ungrounded": 2}
    assert (report["calls"], report["prompt_tokens"], report["new_tokens"]) == (1, 100, 20)


def test_a_runs_stored_row_counts_the_review_and_the_story_generations(tmp_path: Path):
    """A real pipeline over sshd bursts into SQLite: the review's prompts and the incident's story
    both reach the runs row (before: the stories' TTFT and peak memory were dropped)."""
    write(tmp_path / "logs" / "auth.log", burst("web01", 10, 0, ATTACKER) + burst("web01", 10, 20, ATTACKER,
                                                                                 pid=2000, accepted=True))

    def reply(request):
        cited = (request.schema or {}).get("properties", {}).get("cited")
        if not cited:  # a review prompt
            return Generation(NOTHING, stats(prompt=400, cached=300, new=12, ttft=0.5, total=2.0, peak=500.0),
                              finished=True)
        ids = cited["items"]["enum"]
        story = ('{"title":"SSH brute force on web01","summary":"Address %s guessed root\'s password on web01.",'
                 '"stages":["credential_access"],"next_steps":["Block %s at the edge."],"cited":["%s"]}'
                 % (ATTACKER, ATTACKER, ids[0]))
        return Generation(story, stats(prompt=200, cached=0, new=80, ttft=0.8, total=3.0, peak=2000.0), finished=True)

    store = open_store(f"sqlite:///{tmp_path / 'lw.db'}")
    engine = FakeEngine(reply)
    metrics = Pipeline(store, engine, RunOptions(llm_policy="signals")).analyze([tmp_path / "logs"])
    reviews = sum(1 for r in engine.requests if not (r.schema or {}).get("properties", {}).get("cited"))
    assert reviews >= 1 and metrics.stories == 1 and metrics.llm_calls == reviews
    row = store.list_runs()[0].metrics
    assert ROW_KEYS <= row.keys()
    assert row["llm_generations"] == reviews + 1
    assert row["prompt_tokens"] == 400 * reviews + 200 and row["new_tokens"] == 12 * reviews + 80
    assert row["cached_prefix_tokens"] == 300 * reviews
    assert row["ttft_s_sum"] == pytest.approx(0.5 * reviews + 0.8) and row["peak_memory_mb"] == 2000.0
    assert row["mean_ttft_s"] == pytest.approx(row["ttft_s_sum"] / (reviews + 1))
