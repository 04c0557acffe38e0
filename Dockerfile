# headforms dashboard: CPU-only PyTorch, the bundled models inside, results in a volume.
#   docker build -t headforms .
#   docker run -p 8501:8501 -v headforms-cache:/app/cache headforms
# Hosted mode is on (HEADFORMS_HOSTED=1): local models only under /models (mount them read-only
# with -v /path/to/models:/models:ro), HEADFORMS_HUB_ALLOWLIST / HEADFORMS_MAX_MODEL_BYTES to limit
# the hub. Set HEADFORMS_HOSTED=0 for a private instance.
FROM python:3.11-slim

# The pinned torch from PyPI alone would pull CUDA builds: take the CPU wheel of the same version.
ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    VENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH \
    HEADFORMS_CACHE_DIR=/app/cache \
    HEADFORMS_HOSTED=1 \
    HEADFORMS_MODEL_ROOTS=/models \
    HF_HOME=/app/cache/hf \
    HOST=0.0.0.0 \
    PORT=8501

WORKDIR /app
# The one install script that developers (make) and CI (.ci/run) use; dependencies first so
# that this layer is rebuilt only when a requirements file changes.
COPY requirements.txt requirements-models.txt requirements-dev.txt ./
COPY scripts/install.sh scripts/install.sh
RUN PIP_EXTRA_INDEX_URL="$TORCH_INDEX" scripts/install.sh
COPY . .
# /app stays root-owned and read-only for the app: generate plotly.js for static/ now.
RUN python -m ui.static
RUN useradd --create-home --uid 10001 headforms \
    && mkdir -p /app/cache /models \
    && chown -R headforms:headforms /app/cache /models
USER headforms
# Analyse the default model once at build time: a new volume starts with it (Docker copies the
# image's /app/cache into an empty named volume), so the first visitor does not wait.
RUN python -m headforms analyze smollm2-135m --quiet
VOLUME /app/cache
EXPOSE 8501
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD python -c "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/_stcore/health' % os.environ.get('PORT', '8501'), timeout=4).read() == b'ok' or exit(1)"
CMD ["scripts/start.sh"]
