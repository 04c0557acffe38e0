"""``headforms serve``: the dashboard, run by Streamlit (headless, no file watcher)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ..errors import OptionError
from ..settings import SERVER_PROXIES_ENV, TRUSTED_PROXIES_ENV


def dashboard_app() -> Path:
    """The dashboard's ``server.py`` (``app.py`` behind the server's HTTP rules), in a source
    checkout or an installed ``headforms_dashboard``."""
    checkout = Path(__file__).resolve().parents[2] / "server.py"
    if checkout.is_file():
        return checkout
    import importlib.util

    installed = importlib.util.find_spec("headforms_dashboard")  # a wheel's dashboard files
    if installed is None or not installed.submodule_search_locations:
        raise OptionError(
            "the dashboard's files (server.py, app.py, pages/, ui/) are not installed next to "
            "this package"
        )
    return Path(list(installed.submodule_search_locations)[0]) / "server.py"


def cmd_serve(args: argparse.Namespace) -> int:
    """Run the dashboard with Streamlit (headless, no file watcher), replacing this process."""
    app = dashboard_app()
    command = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(app),
        "--server.headless=true",
        f"--server.address={args.host}",
        f"--server.port={args.port}",
        "--server.fileWatcherType=none",
        "--server.runOnSave=false",
        "--browser.gatherUsageStats=false",
    ]
    print(f"headforms dashboard on http://{args.host}:{args.port}", file=sys.stderr, flush=True)
    os.chdir(app.parent)
    # Streamlit's server believes X-Forwarded-For from the proxies headforms trusts, no other
    os.environ[SERVER_PROXIES_ENV] = os.environ.get(TRUSTED_PROXIES_ENV, "")
    os.execv(sys.executable, command)
    return 0  # not reached


def _port(text: str) -> int:
    """A TCP port from ``--port`` or ``$PORT``: a whole number from 1 to 65535."""
    try:
        port = int(text)
    except ValueError:
        port = 0
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a port (from --port or $PORT): a whole number from 1 to 65535"
        )
    return port


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """The ``serve`` subcommand."""
    s = sub.add_parser("serve", help="run the dashboard (Streamlit)")
    s.add_argument(
        "--host",
        default=os.environ.get("HOST", "127.0.0.1"),
        help="address to listen on (default: $HOST, else 127.0.0.1; here %(default)s); "
        "0.0.0.0 serves the network",
    )
    s.add_argument(
        "--port",
        type=_port,
        default=os.environ.get("PORT", "8501"),  # a string: argparse checks it with _port
        help="port to listen on (default: $PORT, else 8501; here %(default)s)",
    )
    s.set_defaults(func=cmd_serve)
