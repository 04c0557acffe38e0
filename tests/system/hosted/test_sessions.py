"""A hosted server drops a session whose browser went away after a few seconds (Streamlit keeps
one 120 s by default, with what its last run holds: a visitor opening page after page in new
sessions would hold them all that long); a private one keeps Streamlit's default."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from repo import REPO

from headforms.settings import HOSTED_ENV, SERVER_PROXIES_ENV, TRUSTED_PROXIES_ENV

READ_TTL = (
    "import server; from streamlit import config; "
    "print(config.get_option('server.disconnectedSessionTTL'))"
)


@pytest.mark.parametrize(("hosted", "seconds"), [("1", "5"), ("0", "120")])
def test_the_server_keeps_disconnected_sessions_briefly_when_hosted(
    hosted: str, seconds: str
) -> None:
    # Streamlit's HTTP server and the app believe the same proxies (none), as the start
    # commands set them; otherwise a hosted server refuses to start (tests/system/hosted).
    env = {**os.environ, HOSTED_ENV: hosted, SERVER_PROXIES_ENV: "", TRUSTED_PROXIES_ENV: ""}
    done = subprocess.run(
        [sys.executable, "-c", READ_TTL], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-1] == seconds
