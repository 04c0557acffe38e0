"""Health of a running dashboard (the Docker image's HEALTHCHECK; works outside Docker too).

Healthy (exit 0) when Streamlit answers ``ok`` on ``/_stcore/health`` at ``127.0.0.1:$PORT``
and the cache directory ``$HEADFORMS_CACHE_DIR`` (when set) is writable: a server whose
results cannot be stored is not healthy. Otherwise exit 1 with one line saying why (Docker keeps
it in ``docker inspect``'s health log). Standard library only: it runs every few seconds.
"""

from __future__ import annotations

import os
import sys
import urllib.request


def problem() -> str | None:
    """Why the server is unhealthy, or None."""
    cache = os.environ.get("HEADFORMS_CACHE_DIR")
    if cache and not os.access(cache, os.W_OK | os.X_OK):
        return f"the cache directory {cache} is not writable by uid {os.getuid()}"
    url = f"http://127.0.0.1:{os.environ.get('PORT', '8501')}/_stcore/health"
    try:
        with urllib.request.urlopen(url, timeout=3) as response:
            body = response.read()
    except OSError as error:
        return f"no answer from {url}: {error}"
    if body != b"ok":
        return f"{url} answered {body[:80]!r}, not b'ok'"
    return None


if __name__ == "__main__":
    reason = problem()
    if reason:
        print(f"unhealthy: {reason}")
    sys.exit(1 if reason else 0)
