"""Windows of several files share engine batches (small files do not go to the model alone), and
the offsets that wait for such a batch are committed only with their windows: a crash before the
batch is answered commits neither, and a resume afterwards loses and doubles nothing. The engine
is a stand-in (the code under test is the pipeline's batching and commits)."""

from pathlib import Path

import pytest
from _log_fixtures import write_logs

from logwarden.app.pipeline import Pipeline, RunOptions
from logwarden.app.store import RecordFilter, open_store
from logwarden.engine.api import Generation, GenStats

NOTHING = '{"findings":[],"recommendation":"No action needed."}'


class Crash(BaseException):
    """What a kill looks like to the pipeline: nothing after it runs (not an engine fault it handles)."""


class CountingEngine:
    model_name = "counting"
    adapter_name = None

    def __init__(self, crash_on_call: int | None = None):
        self.calls: list[list[str]] = []  # the prompts of each generate() call
        self.crash_on_call = crash_on_call

    def generate(self, requests, *, schema=None, max_new_tokens=256, sampling=None):
        if self.crash_on_call is not None and len(self.calls) == self.crash_on_call:
            raise Crash()
        self.calls.append([r.user for r in requests])
        return [Generation(text=NOTHING, stats=GenStats(prompt_tokens=50, new_tokens=10, batch_size=len(requests)),
                           finished=True) for _ in requests]

    def count_tokens(self, text):
        return len(text) // 4

    def describe(self):
        return {"model": "counting"}


@pytest.fixture()
def logs(tmp_path: Path) -> tuple[Path, dict[str, int]]:
    folder = tmp_path / "logs"
    counts = write_logs(folder)
    (folder / "broken.log.gz").unlink()  # its error row is not what these tests are about
    return folder, counts


def run(store, engine, folder, **options):
    return Pipeline(store, engine, RunOptions(llm_policy="all", **options)).analyze([folder])


def test_windows_of_several_files_go_to_the_engine_in_one_batch(logs, tmp_path):
    folder, counts = logs
    store = open_store(f"sqlite:///{tmp_path / 'lw.db'}")
    engine = CountingEngine()
    metrics = run(store, engine, folder, max_batch=64)
    assert len(counts) >= 2 and metrics.windows >= len(counts)
    assert len(engine.calls) == 1  # every file's prompts in the same call, not one call per file
    assert {name for name in counts if any(f"{name} (" in p for p in engine.calls[0])} == set(counts)
    for name, n in counts.items():
        state = store.get_source(str(folder / name), (folder / name).stat().st_ino)
        assert state is not None and state.line_no == n, name  # the offset after the last line
        assert sum(w.line_count for w in store.list_windows(source=str(folder / name))) == n, name


def test_a_full_batch_is_sent_without_waiting_for_the_end(logs, tmp_path):
    folder, counts = logs
    engine = CountingEngine()
    metrics = run(open_store(f"sqlite:///{tmp_path / 'lw.db'}"), engine, folder, max_batch=1)
    assert len(engine.calls) == metrics.llm_calls  # max_batch still bounds every call
    assert all(len(call) == 1 for call in engine.calls)


def test_a_crash_before_the_batch_commits_no_offset_and_resume_doubles_nothing(logs, tmp_path):
    folder, counts = logs
    db = f"sqlite:///{tmp_path / 'lw.db'}"
    with pytest.raises(Crash):
        run(open_store(db), CountingEngine(crash_on_call=0), folder, max_batch=64)
    store = open_store(db)
    for name in counts:  # every file's windows were waiting for the model: no offset, no window
        assert store.get_source(str(folder / name), (folder / name).stat().st_ino) is None, name
        assert store.list_windows(source=str(folder / name)) == [], name
    run(store, CountingEngine(), folder, max_batch=64, resume=True)
    run(store, CountingEngine(), folder, max_batch=64, resume=True)  # a second resume reads nothing new
    for name, n in counts.items():
        windows = store.list_windows(source=str(folder / name))
        assert sum(w.line_count for w in windows) == n, name  # every line once: nothing lost or doubled
    ids = [r.id for r in store.query_records(RecordFilter(), limit=1000)]
    assert len(ids) == len(set(ids))


def test_every_answered_batch_is_committed_so_a_crash_loses_only_the_batch_in_flight(logs, tmp_path):
    folder, counts = logs
    auth = folder / "auth.log"  # one file cut into many windows: the crash comes before its end
    db = f"sqlite:///{tmp_path / 'lw.db'}"
    with pytest.raises(Crash):
        Pipeline(open_store(db), CountingEngine(crash_on_call=2),
                 RunOptions(llm_policy="all", max_batch=1, window_max_lines=5)).analyze([auth])
    store = open_store(db)
    assert len(store.list_windows(source=str(auth))) == 2  # the two answered calls' windows were kept
    # ... and the file's position after them, in the same transactions (a resume goes on from there)
    assert store.get_source(str(auth), auth.stat().st_ino).line_no == 10
    Pipeline(store, CountingEngine(), RunOptions(llm_policy="all", max_batch=1, window_max_lines=5, resume=True)).analyze([auth])
    assert sum(w.line_count for w in store.list_windows(source=str(auth))) == counts["auth.log"]


def test_a_model_run_reports_its_compression_ratio(logs, tmp_path):
    folder, _ = logs
    store = open_store(f"sqlite:///{tmp_path / 'lw.db'}")
    metrics = run(store, CountingEngine(), folder)
    assert metrics.prompt_tokens and metrics.compression_ratio == metrics.raw_tokens / metrics.prompt_tokens
    assert metrics.rare_lines > 0
