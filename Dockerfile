# Hugging Face Docker Space: the web app with its embedded worker on port 7860, as user 1000.
FROM python:3.11-slim AS base
RUN apt-get update && apt-get install -y --no-install-recommends \
        build-essential git dataset-fashion-mnist sonic-pi-samples \
    && rm -rf /var/lib/apt/lists/*
RUN useradd -m -u 1000 user
ENV HOME=/home/user PATH=/home/user/.local/bin:$PATH PYTHONUNBUFFERED=1 \
    PAPERLAB_HOST=0.0.0.0 PAPERLAB_PORT=7860 PAPERLAB_DATA_DIR=/home/user/data
WORKDIR /home/user/app
COPY --chown=user constraints.txt requirements-nodeps.txt pyproject.toml README.md ./
COPY --chown=user app ./app
COPY --chown=user engines ./engines
COPY --chown=user workers ./workers
COPY --chown=user static ./static
COPY --chown=user docs ./docs
USER user
RUN pip install --no-cache-dir --user -c constraints.txt . \
    && pip install --no-cache-dir --user --no-deps -c constraints.txt -r requirements-nodeps.txt

FROM base AS web
EXPOSE 7860
CMD ["python", "-m", "app"]

# GPU worker: one per GPU, solo pool, models cached lazily per process.
FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04 AS gpu-worker
RUN apt-get update && apt-get install -y --no-install-recommends python3.11 python3.11-venv python3-pip \
    && rm -rf /var/lib/apt/lists/* && useradd -m -u 1000 user
ENV HOME=/home/user PYTHONUNBUFFERED=1 PAPERLAB_DATA_DIR=/home/user/data PAPERLAB_DEVICE=cuda
WORKDIR /home/user/app
COPY --chown=user . .
USER user
RUN python3.11 -m venv /home/user/venv \
    && /home/user/venv/bin/pip install --no-cache-dir -c constraints.txt . \
    && /home/user/venv/bin/pip install --no-cache-dir --no-deps -c constraints.txt -r requirements-nodeps.txt
CMD ["/home/user/venv/bin/celery", "-A", "workers.celery_app", "worker", "-Q", "gpu", "--pool=solo", "--loglevel=INFO"]

# Default target: the Space image.
FROM web
