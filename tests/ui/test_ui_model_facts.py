"""Issue 45 item 3 on the dashboard: the record page and the triage page say which model made the
answer (name, quantisation, adapter or why none). Streamlit's AppTest over a real SQLite store
filled by the real pipeline; the triage page's model goes through the real adapter choice, with
only the weights' load stood in for."""

from __future__ import annotations

import pytest
import streamlit as st
from _fake_engine import FakeEngine
from _ui_helpers import APP, fill_store
from streamlit.testing.v1 import AppTest

from logwarden.app.config import get_settings
from logwarden.engine import load
from logwarden.prompts import PROMPT_VERSION

TIMEOUT = 120  # a cold import of pandas/altair on a loaded 2-core machine; not a performance bound
LINE = "Dec 10 07:11:44 LabSZ sshd[24224]: Failed password for invalid user chen from 202.100.179.208 port 32484 ssh2"


class QuantisedFake(FakeEngine):
    def describe(self) -> dict:
        return {**super().describe(), "quant": "Q4_0"}


@pytest.fixture
def ui(tmp_path, monkeypatch):
    url, store = fill_store(tmp_path)
    monkeypatch.setenv("LOGWARDEN_DB", url)
    monkeypatch.delenv("LOGWARDEN_UI_PASSWORD", raising=False)
    get_settings.cache_clear()
    st.cache_resource.clear()  # the triage page's engine is shared per process: another test's may be held
    yield store
    store.close()
    get_settings.cache_clear()
    st.cache_resource.clear()


def _page(page: str, **query) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT).run()
    at.query_params.update(query)
    at.switch_page(f"views/{page}.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _texts(at: AppTest) -> str:
    """What the page says, without the markdown escaper's backslashes."""
    return " ".join([m.value for m in at.markdown] + [c.value for c in at.caption]).replace("\\", "")


def test_the_record_page_says_a_rules_record_was_made_by_no_model(ui):
    record = ui.query_records(limit=1)[0]
    at = _page("record", id=record.id)
    assert "model: none (decided by the rules)" in _texts(at)


def test_the_triage_page_says_which_model_answers_and_why_no_adapter(ui, monkeypatch):
    monkeypatch.setattr(load, "load_engine", lambda **kw: QuantisedFake(model_name=kw["model"], adapter_name=kw["adapter"]))
    at = _page("triage")
    at.text_area(key="triage_text").input(LINE)
    at.button(key="triage_assess").click().run()
    assert "model: none (rules only: no model runs)" in _texts(at)
    at.toggle(key="triage_use_model").set_value(True)
    at.button(key="triage_assess").click().run()
    assert not at.exception, [e.value for e in at.exception]
    said = _texts(at)
    assert (f"model embedded (Q4_0), adapter none: the shipped security-v2 was trained on prompt analyze_v2, "
            f"logwarden sends {PROMPT_VERSION}") in said
