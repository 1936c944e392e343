#!/bin/bash
# `make load` against Redis with N separate Celery workers (docs/reliability.md):
#   benchmarks/load_redis.sh [--out docs/reliability-load-redis] [other benchmarks/load.py options]
# Starts its own redis-server on a free port (no persistence), the web app with --no-worker and
# PAPERLAB_LOAD_WORKERS (2) workers as docker-compose.yml runs them (-c 1 each), on one fresh data
# directory; runs benchmarks/load.py --url against it, then stops everything it started.
set -u
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
N=${PAPERLAB_LOAD_WORKERS:-2}
free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
RPORT=$(free_port); WPORT=$(free_port)
DATA=$(mktemp -d /tmp/paperlab-load-redis-XXXX)
export PAPERLAB_BROKER_URL=redis://127.0.0.1:$RPORT/0 PAPERLAB_DATA_DIR=$DATA PYTHONPATH=$PWD
redis-server --port "$RPORT" --bind 127.0.0.1 --save "" --appendonly no --daemonize yes --logfile "$DATA/redis.log"
sleep 1
PIDS=()
PAPERLAB_PORT=$WPORT setsid "$PY" -m app --no-worker > "$DATA/web.log" 2>&1 &
PIDS+=($!)
for i in $(seq 1 "$N"); do
  setsid "$PY" -m celery -A workers.celery_app worker -Q cpu,gpu -c 1 -n "w$i@%h" --loglevel=INFO > "$DATA/w$i.log" 2>&1 &
  PIDS+=($!)
done
for _ in $(seq 1 240); do
  ready=$(grep -l " ready." "$DATA"/w*.log 2>/dev/null | wc -l)
  [ "$ready" -ge "$N" ] && curl -sf "http://127.0.0.1:$WPORT/healthz" > /dev/null && break
  sleep 1
done
echo "healthz before: $(curl -s "http://127.0.0.1:$WPORT/healthz")"
"$PY" benchmarks/load.py --url "http://127.0.0.1:$WPORT/" "$@"
rc=$?
echo "healthz after: $(curl -s "http://127.0.0.1:$WPORT/healthz")"
for p in "${PIDS[@]}"; do kill -TERM -- "-$p" 2>/dev/null; done
sleep 8
for p in "${PIDS[@]}"; do kill -KILL -- "-$p" 2>/dev/null; done
redis-cli -p "$RPORT" shutdown nosave > /dev/null 2>&1
echo "logs: $DATA"
exit $rc
