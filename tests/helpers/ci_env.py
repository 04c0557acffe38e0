"""Whether this run is CI's (``CI=true``): there a skipped test is a failed test
(tests/conftest.py) and the image test builds the Docker image."""

from __future__ import annotations

import os

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
