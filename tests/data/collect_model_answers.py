"""Collect what the embedded model really answers, for the text gate's tests (`model_answers.jsonl`).

Runs `logwarden analyze` in this process with the model, and records every review answer (the digest
the model was shown, the ids it stood for, the raw text) and every incident story answer (its
records' digest, the member ids, the raw text), one JSON object a line, appended to OUT.

    python tests/data/collect_model_answers.py OUT -- PATH... [analyze options]

Not a test: it takes minutes on a CPU. The corpus it wrote is committed; rerun it only to refresh it.
"""

from __future__ import annotations

import json
import sys

from logwarden.app import review
from logwarden.app.incidents import story
from logwarden.cli.main import main


def _recording(out):
    result_of, check_story = review.result_of, story.check_story

    def recorded_result(generation, *, digest="", lines_of=None):
        _write(out, {"kind": "review", "digest": digest, "lines_of": lines_of or {}, "text": generation.text,
                     "finished": generation.finished, "error": generation.error})
        return result_of(generation, digest=digest, lines_of=lines_of)

    def recorded_story(incident, answer_text, digest, stats):
        _write(out, {"kind": "story", "digest": digest, "record_ids": incident.record_ids, "text": answer_text})
        return check_story(incident, answer_text, digest, stats)

    review.result_of, story.check_story = recorded_result, recorded_story


def _write(out, row: dict) -> None:
    out.write(json.dumps(row, ensure_ascii=False) + "\n")
    out.flush()


if __name__ == "__main__":
    target, args = sys.argv[1], sys.argv[sys.argv.index("--") + 1:]
    with open(target, "a", encoding="utf-8") as handle:
        _recording(handle)
        main(["analyze", *args], standalone_mode=False)
