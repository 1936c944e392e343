# Paperlab images (docs/deployment.md). Needs BuildKit (Docker >= 20.10: DOCKER_BUILDKIT=1, or buildx).
#
#   docker build -t paperlab .                                   the Hugging Face Docker Space (default target):
#                                                                web app + embedded worker, port 7860, user 1000
#   docker build --target gpu-worker -t paperlab-gpu .           a CUDA Celery worker (-Q gpu --pool=solo)
#
# Build arguments and secrets (none of them ends up in the image):
#   --build-arg BASE=local/debian:bookworm   any Debian bookworm-like base; python3.11 comes from apt when the
#                                            base has none (docker/make_base.sh makes this one without a registry)
#   --build-arg TORCH_INDEX_URL=...          an extra index for torch/torchvision only (e.g. PyTorch's CPU wheels);
#                                            default: the PyPI wheels (CUDA libraries included, ~4 GB)
#   --secret id=pip_ca,src=<CA bundle>       a TLS-intercepting proxy's CA bundle, for pip
#   --secret id=pip_conf,src=<pip.conf>      the build host's pip configuration (index URL, credentials)
ARG BASE=python:3.11-slim

# ---------------------------------------------------------------------------------------------------------------
FROM ${BASE} AS runtime
# python3.11 (when the base has none), git (syncmind builds and reads repository histories) and the Debian
# datasets the methods read (Fashion-MNIST, CC0 samples).
RUN set -eux; export DEBIAN_FRONTEND=noninteractive; apt-get update; \
    pkgs="git dataset-fashion-mnist sonic-pi-samples"; \
    command -v python3.11 >/dev/null || pkgs="$pkgs python3.11 python3.11-venv"; \
    apt-get install -y --no-install-recommends $pkgs; \
    apt-get clean; rm -rf /var/lib/apt/lists/* /var/log/apt /var/log/dpkg.log /var/cache/debconf/*-old; \
    useradd -m -u 1000 -s /bin/bash user; \
    mkdir -p /home/user/data; chown user:user /home/user/data

# ---------------------------------------------------------------------------------------------------------------
FROM runtime AS deps
# Only what decides the dependencies: editing code does not reinstall them.
COPY pyproject.toml constraints.txt requirements-nodeps.txt /tmp/deps/
ARG TORCH_INDEX_URL=
RUN --mount=type=secret,id=pip_ca --mount=type=secret,id=pip_conf \
    set -eu; cd /tmp/deps; \
    if [ -s /run/secrets/pip_ca ]; then export PIP_CERT=/run/secrets/pip_ca; fi; \
    if [ -s /run/secrets/pip_conf ]; then export PIP_CONFIG_FILE=/run/secrets/pip_conf; fi; \
    export PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_PREFER_BINARY=1; \
    python3.11 -m venv /opt/venv; \
    python3.11 -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" \
        > requirements.txt; \
    if [ -n "$TORCH_INDEX_URL" ]; then \
        /opt/venv/bin/pip install --extra-index-url "$TORCH_INDEX_URL" -c constraints.txt torch torchvision; fi; \
    /opt/venv/bin/pip install -c constraints.txt -r requirements.txt; \
    /opt/venv/bin/pip install --no-deps -c constraints.txt -r requirements-nodeps.txt; \
    /opt/venv/bin/python -c "import torch, torchvision; assert torch.__version__.startswith('2.14.1'), torch.__version__"; \
    rm -rf /tmp/deps /root/.cache

# ---------------------------------------------------------------------------------------------------------------
FROM runtime AS native
# ZapFormat's compiled core (engines/zapformat/_zfcore.cpp, a plain CPython C++ extension; setup.py): built here
# with g++ and the Python headers, which the runtime image does not carry; only the .so goes into the app. Without
# it the engine would fall back to its Python reference (same masks, slower) with a logged warning.
RUN set -eux; export DEBIAN_FRONTEND=noninteractive; apt-get update; pkgs="g++"; \
    python3.11 -c "import os, sysconfig; assert os.path.exists(os.path.join(sysconfig.get_paths()['include'], 'Python.h'))" \
        || pkgs="$pkgs python3.11-dev"; \
    apt-get install -y --no-install-recommends $pkgs; rm -rf /var/lib/apt/lists/*
WORKDIR /tmp/native
COPY setup.py pyproject.toml README.md ./
COPY engines/zapformat/_zfcore.cpp engines/zapformat/
RUN set -eux; python3.11 -m venv /tmp/bv; /tmp/bv/bin/python setup.py build_ext --inplace; \
    ls engines/zapformat/_zfcore*.so

# ---------------------------------------------------------------------------------------------------------------
FROM deps AS app
# HOME is the user's (Hugging Face runs the container as uid 1000); caches and jobs go to /home/user/data.
ENV PATH=/opt/venv/bin:$PATH PYTHONPATH=/home/user/app HOME=/home/user PYTHONUNBUFFERED=1 \
    PAPERLAB_HOST=0.0.0.0 PAPERLAB_PORT=7860 PAPERLAB_DATA_DIR=/home/user/data \
    GRADIO_ANALYTICS_ENABLED=False MPLBACKEND=Agg
WORKDIR /home/user/app
# The code and the model release belong to root (read-only to the app); the release is checked here so an
# image never ships without its models or with damaged ones.
COPY pyproject.toml constraints.txt requirements-nodeps.txt README.md ./
COPY release ./release
COPY static ./static
COPY docs ./docs
COPY workers ./workers
COPY engines ./engines
COPY --from=native /tmp/native/engines/zapformat/ ./engines/zapformat/
COPY app ./app
RUN set -eu; \
    if [ ! -s release/RELEASE.json ]; then \
        echo "ERROR: release/RELEASE.json is missing: the build context has no model release (see release/README.md)" >&2; \
        exit 1; fi; \
    python -c "import json; from engines.common import release; a = release.read_release()['artifacts']; \
[release.verify(*k.rsplit('/', 1)) for k in a]; print(f'model release v{release.version()}: {len(a)} artifacts verified')"; \
    python -m compileall -q app engines workers; \
    python -c "from engines.zapformat import compiled; assert compiled.available(), compiled.IMPORT_ERROR"
USER user

# ---------------------------------------------------------------------------------------------------------------
# GPU worker: one container per GPU, solo pool, models cached lazily per process. The PyPI torch wheel carries
# its CUDA libraries; the host needs an NVIDIA driver recent enough for them and the NVIDIA container toolkit.
FROM app AS gpu-worker
ENV PAPERLAB_DEVICE=cuda NVIDIA_VISIBLE_DEVICES=all NVIDIA_DRIVER_CAPABILITIES=compute,utility
CMD ["celery", "-A", "workers.celery_app", "worker", "-Q", "gpu", "--pool=solo", "--loglevel=INFO"]

# ---------------------------------------------------------------------------------------------------------------
# The Space (default target): the web app with its embedded worker. Compose runs the same image as web
# (--no-worker) and as CPU workers.
FROM app AS space
EXPOSE 7860
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:7860/healthz', timeout=4)"
CMD ["python", "-m", "app"]
