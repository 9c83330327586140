"""The pending review (`logwarden review --pending`): the model reviews, within a new budget, what
earlier runs' budgets left awaiting review, most suspicious first; the incidents around what it
reviewed are regrouped and their stories written.

Owns: that run, from the store's waiting prompts to what is left waiting. The queue, its order and
the budget are app/review.py's; the run's bookkeeping is the pipeline's. Knows nothing of terminals.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from logwarden.app import backends
from logwarden.app.config import Settings
from logwarden.app.pipeline import Pipeline, RunMetrics
from logwarden.app.review import ReviewItem
from logwarden.app.run_options import RunOptions
from logwarden.app.store import Store


@dataclass(frozen=True, slots=True)
class PendingReview:
    waiting: int  # prompts awaiting review before the run
    left: int  # and after it
    metrics: RunMetrics | None = None  # None: nothing waited, no model was loaded

    @property
    def reviewed(self) -> int:
        return self.waiting - self.left


def review_pending(store: Store, engine_options: backends.EngineOptions, settings: Settings, *, llm_budget: str | None = None,
                   on_loading: Callable[[int], None] = lambda waiting: None) -> PendingReview:
    """Review every waiting prompt the budget allows. The model is loaded only when something waits
    (`on_loading` is told how many first: loading takes a while)."""
    waiting = store.count_reviews()
    if not waiting:
        return PendingReview(waiting=0, left=0)
    options = RunOptions.from_settings(settings, max_batch=engine_options.max_batch, llm_budget=llm_budget)
    on_loading(waiting)
    engine = backends.open_engine(engine_options)  # looked up when called, as the commands do: a test may stand in
    pipeline = Pipeline(store, engine, options, command="review --pending")
    pipeline.review([ReviewItem.from_json(item) for item in store.pending_reviews()])
    pipeline.group()  # the incidents around the reviewed records, and their stories
    metrics = pipeline.finish()
    return PendingReview(waiting=waiting, left=store.count_reviews(), metrics=metrics)
