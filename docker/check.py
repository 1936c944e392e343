"""``make docker-check``: build the Space image and run it for real (docs/deployment.md).

    python docker/check.py [space|compose|all]      (default: all)

space:   build the image (making a local Debian base when no base image can be pulled), start it, wait for the
         page, run one quick job (kl_bandits) and one model-backed tab (rose, the released model) through
         gradio_client, a small load test, check /healthz and that every process runs as uid 1000, then stop it.
compose: the same image as Redis + web + 2 workers; a worker is killed mid-job (the job is run again on the
         other worker or fails with a message) and the surviving worker serves the next job.

Measured figures (build time, image size, cold start, memory) are printed and written to
$PAPERLAB_CHECK_DIR/summary.json (default /tmp/paperlab-docker-check). Exit codes: 0 ok, 1 a check failed,
2 no Docker, 3 the build failed (TLS/CA problems are named), 4 the model release is missing or damaged.

Environment: PAPERLAB_IMAGE (paperlab), BASE (a base image; default python:3.11-slim when it is present or can
be pulled, else local/debian:bookworm made by docker/make_base.sh), PAPERLAB_PIP_CA (a CA bundle for pip in the
build; default: the one the host's pip uses; "none" for none), PAPERLAB_PIP_CONF (a pip.conf for the build;
default: the host's http(s) index URLs, if any), PAPERLAB_CHECK_PORT (17860), DOCKER (the docker client).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = Path(os.environ.get("PAPERLAB_CHECK_DIR", "/tmp/paperlab-docker-check"))
IMAGE = os.environ.get("PAPERLAB_IMAGE", "paperlab")
GPU_IMAGE = os.environ.get("PAPERLAB_GPU_IMAGE", "paperlab-gpu")
PORT = int(os.environ.get("PAPERLAB_CHECK_PORT", "17860"))
URL = f"http://127.0.0.1:{PORT}"
NAME = "paperlab-check"
PROJECT = "paperlabcheck"
OFFICIAL_BASE, LOCAL_BASE = "python:3.11-slim", "local/debian:bookworm"
# kl_bandits_run: env, eta, horizon, dim, arms, noise, beta, seeds, reference, methods
QUICK = ("linear", 5, 2000, 8, 20, 0.1, 1.0, 2, "uniform", ["kl_ucb", "ucb"])
LOAD = ("linear", 5, 20000, 8, 20, 0.1, 1.0, 2, "uniform", ["kl_ucb", "ucb"])
LONG = ("linear", 5, 50000, 8, 20, 0.1, 1.0, 10, "uniform", ["kl_ucb", "kl_greedy", "ucb"])  # ~40 s on one core (the tab's slider maxima; 3 seeds × 2 methods ended before the kill)
# rose_forecast on the released model: series, csv, column, horizon, context, holdout, few-shot, fraction, steps,
# baselines, coverage
ROSE = ("synthetic:trend_season", None, "", 16, 64, True, True, 0.1, 5, ["seasonal_naive"], 0.8)

summary: dict = {}
SECRET_SRCS: list[str] = []  # host files passed as build secrets


class CheckFailed(Exception):
    pass


def die(code: int, msg: str) -> None:
    print(f"\ndocker-check: {msg}", file=sys.stderr)
    sys.exit(code)


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def check(cond: bool, msg: str) -> None:
    if not cond:
        raise CheckFailed(msg)
    log(f"ok: {msg}")


def sh(*cmd: str, env: dict | None = None, timeout: float = 600, check_rc: bool = True) -> str:
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})})
    if check_rc and p.returncode:
        raise CheckFailed(f"{' '.join(cmd[:4])} ... exited {p.returncode}: {(p.stderr or p.stdout).strip()[-800:]}")
    return p.stdout.strip()


# ------------------------------------------------------------------------------------------------ preflight
def docker_client() -> str:
    d = shutil.which(os.environ.get("DOCKER") or "docker")
    if not d:
        die(2, "no docker client on PATH. Install Docker (Debian: `apt-get install docker.io`; elsewhere: "
               "https://docs.docker.com/engine/install/), or set DOCKER=/path/to/docker.")
    p = subprocess.run([d, "info", "--format", "{{.ServerVersion}} {{.Driver}}"], capture_output=True, text=True)
    if p.returncode or not p.stdout.strip():
        die(2, "no Docker daemon answers ("
               + (p.stderr.strip().splitlines() or ["?"])[-1] + ").\n  Start it: `sudo systemctl start docker`, or "
               "as root `dockerd > /var/log/dockerd.log 2>&1 &` (Debian: `apt-get install docker.io` first); "
               "or point DOCKER_HOST at a running daemon.")
    log(f"docker daemon {p.stdout.strip()} (client {d})")
    return d


def build_client(d: str) -> tuple[list[str], dict]:
    """A client that builds with BuildKit (secrets): buildx, or a pre-23 client with DOCKER_BUILDKIT=1."""
    if subprocess.run([d, "buildx", "version"], capture_output=True).returncode == 0:
        return [d, "buildx", "build", "--load"], {}
    for c in dict.fromkeys([d, "/usr/bin/docker", "/usr/local/bin/docker"]):
        if not os.access(c, os.X_OK):
            continue
        v = subprocess.run([c, "version", "--format", "{{.Client.Version}}"], capture_output=True, text=True).stdout
        if v and int(v.split(".")[0]) < 23:
            if c != d:
                log(f"{d} has no buildx plugin: building with {c} (BuildKit built in)")
            return [c, "build"], {"DOCKER_BUILDKIT": "1"}
    die(2, f"{d} has no buildx plugin, which BuildKit builds (build secrets) need. Install it "
           "(Docker's `docker-buildx-plugin`, Debian trixie's `docker-buildx`), or use a Docker 20.10-22.x client "
           "(Debian bookworm's `docker.io`) via DOCKER=/usr/bin/docker.")


def compose_client(d: str) -> list[str]:
    if subprocess.run([d, "compose", "version"], capture_output=True).returncode == 0:
        return [d, "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    die(2, "neither `docker compose` (Compose v2 plugin) nor `docker-compose` (v1; Debian: `apt-get install "
           "docker-compose`) is installed.")


def check_release() -> None:
    sys.path.insert(0, str(ROOT))
    from engines.common import release  # stdlib only

    f = release.release_dir() / release.RELEASE_FILE
    if not f.is_file():
        die(4, f"the model release is missing ({f} not found), and the image must ship it.\n  "
               "Restore it with `git checkout -- release/` (a fresh clone has it), or rebuild it with `make models`.")

    arts = release.read_release().get("artifacts", {})
    try:
        for k in arts:
            release.verify(*k.rsplit("/", 1))
    except (release.ReleaseError, OSError, ValueError) as e:
        die(4, f"the model release is damaged: {e}")
    log(f"model release v{release.version()}: {len(arts)} artifacts verified")


def host_pip(*args: str) -> str:
    p = subprocess.run([sys.executable, "-m", "pip", "config", "get", *args], capture_output=True, text=True)
    return p.stdout.strip() if p.returncode == 0 else ""


def pip_secrets() -> list[str]:
    """--secret flags that give the build's pip what the host's pip uses: its CA bundle and http(s) indexes."""
    flags = []
    ca = os.environ.get("PAPERLAB_PIP_CA", "")
    if ca.lower() == "none":
        ca = ""
    elif ca:
        if not Path(ca).is_file():
            die(3, f"PAPERLAB_PIP_CA={ca}: no such file. Give the CA bundle your TLS proxy needs "
                   "(e.g. /etc/ssl/certs/ca-certificates.crt), or PAPERLAB_PIP_CA=none.")
    else:
        for source, value in (("PIP_CERT", os.environ.get("PIP_CERT")), ("pip config global.cert", host_pip("global.cert")),
                              ("REQUESTS_CA_BUNDLE", os.environ.get("REQUESTS_CA_BUNDLE"))):
            if value:
                if not Path(value).is_file():
                    die(3, f"the host's pip uses the CA bundle {value} ({source}), which does not exist: fix that "
                           "setting, or set PAPERLAB_PIP_CA to the CA bundle the build needs (or none).")
                ca = value
                log(f"pip in the build trusts {ca} (from {source}; passed as a build secret, not in the image)")
                break
    if ca:
        flags += ["--secret", f"id=pip_ca,src={ca}"]
        SECRET_SRCS.append(ca)
    conf = os.environ.get("PAPERLAB_PIP_CONF", "")
    if conf:
        if not Path(conf).is_file():
            die(3, f"PAPERLAB_PIP_CONF={conf}: no such file.")
    else:
        index = os.environ.get("PIP_INDEX_URL") or host_pip("global.index-url")
        extra = (os.environ.get("PIP_EXTRA_INDEX_URL") or host_pip("global.extra-index-url")).split()
        index = index if index.startswith(("http://", "https://")) else ""
        extra = [u for u in extra if u.startswith(("http://", "https://"))]  # file:// indexes stay on the host
        if index or extra:
            OUT.mkdir(parents=True, exist_ok=True)
            conf = str(OUT / "pip.conf")
            Path(conf).write_text("[global]\n" + (f"index-url = {index}\n" if index else "")
                                  + (f"extra-index-url = {' '.join(extra)}\n" if extra else ""))
            os.chmod(conf, 0o600)
            log(f"pip in the build uses the host's index settings ({conf}; a build secret)")
    if conf:
        flags += ["--secret", f"id=pip_conf,src={conf}"]
        SECRET_SRCS.append(conf)
    return flags


# ------------------------------------------------------------------------------------------------ build
def image_exists(d: str, ref: str) -> bool:
    return subprocess.run([d, "image", "inspect", ref], capture_output=True).returncode == 0


def pull(d: str, ref: str) -> bool:
    log(f"trying `docker pull {ref}`")
    try:
        p = subprocess.run([d, "pull", ref], capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return False
    if p.returncode:
        log(f"cannot pull {ref}: {(p.stderr.strip().splitlines() or ['?'])[-1][:200]}")
    return p.returncode == 0


def choose_base(d: str) -> str:
    base = os.environ.get("BASE", "")
    if base:
        if not image_exists(d, base) and not pull(d, base):
            die(3, f"BASE={base} is neither present nor pullable.")
        return base
    if image_exists(d, OFFICIAL_BASE) or image_exists(d, LOCAL_BASE):
        return OFFICIAL_BASE if image_exists(d, OFFICIAL_BASE) else LOCAL_BASE
    if pull(d, OFFICIAL_BASE):
        return OFFICIAL_BASE
    log(f"no registry: making {LOCAL_BASE} with debootstrap (docker/make_base.sh)")
    t = time.monotonic()
    if subprocess.run(["bash", str(ROOT / "docker" / "make_base.sh"), LOCAL_BASE], env={**os.environ, "DOCKER": d}).returncode:
        die(3, "making the local base failed (see above).")
    summary["local base made (s)"] = round(time.monotonic() - t)
    return LOCAL_BASE


def build(d: str, secrets: list[str]) -> None:
    cmd, env = build_client(d)
    base = choose_base(d)
    OUT.mkdir(parents=True, exist_ok=True)
    for target, tag in (("space", IMAGE), ("gpu-worker", GPU_IMAGE)):
        argv = [*cmd, "--progress=plain", "--build-arg", f"BASE={base}", "--target", target, "-t", tag, *secrets, "."]
        log(f"building {tag} (target {target}, base {base}); log: {OUT / f'build-{target}.log'}")
        t = time.monotonic()
        with open(OUT / f"build-{target}.log", "w") as fh:
            rc = subprocess.run(argv, cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT, env={**os.environ, **env}).returncode
        text = (OUT / f"build-{target}.log").read_text(errors="replace")
        if rc:
            print("\n".join(text.splitlines()[-30:]), file=sys.stderr)
            if re.search(r"CERTIFICATE_VERIFY_FAILED|SSLError|certificate verify failed", text):
                die(3, "pip in the build could not verify the package index's TLS certificate (a TLS-intercepting "
                       "proxy?).\n  Pass the CA bundle the host trusts: PAPERLAB_PIP_CA=/etc/ssl/certs/ca-certificates.crt "
                       "make docker-check (it reaches pip as a build secret and is not stored in the image).")
            if "RELEASE.json is missing" in text or "failed verification" in text:
                die(4, "the build context has no (or a damaged) model release: `git checkout -- release/` or `make models`.")
            die(3, f"docker build of target {target} failed (exit {rc}); the end of the log is above.")
        if target == "space":
            summary["build time (s)"] = round(time.monotonic() - t)
            m = re.findall(r"transferring context: ([\d.]+\s*[kMG]?B)", text)
            # BuildKit sends a warm builder only what changed: the full size shows on a cold build
            summary["build context sent"] = m[-1] if m else "?"
            summary["base"] = base
    size = int(sh(d, "image", "inspect", "-f", "{{.Size}}", IMAGE))
    summary["image size (GB)"] = round(size / 1e9, 2)
    log(f"built {IMAGE}: {size / 1e9:.2f} GB in {summary['build time (s)']} s (context sent {summary['build context sent']})")


# ------------------------------------------------------------------------------------------------ run checks
def wait_page(timeout: float = 300, on_wait=None) -> float:
    t = time.monotonic()
    while time.monotonic() - t < timeout:
        try:
            with urllib.request.urlopen(URL + "/", timeout=5) as r:
                if r.status == 200 and b"gradio" in r.read().lower():
                    return time.monotonic() - t
        except OSError:
            pass
        if on_wait:
            on_wait()
        time.sleep(0.5)
    raise CheckFailed(f"no page at {URL} within {timeout:.0f} s")


def healthz() -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(URL + "/healthz", timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def mem_mb(d: str, names: list[str]) -> float:
    """Sum of the containers' memory (docker stats, MB)."""
    total = 0.0
    for line in sh(d, "stats", "--no-stream", "--format", "{{.MemUsage}}", *names).splitlines():
        v, unit = re.match(r"([\d.]+)\s*([KMG]i?B)", line.split("/")[0].strip()).groups()
        total += float(v) * {"K": 1 / 1024, "M": 1, "G": 1024}[unit[0]]
    return round(total)


class MemSampler(threading.Thread):
    def __init__(self, d: str, names: list[str]):
        super().__init__(daemon=True)
        self.d, self.names, self.peak, self.stop_ev = d, names, 0.0, threading.Event()

    def run(self):
        while not self.stop_ev.is_set():
            try:
                self.peak = max(self.peak, mem_mb(self.d, self.names))
            except Exception:
                pass

    def stop(self) -> float:
        self.stop_ev.set()
        self.join(timeout=10)
        return self.peak


def client():
    try:
        from gradio_client import Client
    except ImportError:
        die(1, "gradio_client is not installed for this Python: `make install` (or `pip install gradio_client`).")
    return Client(URL, verbose=False)


def quick_job(c, what: str = "quick job") -> float:
    t = time.monotonic()
    regret_plot, _, table, status = c.predict(*QUICK, api_name="/kl_bandits_run")
    dt = time.monotonic() - t
    check(regret_plot["plot"].startswith("data:image") and {r[0] for r in table["data"]} == {"KL-UCB (Alg. 1)", "UCB / LinUCB"}
          and "Done" in status, f"{what}: kl_bandits_run through gradio_client ({dt:.1f} s)")
    return dt


def model_tab(c) -> float:
    t = time.monotonic()
    plot, table, reg, status = c.predict(*ROSE, api_name="/rose_forecast")
    dt = time.monotonic() - t
    rows = [r[0] for r in table["data"]]
    check(str(plot).endswith((".png", ".webp")) and rows[0] == "ROSE zero-shot" and "MASE" in status,
          f"model-backed tab: rose_forecast on the released model ({dt:.1f} s; rows {rows})")
    return dt


def load_test(d: str, names: list[str], key: str) -> None:
    """Four longer kl_bandits jobs and a rose forecast at once, from five visitors; peak memory of the containers."""
    sampler = MemSampler(d, names)
    sampler.start()
    t = time.monotonic()
    # one gradio_client per job: each is its own visitor session (the app admits one job per tab per session)
    jobs = [client().submit(*LOAD, api_name="/kl_bandits_run") for _ in range(4)] \
        + [client().submit(*ROSE, api_name="/rose_forecast")]
    results = [j.result(timeout=600) for j in jobs]
    dt = time.monotonic() - t
    peak = sampler.stop()
    check(all("Done" in r[3] for r in results[:4]) and "MASE" in results[4][3],
          f"load test: 4 kl_bandits jobs (T=20000) + 1 rose forecast at once, all served ({dt:.0f} s)")
    summary[f"{key}: load test (s)"] = round(dt)
    summary[f"{key}: memory under load, peak (MB)"] = peak


def processes_uid(d: str, container: str) -> set[str]:
    code = ("import glob\nu=set()\nfor p in glob.glob('/proc/[0-9]*/status'):\n try: u.add(open(p).read().split('Uid:')[1].split()[0])\n"
            " except OSError: pass\nprint(' '.join(sorted(u)))")
    return set(sh(d, "exec", container, "python", "-c", code).split())


def image_hygiene(d: str) -> None:
    script = ("cd /home/user/app; bad=''; for p in tests .git .venv data .pytest_cache docs/screenshots "
              "/root/.cache /home/user/.cache /tmp/deps /run/secrets/pip_ca /run/secrets/pip_conf; do "
              "[ -e $p ] && bad=\"$bad $p\"; done; "
              "[ -n \"$(ls /var/lib/apt/lists | grep -v '^lock$\\|^partial$\\|^auxfiles$')\" ] && bad=\"$bad apt-lists\"; "
              "[ -n \"$(find / -xdev \\( -name pip.conf -o -name '*.pyc' -path '/home/user/app/tests/*' \\) "
              "-not -path '/proc/*' 2>/dev/null)\" ] && bad=\"$bad pip.conf\"; echo \"found:$bad\"; "
              "du -sm /home/user/app/release /opt/venv | cut -f1 | tr '\\n' ' '")
    # "found:" marks the first line: sh() strips the output, and an empty first line would vanish with it
    out = sh(d, "run", "--rm", "--user", "0", "--entrypoint", "sh", IMAGE, "-c", script).splitlines()
    found = out[0].removeprefix("found:").strip()
    check(out[0].startswith("found:") and not found,
          f"the image holds no tests, test data, caches, pip config or secrets ({found or 'clean'})")
    rel, venv = out[1].split()
    summary["image: release (MB) / venv (MB)"] = f"{rel} / {venv}"
    # The RUN line names the secret mounts (/run/secrets/pip_ca): what must not be there is a bundle's text, the
    # host paths the secrets came from, or pip settings left in the image's environment.
    history = sh(d, "history", "--no-trunc", "--format", "{{.CreatedBy}}", IMAGE)
    env = sh(d, "image", "inspect", "-f", "{{json .Config.Env}}", IMAGE)
    leaks = (["certificate text"] if "BEGIN CERTIFICATE" in history else []) \
        + [src for src in SECRET_SRCS if src in history or src in env] \
        + [v for v in ("PIP_CERT", "PIP_CONFIG_FILE", "PIP_INDEX_URL", "REQUESTS_CA_BUNDLE") if v + "=" in env]
    check(not leaks, f"no CA bundle or pip configuration in the image history or environment ({leaks or 'clean'})")


def imports_in_image(d: str) -> None:
    """Every engines/app/workers module imports inside the image (a missing system library shows here)."""
    code = ("import importlib, pkgutil, sys\nbad = []\nfor top in ('engines', 'workers', 'app'):\n"
            " for m in pkgutil.walk_packages(importlib.import_module(top).__path__, top + '.'):\n"
            "  try: importlib.import_module(m.name)\n"
            "  except Exception as e: bad.append(f'{m.name}: {type(e).__name__}: {e}')\n"
            "print(len(sys.modules)); print('\\n'.join(bad))")
    t = time.monotonic()
    out = sh(d, "run", "--rm", IMAGE, "python", "-c", code, timeout=900).splitlines()
    check(len(out) == 1, f"every module of engines, workers and app imports in the image ({time.monotonic() - t:.0f} s)"
          + ("" if len(out) == 1 else ":\n  " + "\n  ".join(out[1:])))


def gpu_worker_image(d: str) -> None:
    cmd = sh(d, "image", "inspect", "-f", "{{json .Config.Cmd}} {{.Config.User}}", GPU_IMAGE)
    out = sh(d, "run", "--rm", GPU_IMAGE, "python", "-c",
             "import torch, os; print(torch.__version__, torch.version.cuda, torch.cuda.is_available(), os.environ['PAPERLAB_DEVICE'])")
    check('"-Q","gpu","--pool=solo"' in cmd and cmd.endswith(" user") and out.startswith("2.14.1"),
          f"{GPU_IMAGE}: celery -Q gpu --pool=solo as user; torch, CUDA, GPU visible, device: {out}")


def space_check(d: str) -> None:
    sh(d, "rm", "-f", NAME, check_rc=False)
    image_hygiene(d)
    imports_in_image(d)
    gpu_worker_image(d)
    t = time.monotonic()
    sh(d, "run", "-d", "--name", NAME, "-p", f"127.0.0.1:{PORT}:7860", IMAGE)
    try:
        def alive():
            if sh(d, "inspect", "-f", "{{.State.Running}}", NAME) != "true":
                raise CheckFailed("the container exited while starting:\n" + sh(d, "logs", "--tail", "30", NAME))
        wait_page(on_wait=alive)
        cold = time.monotonic() - t  # from `docker run`
        summary["space: cold start to first page (s)"] = round(cold, 1)
        log(f"page served {cold:.1f} s after `docker run`")
        code, h = healthz()
        check(code == 200 and h["worker"]["kind"] == "embedded" and h["worker"]["ok"],
              f"/healthz 200 with the embedded worker running ({h['worker'].get('alive')} process)")
        check(sh(d, "exec", NAME, "id", "-u") == "1000" and sh(d, "inspect", "-f", "{{.Config.User}}", NAME) == "user",
              "the container runs as user 1000")
        uids = processes_uid(d, NAME)
        check(uids == {"1000"}, f"every process in the container (web and embedded worker) has uid 1000 ({uids})")
        time.sleep(10)
        summary["space: memory idle after start (MB)"] = mem_mb(d, [NAME])
        c = client()
        summary["space: quick job (s)"] = round(quick_job(c), 1)
        summary["space: rose forecast, first (s)"] = round(model_tab(c), 1)
        load_test(d, [NAME], "space")
        time.sleep(10)
        summary["space: memory idle after the load test (MB)"] = mem_mb(d, [NAME])
        t = time.monotonic()
        sh(d, "stop", "-t", "30", NAME)
        exit_code = sh(d, "inspect", "-f", "{{.State.ExitCode}}", NAME)
        check(exit_code == "0", f"`docker stop` ends it cleanly in {time.monotonic() - t:.1f} s (exit {exit_code})")
    except Exception:
        print(sh(d, "logs", "--tail", "40", NAME, check_rc=False), file=sys.stderr)
        raise
    finally:
        sh(d, "rm", "-f", NAME, check_rc=False)


# ------------------------------------------------------------------------------------------------ compose
def redis_image(d: str) -> str:
    ref = os.environ.get("PAPERLAB_REDIS_IMAGE", "")
    if ref or image_exists(d, "redis:7") or pull(d, "redis:7"):
        return ref or "redis:7"
    base = os.environ.get("BASE") or (OFFICIAL_BASE if image_exists(d, OFFICIAL_BASE) else LOCAL_BASE)
    ref = "paperlab-redis:local"
    if not image_exists(d, ref):
        log(f"no registry: building {ref} (Debian's redis-server on {base})")
        df = (f"FROM {base}\nRUN apt-get update && apt-get install -y --no-install-recommends redis-server "
              "&& rm -rf /var/lib/apt/lists/*\nUSER redis\nCMD [\"redis-server\"]\n")
        p = subprocess.run([d, "build", "-t", ref, "-"], input=df, text=True, capture_output=True, env={**os.environ, "DOCKER_BUILDKIT": "0"})
        if p.returncode:
            raise CheckFailed(f"building {ref} failed: {p.stderr[-800:]}")
    return ref


def worker_logs(d: str, cid: str) -> str:
    p = subprocess.run([d, "logs", cid], capture_output=True, text=True)
    return p.stdout + p.stderr


def received(d: str, cid: str) -> int:
    return len(re.findall(r"Task paperlab\.run_entry\[[^\]]+\] received", worker_logs(d, cid)))


def running(d: str, cid: str) -> set[str]:
    """Task ids the worker received and has not finished (succeeded, failed or raised) per its log."""
    text = worker_logs(d, cid)
    got = set(re.findall(r"Task paperlab\.run_entry\[([^\]]+)\] received", text))
    ended = set(re.findall(r"Task paperlab\.run_entry\[([^\]]+)\] (?:succeeded|failed|raised|retry)", text))
    return got - ended


def wait_idle(d: str, workers: list[str], limit: float = 60.0) -> None:
    """Wait until no worker runs a task (the load test's last jobs), so the next one received is ours."""
    t = time.monotonic()
    while any(running(d, w) for w in workers):
        if time.monotonic() - t > limit:
            raise CheckFailed(f"the workers were still busy {limit:.0f} s after the load test")
        time.sleep(0.5)


def compose_check(d: str) -> None:
    compose = compose_client(d)
    env = {"PAPERLAB_IMAGE": IMAGE, "PAPERLAB_REDIS_IMAGE": redis_image(d), "PAPERLAB_PORT": str(PORT),
           "PAPERLAB_JOB_STALE_AFTER_S": "6", "COMPOSE_PROJECT_NAME": PROJECT}
    cmp = lambda *a, **k: sh(*compose, *a, env=env, **k)  # noqa: E731
    cmp("down", "-v", "--remove-orphans", check_rc=False)
    t = time.monotonic()
    cmp("up", "-d", "--no-build", "--scale", "worker=2")
    try:
        wait_page()
        cold = time.monotonic() - t  # from `compose up`
        summary["compose: cold start to first page (s)"] = round(cold, 1)
        t = time.monotonic()
        while True:
            code, h = healthz()
            if code == 200 and len(h["worker"].get("workers", [])) == 2:
                break
            if time.monotonic() - t > 120:
                raise CheckFailed(f"/healthz never listed 2 workers: {code} {h}")
            time.sleep(2)
        check(True, f"/healthz 200 with 2 workers answering on Redis ({', '.join(h['worker']['workers'])})")
        names = cmp("ps", "-q").split()
        workers = cmp("ps", "-q", "worker").split()
        check(len(workers) == 2, "2 worker containers")
        for cid in cmp("ps", "-q", "web").split() + workers:
            uids = processes_uid(d, cid)
            check(uids == {"1000"}, f"{sh(d, 'inspect', '-f', '{{.Name}}', cid).strip('/')}: every process has uid 1000")
        time.sleep(10)
        summary["compose: memory idle, all containers (MB)"] = mem_mb(d, names)
        c = client()
        summary["compose: quick job (s)"] = round(quick_job(c), 1)
        model_tab(c)
        load_test(d, names, "compose")
        kill_mid_job(d, c, workers)
    except Exception:
        print(subprocess.run([*compose, "logs", "--tail", "30"], env={**os.environ, **env}, capture_output=True,
                             text=True).stdout[-6000:], file=sys.stderr)
        raise
    finally:
        cmp("down", "-v", "--remove-orphans", check_rc=False)


def kill_mid_job(d: str, c, workers: list[str]) -> None:
    wait_idle(d, workers)  # a late log line of the load test must not pick the wrong victim (seen twice)
    before = {w: running(d, w) for w in workers}  # empty after wait_idle; kept so a stuck id is never chosen
    job = c.submit(*LONG, api_name="/kl_bandits_run")
    t = time.monotonic()
    victim = None
    while victim is None:
        # the victim is the worker running a task id it was not running before: chosen by the task it holds,
        # not by how many "received" lines its log has (a late line of the load test picked the wrong one)
        victim = next((w for w in workers if running(d, w) - before[w]), None)
        if time.monotonic() - t > 60:
            raise CheckFailed("no worker received the long job within 60 s")
        time.sleep(0.5)
    other = next(w for w in workers if w != victim)
    time.sleep(3)
    sh(d, "kill", victim)
    log(f"killed worker {victim[:12]} (SIGKILL) 3 s into the job")
    other_before = received(d, other)
    messages: list[str] = []
    outcome = None
    while not job.done():
        for p in (job.status().progress_data or []):
            if p.desc and p.desc not in messages:
                messages.append(p.desc)
        if time.monotonic() - t > 240:
            raise CheckFailed(f"the killed job neither finished nor failed within 240 s (messages {messages[-5:]})")
        time.sleep(0.3)
    try:
        outcome = "succeeded: " + job.result()[3][:80]
    except Exception as e:  # noqa: BLE001 - the job's error message is the outcome
        outcome = f"failed: {e}"
    told = [m for m in messages if "stopped responding" in m] + ([outcome] if "stopped responding" in outcome else [])
    check(bool(told), f"the job whose worker was killed is reported clearly: {told[0] if told else messages[-3:]!r}")
    log(f"... and then {outcome}")
    summary["compose: killed worker's job"] = f"{told[0]} -> {outcome.split(':')[0]}"
    check(sh(d, "inspect", "-f", "{{.State.Running}}", victim) == "false", "the killed worker stays down")
    quick_job(c, "next job after the kill")
    check(received(d, other) > other_before, "the other worker served the jobs after the kill")
    code, h = healthz()
    check(code == 200 and len(h["worker"]["workers"]) == 1, f"/healthz lists the 1 surviving worker ({h['worker']['workers']})")


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stopped: clean up containers, write the summary
    mode = (argv or ["all"])[0]
    if mode not in ("space", "compose", "all"):
        die(1, f"unknown mode {mode!r}: space, compose or all")
    check_release()
    secrets = pip_secrets()
    d = docker_client()
    t0 = time.monotonic()
    try:
        build(d, secrets)
        if mode in ("space", "all"):
            space_check(d)
        if mode in ("compose", "all"):
            compose_check(d)
    except CheckFailed as e:
        print(f"\ndocker-check FAILED: {e}", file=sys.stderr)
        return 1
    except Exception as e:  # an app error through gradio_client, a timeout: a failed check too, with its cause
        print(f"\ndocker-check FAILED: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    finally:
        summary["check total (s)"] = round(time.monotonic() - t0)
        OUT.mkdir(parents=True, exist_ok=True)
        (OUT / "summary.json").write_text(json.dumps(summary, indent=1))
        print("\n" + "\n".join(f"  {k}: {v}" for k, v in summary.items()))
    log(f"docker-check {mode}: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
