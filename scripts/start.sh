#!/usr/bin/env bash
# The dashboard's start command (the Docker image's CMD; also works outside Docker):
# headless Streamlit on $HOST:$PORT (default 0.0.0.0:8501), using $VENV (default .venv) when
# it has Streamlit, else the streamlit on PATH. Extra arguments go to `streamlit run`.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
if [ -x "$VENV/bin/streamlit" ]; then
  streamlit="$VENV/bin/streamlit"
else
  streamlit=streamlit
fi
exec "$streamlit" run app.py \
  --server.headless=true \
  --server.address="${HOST:-0.0.0.0}" \
  --server.port="${PORT:-8501}" \
  --server.fileWatcherType=none \
  --server.runOnSave=false \
  --browser.gatherUsageStats=false \
  "$@"
