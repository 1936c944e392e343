"""Per-entry cancellation: start a registered entry point, set its cancel flag once it runs, time the stop.

The job runs the way the job backends run it: ``registry.run`` (parameter validation, the entry, the
JSON result) with a ``LocalContext`` whose cancel flag the test sets, in a thread of this process (the
inline backend; the Celery task wraps the same call in a ``CeleryContext`` whose ``cancelled()``
reads the flag from the result backend at most every 0.25 s, so its stop time is this one + ≤ 0.25 s).

``CASES`` names every entry of the registry: parameters that make it run well beyond the bound
(realistic, small models of the test profile), or ``bounded=...`` for an entry without a long loop
(it must finish within the bound). A registry entry missing here fails the test, so a new method is
covered or fails loudly.

    python -m tests.reliability.cancel_entries [method[:entry] ...]   # every case, one table
"""
from __future__ import annotations

import os
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

CANCEL_BOUND_S = 10.0  # the bound for "cancelled"


@dataclass(frozen=True)
class Case:
    params: dict | Callable[[], dict] = field(default_factory=dict)
    # Seconds the job runs inside its loop (after its first progress above ``after``) before the flag is set.
    settle_s: float = 1.0
    # The progress fraction the loop starts at (a model load before it reports below it).
    after: float = 0.0
    # The flag is set at the latest this long after the start (a job that reports no progress at all).
    cancel_by_s: float = 60.0
    # Not a long loop: the reason; the job must then finish (or stop) within the bound.
    bounded: str | None = None
    # Run in `make test` (cheap to start); the others run in `make cancel` (PAPERLAB_CANCEL_TESTS=1).
    quick: bool = False
    # Cannot run here (the reason); reported as a skip.
    skip: str | None = None
    # A miss found and not fixed yet (the reason): the test is an expected failure until it is.
    known_miss: str | None = None
    # Run to completion before the job starts, untimed (e.g. the build an entry needs first).
    prepare: Callable[[], Any] | None = None


# --------------------------------------------------------------------------- parameters needing set-up


def _zap_step() -> dict:
    from engines.zapformat.workloads import WORKLOADS

    w = WORKLOADS["orders"]
    return {"grammar_kind": w.kind, "grammar": w.source, "target": max(w.instances(20), key=len), "passes": 3}


def _zap_generate() -> dict:
    from engines.zapformat.workloads import WORKLOADS

    w = WORKLOADS["orders"]
    return {"grammar_kind": w.kind, "grammar": w.source, "samples": 16, "max_new_tokens": 256}


def _saeuron_built() -> None:
    from engines import registry

    registry.run("saeuron", "build", {})  # cached after the first time


def _pde_trained() -> None:
    from engines import registry

    registry.run("pde_staggered", "train", {})  # the surrogates rotate uses (cached after the first time)


def _emloc_loaded() -> None:
    from engines.emloc import release

    release.load()  # the test profile trains its micro model here (cached after the first time)


def _audio_click() -> dict:
    import numpy as np

    from engines.object_audio import images as I
    from engines.object_audio import scenes as S

    sc = S.make_scenes(1, seed=3, min_objects=2, p_silent=0.0)
    iid = I.store(sc.images[0], sc.kinds[0], sc.masks[0])
    ys, xs = np.nonzero(sc.masks[0][0])
    return {"image_id": iid, "clicks": [(float(xs[0]), float(ys[0]), 1)], "steps": 200}


CASES: dict[str, Case] = {
    "zapformat:step_through": Case(_zap_step, bounded="replays one target (≤ 4,000 characters) token by token: ~2 s"),
    # The first load converts SmolLM2 from its GGUF file (about a minute on a busy machine; no check inside).
    "zapformat:generate": Case(_zap_generate, after=0.09, cancel_by_s=300),
    "zapformat:benchmark": Case({"instances": 50}),
    "dpsdp:transcript": Case({"turns": 8}, quick=True, bounded="one problem, ≤ 8 turns of a tiny GPT-2 pair: < 1 s"),
    "dpsdp:tree": Case({}, quick=True, bounded="one problem's tree (4 × 4 × 4 samples): < 1 s"),
    "dpsdp:evaluate": Case({"n_problems": 2000, "turns": 8}),
    "dpsdp:train": Case({"preset": "full"}),  # the test profile's "full" is the quick recipe (minutes)
    # SmolLM2 (converted from its GGUF file on first use: ~1 min) prompted as actor and critic; LoRA DPSDP job.
    "dpsdp:chat": Case({"turns": 8, "max_new_tokens": 512}, after=0.05, cancel_by_s=300),
    "dpsdp:lora": Case({"n_problems": 20, "k": 4, "m": 4, "steps": 100}, after=0.05, cancel_by_s=300),
    "pde_staggered:train": Case({}),
    "pde_staggered:rollout": Case({}),
    # With the surrogates trained (the train case covers cancelling that), rotate is two short rollouts per
    # variant; whether it trained first depended on which test ran before it (CI: 1.1 s, finished).
    "pde_staggered:rotate": Case({"steps": 50}, prepare=_pde_trained, quick=True,
                                 bounded="two rollouts of ≤ 50 surrogate steps per variant once trained: ~1-3 s"),
    "pde_staggered:benchmark": Case({}, quick=True),
    "fdgen:train_and_sample": Case({}),
    "fdgen:lambda_sweep": Case({}, quick=True),
    "multinoulli:compare": Case({"T": 500, "batch": 4}, quick=True),
    "multinoulli:sweep": Case({}, quick=True),
    "l2d:solve": Case({}, bounded="one problem (claim: < 1 s at N = 8 once the models are loaded)"),
    "l2d:benchmark": Case({}, quick=True),
    "l2d:real_model": Case({}, after=0.02),
    "cl_angles:angle_run": Case({}),
    "cl_angles:angle_sweep": Case({}, quick=True),
    "cl_angles:angle_bins": Case({}),
    "cl_angles:buffer_selection": Case({}, quick=True),
    # The heuristic agent's episode takes ~1 s; the SmolLM2 agent generates up to 256 tokens a turn.
    "syncmind:episode": Case({"agent": "smollm2", "max_turns": 100, "total_budget": 10000.0,
                              "llm": {"max_new_tokens": 256}}, after=0.02, cancel_by_s=40),
    "syncmind:batch": Case({}, quick=True),
    "syncmind:build": Case({}),
    "poisonedeye:craft": Case({}),
    "poisonedeye:benchmark": Case({}),
    "fedag:federate": Case({}),
    # One episode, the flag checked between chunks (the test profile's micro model: ~3 s at 256 demonstrations).
    "emloc:build_memory": Case({"shots": 256, "chunk_size": 1, "queries": 200}, prepare=_emloc_loaded, quick=True,
                               bounded="one episode of ≤ 256 demonstrations, the flag checked between chunks"),
    "emloc:benchmark": Case({"episodes": 1000}, quick=True),
    "kl_bandits:regret_curves": Case({"horizon": 50000, "seeds": 10}, quick=True),
    "kl_bandits:eta_sweep": Case({}, quick=True),
    # Loading SmolLM2 (converted from its GGUF file on first use: ~1 min on a busy machine) has no check.
    "kl_bandits:rlhf": Case({}, cancel_by_s=300),
    "moex:explore": Case({}),
    "moex:search": Case({}, bounded="a look-up in the analyses of the tab's models (once they are loaded)"),
    "moex:grid": Case({}, quick=True),
    "prototype:interpret": Case({}, bounded="one instruction (claim: round trip ≤ 2 s)"),
    "prototype:benchmark": Case({}),
    "prototype:specify": Case({}),
    "slug:unlearn": Case({}),
    "slug:unlearn_t2i": Case({}),
    # Built once per setting (cached): a setting the other cases do not use, so that it really trains.
    "saeuron:build": Case({"epochs": 3, "colours": 2}),
    "saeuron:erase": Case({"concepts": [{"concept": "striped", "gamma": -20, "top_m": 8}], "n_images": 8, "steps": 50},
                          prepare=_saeuron_built),
    "saeuron:benchmark": Case({}, prepare=_saeuron_built),
    "tailopt:compare": Case({}, quick=True),
    "tailopt:noise_probe": Case({"probes": 5000, "workers": 64, "batch": 512}, quick=True),
    "tailopt:equivalence": Case({"rounds": 200, "local_steps": 50}),
    "object_audio:click": Case(_audio_click),
    "object_audio:train": Case({"force": True}),
    "object_audio:benchmark": Case({}),
    "rose:forecast": Case({"few_shot_steps": 2000}),
    "rose:mask_view": Case({}, bounded="one rFFT masking of one series", quick=True),
    "rose:pretrain": Case({}, quick=True),
    "rose:ablation": Case({}),
    "zoo:build": Case({"name": "clip", "force": True}),
}


def registry_entries() -> list[str]:
    from engines import registry

    return [f"{m.id}:{name}" for m in registry.available() + registry.INTERNAL for name in m.entries]


@dataclass
class Outcome:
    key: str
    outcome: str  # "cancelled" (JobCancelled), "returned" (result after the flag), "finished" (before it), "error", "running"
    started_s: float = float("nan")   # start → first progress above the case's ``after``
    cancel_at_s: float = float("nan")  # start → flag set
    stop_s: float = float("nan")       # flag set → the entry returned or raised
    total_s: float = float("nan")      # start → the entry returned or raised
    fraction: float = 0.0              # progress when the flag was set
    message: str = ""
    error: str = ""


def run_case(key: str, case: Case, bound_s: float = CANCEL_BOUND_S, grace_s: float = 20.0) -> Outcome:
    """Start the entry, set the flag ``settle_s`` into its loop, wait up to ``bound_s + grace_s`` for it to stop."""
    from engines import registry
    from engines.common.context import JobCancelled, LocalContext
    from engines.common.params import validate

    method, entry = key.split(":")
    if case.prepare is not None:
        case.prepare()
    params = case.params() if callable(case.params) else dict(case.params)
    clean = validate(registry.params_model(method, entry), params).model_dump(mode="json")
    first: list[float] = []
    last: dict[str, Any] = {"fraction": 0.0, "message": ""}

    def sink(fraction: float, message: str, preview: dict | None) -> None:
        if fraction > case.after and not first:
            first.append(time.monotonic())
        last["fraction"] = fraction
        if message:
            last["message"] = message

    cancel = threading.Event()
    ctx = LocalContext(on_progress=sink, cancel_event=cancel)
    done: dict[str, Any] = {}

    def work() -> None:
        try:
            registry.run(method, entry, clean, ctx)
            done["outcome"] = "returned"
        except JobCancelled:
            done["outcome"] = "cancelled"
        except Exception as e:  # noqa: BLE001 - reported
            done["outcome"] = "error"
            done["error"] = f"{type(e).__name__}: {e}"[:300]
        done["t"] = time.monotonic()

    t0 = time.monotonic()
    th = threading.Thread(target=work, daemon=True, name=f"cancel-{key}")
    th.start()
    # Until it is inside its loop (first progress above 0, then settle_s more), or cancel_by_s.
    while th.is_alive():
        now = time.monotonic()
        if (first and now - first[0] >= case.settle_s) or now - t0 >= case.cancel_by_s:
            break
        time.sleep(0.02)
    out = Outcome(key, "running", started_s=(first[0] - t0) if first else float("nan"))
    if not th.is_alive():
        out.outcome = "finished" if done.get("outcome") == "returned" else done.get("outcome", "error")
        out.total_s = done["t"] - t0
        out.error = done.get("error", "")
        out.fraction, out.message = last["fraction"], last["message"]
        return out
    tc = time.monotonic()
    out.cancel_at_s, out.fraction, out.message = tc - t0, last["fraction"], last["message"]
    cancel.set()
    if os.environ.get("PAPERLAB_CANCEL_DEBUG"):  # where the job is 3 s after its flag (a slow stop)
        th.join(3.0)
        if th.is_alive():
            import traceback

            frame = sys._current_frames().get(th.ident)
            if frame is not None:
                sys.stderr.write("".join(traceback.format_stack(frame)[-12:]))
    th.join(bound_s + grace_s)
    if th.is_alive():
        out.stop_s = time.monotonic() - tc  # still running: at least this long
        return out
    out.outcome = done["outcome"]
    out.error = done.get("error", "")
    out.stop_s = done["t"] - tc
    out.total_s = done["t"] - t0
    return out


def check(out: Outcome, case: Case, bound_s: float = CANCEL_BOUND_S) -> str | None:
    """Why the outcome misses the target, or None."""
    if out.outcome == "error":
        return f"{out.key} failed: {out.error}"
    if out.outcome == "running":
        return (f"{out.key} still ran {out.stop_s:.1f} s after its cancel flag was set "
                f"(at {out.fraction:.0%}: {out.message!r}): its loop does not check ctx.cancelled()")
    if out.outcome == "finished":
        if case.bounded is None:
            return (f"{out.key} finished in {out.total_s:.1f} s before it could be cancelled: give its case "
                    "parameters that run longer, or mark it bounded=<reason>")
        if out.total_s > bound_s:
            return f"{out.key} is marked bounded but ran {out.total_s:.1f} s (bound {bound_s:.0f} s)"
        return None
    if out.stop_s > bound_s:
        return f"{out.key} stopped {out.stop_s:.1f} s after its cancel flag was set (bound {bound_s:.0f} s)"
    return None


def _fmt(x: float) -> str:
    return "" if x != x else f"{x:.2f}"


TSV_HEAD = "entry\toutcome\tfirst_progress_s\tcancel_at_s\tstop_s\ttotal_s\tfraction\tmessage\n"


def tsv_row(out: Outcome) -> str:
    msg = (out.error or out.message).replace("\t", " ").replace("\n", " ")[:100]
    return "\t".join([out.key, out.outcome, _fmt(out.started_s), _fmt(out.cancel_at_s), _fmt(out.stop_s),
                      _fmt(out.total_s), f"{out.fraction:.2f}", msg]) + "\n"


def main(argv: list[str]) -> int:
    os.environ.setdefault("PAPERLAB_PROFILE", "test")
    if "PAPERLAB_DATA_DIR" not in os.environ:
        import tempfile

        os.environ["PAPERLAB_DATA_DIR"] = tempfile.mkdtemp(prefix="paperlab-cancel-")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("MPLBACKEND", "Agg")
    keys = registry_entries()
    missing = [k for k in keys if k not in CASES]
    if missing:
        print("no case for:", ", ".join(missing))
    if argv:
        keys = [k for k in keys if any(k == a or k.split(":")[0] == a for a in argv)]
    bad = 0
    sys.stdout.write(TSV_HEAD)
    for k in keys:
        case = CASES.get(k)
        if case is None:
            continue
        if case.skip:
            sys.stdout.write(f"{k}\tskipped\t\t\t\t\t\t{case.skip}\n")
            continue
        out = run_case(k, case)
        why = check(out, case)
        bad += why is not None
        sys.stdout.write(tsv_row(out))
        if why:
            sys.stdout.write(f"# MISS {why}\n")
        sys.stdout.flush()
        if out.outcome == "running":
            print("# stopping: a job that does not stop keeps its thread busy", flush=True)
            return 3
    return 1 if bad or missing else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
