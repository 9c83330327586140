"""Where the repository is, for tests in any folder under tests/."""

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SAMPLE_LOGS = REPO / "sample_logs"
