"""Shared test setup: helper modules in tests/ are importable, the hub is off, and a real PostgreSQL
server is at hand. Tests give every run its own database (`--db` under tmp_path); LOGWARDEN_HOME
stays the user's, so the embedded model is assembled once into its cache and shared."""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # no model hub here: fail fast instead of waiting on the network

from _pg_helpers import any_db_url, pg_cluster, pg_url  # noqa: E402,F401 - a real PostgreSQL for store tests
