"""The server's HTTP rules (issue 17, item 6): framing, host names, hosted mode's endpoints;
who a visitor is and what a session is told of the server (issue 29, items 4 and 7).

Unit tests of :class:`headforms.hosted.http.Rules`, then the real server (``scripts/start.sh``,
which serves ``server.py``: ``app.py`` behind the rules) in hosted mode on loopback, with no
trusted proxy.
"""

from __future__ import annotations

import http.client
import os
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from headforms.hosted.http import Rules
from headforms.settings import (
    ALLOWED_HOSTS_ENV,
    FRAME_ANCESTORS_ENV,
    SERVER_PROXIES_ENV,
    TRUSTED_PROXIES_ENV,
    VISITOR_SAMPLES_ENV,
)


@pytest.mark.parametrize(
    ("host", "allowed"),
    [
        ("127.0.0.1:8501", True),
        ("[::1]:8501", True),
        ("192.168.4.20", True),  # an address: no name to rebind
        ("localhost:8501", True),
        ("LOCALHOST", True),
        ("evil.example", False),
        ("evil.example:8501", False),
        ("dash.example.org", True),  # listed
        ("DASH.example.org:443", True),
        ("a.team.example.org", True),  # under a listed ".team.example.org"
        ("team.example.org.evil.example", False),
        ("127.0.0.1:port", False),
        ("", False),
        (None, True),  # HTTP/1.0: no browser
    ],
)
def test_only_listed_names_and_addresses_are_answered(host: str | None, allowed: bool) -> None:
    rules = Rules(allowed_hosts=("dash.example.org", ".team.example.org"))
    assert rules.host_allowed(host) is allowed
    everyone = Rules(allowed_hosts=("*",))
    assert everyone.host_allowed(host) is (host not in ("127.0.0.1:port", ""))


def test_framing_is_same_origin_by_default_and_configurable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(FRAME_ANCESTORS_ENV, raising=False)
    headers = dict(Rules.from_env().headers())
    assert headers[b"content-security-policy"] == b"frame-ancestors 'self'"
    assert headers[b"x-frame-options"] == b"SAMEORIGIN"
    monkeypatch.setenv(FRAME_ANCESTORS_ENV, "  'self'   https://wiki.example.org ")
    headers = dict(Rules.from_env().headers())
    assert headers[b"content-security-policy"] == b"frame-ancestors 'self' https://wiki.example.org"
    assert b"x-frame-options" not in headers  # it cannot say this; CSP does
    monkeypatch.setenv(FRAME_ANCESTORS_ENV, "'none'")
    assert dict(Rules.from_env().headers())[b"x-frame-options"] == b"DENY"


def test_metrics_are_hidden_in_hosted_mode_only() -> None:
    assert Rules(hosted=True).hidden("/_stcore/metrics")
    assert Rules(hosted=True).hidden("/base/_stcore/metrics/")
    assert not Rules(hosted=True).hidden("/_stcore/health")
    assert not Rules(hosted=False).hidden("/_stcore/metrics")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """``scripts/start.sh`` in hosted mode; ``dash.example.org`` listed as a host name; no trusted
    proxy; one new Theorem 5 sampling per visitor."""
    from servers import free_port, serving

    base = tmp_path_factory.mktemp("http")
    port = free_port()
    env = {
        **os.environ,
        "HEADFORMS_HOSTED": "1",
        ALLOWED_HOSTS_ENV: "dash.example.org",
        VISITOR_SAMPLES_ENV: "1",
    }
    for name in (FRAME_ANCESTORS_ENV, TRUSTED_PROXIES_ENV, SERVER_PROXIES_ENV):
        env.pop(name, None)
    with serving(port, env, base / "streamlit.log", 120):
        yield port


def request(port: int, path: str, host: str | None = None) -> tuple[int, dict[str, str], bytes]:
    """GET ``path`` with the ``Host`` header ``host`` (default: the address)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.putrequest("GET", path, skip_host=True)
        connection.putheader("Host", host or f"127.0.0.1:{port}")
        connection.endheaders()
        response = connection.getresponse()
        headers = {k.lower(): v for k, v in response.getheaders()}
        return response.status, headers, response.read()
    finally:
        connection.close()


@pytest.mark.slow
def test_every_answer_limits_framing_to_the_same_origin(server: int) -> None:
    """The page, its health check and a static file: framing limited to the app itself (before:
    any site could frame it)."""
    from ui.static import ensure_plotly_js

    for path in ("/", "/_stcore/health", "/" + ensure_plotly_js().full):
        status, headers, _ = request(server, path)
        assert status == 200, path
        assert headers["content-security-policy"] == "frame-ancestors 'self'", path
        assert headers["x-frame-options"] == "SAMEORIGIN", path


@pytest.mark.slow
def test_the_metrics_endpoint_is_off_in_hosted_mode(server: int) -> None:
    status, _, body = request(server, "/_stcore/metrics")
    assert status == 404 and b"session" not in body


@pytest.mark.slow
@pytest.mark.parametrize("host", ["evil.example", "evil.example:80", "127.0.0.1.nip.io"])
def test_a_spoofed_host_is_refused_in_one_line(server: int, host: str) -> None:
    status, headers, body = request(server, "/", host)
    assert status == 400
    assert body.decode().count("\n") == 1
    assert "does not answer to the host name" in body.decode()
    assert "HEADFORMS_ALLOWED_HOSTS" in body.decode()


@pytest.mark.slow
def test_a_listed_host_name_is_answered(server: int) -> None:
    status, _, body = request(server, "/", "dash.example.org")
    assert status == 200 and b"<html" in body.lower()


@pytest.mark.slow
def test_a_websocket_with_a_spoofed_host_is_refused(server: int) -> None:
    """The page's websocket too (a rebinding page would open it under its own name)."""
    import socket

    from websockets.exceptions import InvalidStatus
    from websockets.sync.client import connect

    sock = socket.create_connection(("127.0.0.1", server), timeout=30)
    with pytest.raises(InvalidStatus) as refused:  # the Host header names evil.example
        with connect(f"ws://evil.example:{server}/_stcore/stream", sock=sock, open_timeout=30):
            pass
    assert refused.value.response.status_code == 403
    url = f"ws://127.0.0.1:{server}/_stcore/stream"
    with connect(url, subprotocols=["streamlit"], open_timeout=30) as ok:  # its own address
        assert ok.subprotocol == "streamlit"


@pytest.mark.slow
def test_a_session_is_told_nothing_of_the_server(server: int) -> None:
    """The message that starts each script run names neither the app's directory nor the
    Streamlit and Python versions, the server's OS or its installation ids (before: all of
    them)."""
    from repo import REPO
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
    from streamlit_client import Session

    with Session(server) as session:
        runs = [session.run(), session.run()]
    sent = [data for run in runs for data in run.new_sessions]
    assert len(sent) == 2
    for data in sent:
        message = ForwardMsg()
        message.ParseFromString(data)
        new = message.new_session
        assert new.main_script_path == "app.py" and new.page_script_hash
        # emptied but present: the browser reads them (an absent one: "Bad message format")
        assert new.initialize.HasField("environment_info") and new.initialize.HasField("user_info")
        assert not new.initialize.environment_info.streamlit_version
        assert not new.initialize.environment_info.python_version
        assert not new.initialize.user_info.installation_id
        assert not new.initialize.user_info.installation_id_v3
        for fact in (str(REPO), sys.version.split()[0], "Linux"):
            assert fact.encode() not in data, fact


@pytest.mark.slow
def test_a_forwarded_header_from_an_untrusted_peer_is_not_believed(server: int) -> None:
    """With no trusted proxy, a client on this machine naming another address in
    ``X-Forwarded-For`` in each new session is still one visitor, with one budget (before:
    Streamlit's server believed the header from loopback, and each session got a fresh one)."""
    from page_runner import plain
    from streamlit_client import Session

    seed = time.time_ns() % 2**31  # samplings no earlier run computed
    runs = []
    for index, address in enumerate(("198.51.100.20", "198.51.100.21", "198.51.100.22")):
        with Session(server, forwarded_for=address) as session:
            runs.append(session.run(f"seed={seed + index}&n=16&spectra=10", page_name="theorem5"))
    first, *refused = runs
    assert first.status == "FINISHED_SUCCESSFULLY" and not first.errors, first.messages
    for run in refused:
        lines = [plain(line) for line in run.messages + run.texts]
        assert any("you have started 1 new Theorem 5 samplings" in line for line in lines), lines


def test_a_server_believing_other_proxies_than_headforms_does_not_start(tmp_path) -> None:
    """Started without the start commands, Streamlit's server would believe X-Forwarded-For
    from any client on this machine (uvicorn's default): in hosted mode it refuses to start, in
    one line."""
    from repo import REPO

    env = {
        k: v for k, v in os.environ.items() if k not in (SERVER_PROXIES_ENV, TRUSTED_PROXIES_ENV)
    }
    env.update(HEADFORMS_HOSTED="1", PYTHONPATH=str(REPO))
    result = subprocess.run(
        [sys.executable, "-c", "import server"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=120,
    )
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith(
        "headforms: Streamlit's server believes X-Forwarded-For from FORWARDED_ALLOW_IPS="
        "'127.0.0.1,::1', this app from HEADFORMS_TRUSTED_PROXIES=''"
    )
    assert result.stderr.count("\n") == 1
