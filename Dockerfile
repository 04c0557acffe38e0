# headforms dashboard: CPU-only PyTorch, the bundled models inside, results in a volume.
#   docker build -t headforms .
#   docker run -p 8501:8501 -v headforms-cache:/app/cache headforms
# Needs BuildKit (the default builder since Docker 23; DOCKER_BUILDKIT=1 on older engines).
# Offline or behind a mirror: a CPU torch wheel in wheels/ is used alone (wheels/README.md), and
# --build-arg BASE_IMAGE=... names another Debian-based Python 3.11 image with `python3 -m venv`.
# Hosted mode is on, with the safe defaults below (docs/hosting.md).
ARG BASE_IMAGE=python:3.11-slim
FROM ${BASE_IMAGE} AS deps

# torch comes from this index alone, or from a wheel in wheels/ (never from PyPI: its torch is
# the CUDA build); scripts/install.sh fails the build unless torch.version.cuda is None.
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    VENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH \
    HEADFORMS_CACHE_DIR=/app/cache \
    HF_HOME=/app/cache/hf \
    HOST=0.0.0.0 \
    PORT=8501 \
    HEADFORMS_HOSTED=1 \
    HEADFORMS_MODEL_ROOTS=/models:/app/cache/demo \
    HEADFORMS_HUB_ALLOWLIST=HuggingFaceTB/SmolLM2-*,openai-community/gpt2,sentence-transformers/all-MiniLM-*,Qwen/Qwen2.5-0.5B* \
    HEADFORMS_MAX_MODEL_BYTES=1073741824
WORKDIR /app

# The one install script of make and CI. Dependencies first, so that this layer is rebuilt only
# when a requirements file changes; wheels/ is mounted for this step only, never copied.
COPY requirements.txt requirements-models.txt ./
COPY scripts/install.sh scripts/install.sh
RUN --mount=type=bind,source=wheels,target=/tmp/wheels \
    PIP_NO_CACHE_DIR=1 TORCH_WHEELS=/tmp/wheels TORCH_INDEX_URL="$TORCH_INDEX_URL" \
    scripts/install.sh

# plotly.js's 3D bundle, fetched with npm exactly as scripts/install.sh does for `make run`, so a
# hosted first paint is as fast as a local one. npm (Debian's) exists in this stage only; the
# build fails rather than ship the slower full bundle alone.
FROM deps AS plotly-gl3d
ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
RUN apt-get update \
    && apt-get install -y --no-install-recommends npm \
    && rm -rf /var/lib/apt/lists/*
COPY headforms/ headforms/
COPY ui/ ui/
RUN python -m ui.static --fetch-gl3d | grep -q 'gl3d: app/static/plotly-'

FROM deps
# The app only (.dockerignore keeps everything else out of the context).
COPY app.py server.py ./
COPY .streamlit/ .streamlit/
COPY scripts/ scripts/
COPY headforms/ headforms/
COPY ui/ ui/
COPY pages/ pages/
# /app stays root-owned and read-only for the app: the gl3d bundle from its stage, the full one
# generated now. The app runs as uid 10001, which owns only the cache; /models stays root-owned:
# mount models there read-only (-v /path/to/models:/models:ro).
COPY --from=plotly-gl3d /app/static/ static/
RUN python -m ui.static \
    && useradd --create-home --uid 10001 headforms \
    && mkdir -p /app/cache /models \
    && chown headforms:headforms /app/cache
USER headforms
# Analyse the default model once at build time as the dashboard loads it (every spectrum and
# the Gaussian baseline): a new volume starts with it (Docker copies the image's /app/cache into
# an empty named volume), so the first visitor does not wait.
RUN python -m headforms analyze smollm2-135m --spectra all --baseline --quiet > /dev/null \
    && python -m headforms behaviour smollm2-135m --quiet > /dev/null
VOLUME /app/cache
EXPOSE 8501
# Healthy = the app answers and the cache is writable. A 5 s interval reports health within
# seconds on every engine; with Docker >= 25, `docker run --health-start-interval=1s
# --health-interval=30s` probes fast only while starting.
HEALTHCHECK --interval=5s --timeout=4s --start-period=60s --retries=3 \
    CMD ["python", "scripts/healthcheck.py"]
# start.sh stops at once, with one log line, when the cache volume is not writable.
CMD ["scripts/start.sh"]
