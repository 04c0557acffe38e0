#!/usr/bin/env bash
# The dashboard's start command (the Docker image's CMD; also works outside Docker):
# headless Streamlit on $HOST:$PORT (default 0.0.0.0:8501), using $VENV (default .venv) when
# it has Streamlit, else the streamlit on PATH. Extra arguments go to `streamlit run`.
# When HEADFORMS_CACHE_DIR is set (the image: the volume /app/cache) and cannot be written, it
# stops at once with one line saying so, instead of serving an app whose every model fails.
set -euo pipefail
cd "$(dirname "$0")/.."
cache=${HEADFORMS_CACHE_DIR:-}
if [ -n "$cache" ]; then
  if ! probe=$(mkdir -p "$cache" 2>/dev/null && mktemp -p "$cache" .write-test.XXXXXX 2>/dev/null)
  then
    echo "headforms: cannot write the cache directory $cache as uid $(id -u): use a named" \
      "volume (-v headforms-cache:$cache) or a folder owned by uid $(id -u)" >&2
    exit 1
  fi
  rm -f "$probe"
fi
VENV=${VENV:-.venv}
if [ -x "$VENV/bin/streamlit" ]; then
  streamlit="$VENV/bin/streamlit"
else
  streamlit=streamlit
fi
# Streamlit's server (uvicorn) believes X-Forwarded-For only from the proxies headforms trusts
# (by default it would from any client on this machine; headforms/hosted/visitors.py).
export FORWARDED_ALLOW_IPS="${HEADFORMS_TRUSTED_PROXIES:-}"
# server.py: app.py behind the server's HTTP rules (host names, framing; headforms/hosted/http.py)
exec "$streamlit" run server.py \
  --server.headless=true \
  --server.address="${HOST:-0.0.0.0}" \
  --server.port="${PORT:-8501}" \
  --server.fileWatcherType=none \
  --server.runOnSave=false \
  --browser.gatherUsageStats=false \
  "$@"
