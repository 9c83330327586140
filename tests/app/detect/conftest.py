"""The shipped rule pack, loaded once per module, and a fresh detector per test."""

import pytest

from logwarden.app.detect import Detector, load_rules


@pytest.fixture(scope="module")
def rules():
    return load_rules()


@pytest.fixture
def detector(rules):
    return Detector(rules)
