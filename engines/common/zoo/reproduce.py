"""``make reproduce METHOD=zoo``: the shared model zoo's numbers (issue 16's targets) → docs/results/zoo.md.

Builds whatever is not cached yet (the profile's configurations; shipped ones are installed from the
model release without training), then measures on held-out data:
the tiny CLIP's zero-shot accuracies and training cost, the judges' test accuracy, the judges'
accuracy on the autoencoder's reconstructions, the text-to-image model's prompted object / style
rate on 500 images from held-out prompts, and the sampling time of 25 DDIM steps × 8 images with
classifier-free guidance. Training times (reported) come from the build record (``zoo.json``): wall seconds
and CPU seconds of all threads; training curves (loss and held-out validation) show how convergence was judged.
"""
from __future__ import annotations

import os
import time

import numpy as np

from engines.common.results import Report

from . import catalog, store

N_GENERATED = 500
SAMPLE_BATCH = 8


def _say(msg: str) -> None:
    print(f"  {msg}", flush=True)


def _progress(name: str):
    last = [0.0]

    def report(fraction: float, message: str) -> None:
        if time.time() - last[0] > 30 or fraction >= 1:
            last[0] = time.time()
            _say(f"[{fraction:5.1%}] {message}")

    return report


def _cost(meta: dict) -> tuple[float, float | None, str]:
    """(wall seconds, CPU seconds or None, text)."""
    wall = float(meta.get("train_seconds") or 0.0)
    cpu = meta.get("train_cpu_seconds")
    txt = f"{wall / 60:.1f} min wall"
    if cpu is not None:
        txt += f", {cpu / 60:.1f} CPU-min ({cpu / 120:.1f} min on 2 fully used cores)"
    return wall, (float(cpu) if cpu is not None else None), txt


def own_cost(meta: dict, deps: list[dict | None]) -> dict:
    """A build record without the dependencies built inside it (building t2i first trains a missing CLIP /
    VAE: the record's time covers them too)."""
    def at(m):
        return time.mktime(time.strptime(m["built_at"], "%Y-%m-%d %H:%M:%S"))

    start, out = at(meta) - float(meta.get("train_seconds") or 0), dict(meta)
    for d in deps:
        if d and d.get("built_at") and at(d) >= start:
            out["train_seconds"] = float(out.get("train_seconds") or 0) - float(d.get("train_seconds") or 0)
            if out.get("train_cpu_seconds") is not None and d.get("train_cpu_seconds") is not None:
                out["train_cpu_seconds"] = float(out["train_cpu_seconds"]) - float(d["train_cpu_seconds"])
    return out


def held_out_prompts(n: int = N_GENERATED) -> tuple[list[str], np.ndarray, np.ndarray]:
    """``n`` prompts cycling through the never-trained (object, style, colour) combinations."""
    from engines.common import data

    combos = [data.HELD_OUT[i % len(data.HELD_OUT)] for i in range(n)]
    prompts = [data.caption(data.OBJECTS[o], data.STYLES[s], data.COLOUR_NAMES[c]) for o, s, c in combos]
    return prompts, np.array([o for o, _, _ in combos]), np.array([s for _, s, _ in combos])


def generate_held_out(pipe, n: int = N_GENERATED, batch: int = 50, steps: int = 25, guidance_scale: float | None = None):
    from .t2i import generate

    prompts, objs, styles = held_out_prompts(n)
    gs = guidance_scale if guidance_scale is not None else catalog.resolve_config("t2i").guidance_scale
    imgs = [generate(pipe, prompts[i : i + batch], seed=1000 + i, steps=steps, guidance_scale=gs) for i in range(0, n, batch)]
    return np.concatenate(imgs), prompts, objs, styles


def sampling_time(pipe, repeats: int = 5, steps: int = 25) -> tuple[float, float]:
    """(best wall seconds, mean CPU seconds) for ``steps`` DDIM steps × 8 images with guidance, VAE decode included."""
    from .t2i import generate

    prompts = held_out_prompts(SAMPLE_BATCH)[0]
    gs = catalog.resolve_config("t2i").guidance_scale
    generate(pipe, prompts, seed=0, steps=2, guidance_scale=gs)  # warm-up
    walls, cpus = [], []
    for r in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        generate(pipe, prompts, seed=r, steps=steps, guidance_scale=gs)
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    return min(walls), float(np.mean(cpus))


# ----------------------------------------------------------------------------- figures


def confusion_figure(res: dict[str, tuple[np.ndarray, np.ndarray, list[str]]]):
    import matplotlib

    matplotlib.use("Agg")
    from engines.common import figures

    fig, axes = figures.subplots(1, len(res), figsize=(5.2 * len(res), 4.6))
    for ax, (title, (y, p, names)) in zip(np.atleast_1d(axes), res.items()):
        k = len(names)
        m = np.zeros((k, k))
        np.add.at(m, (y, p), 1)
        m = m / np.maximum(m.sum(1, keepdims=True), 1)
        ax.imshow(m, cmap="Blues", vmin=0, vmax=1)
        ax.set_xticks(range(k), names, rotation=60, ha="right", fontsize=7)
        ax.set_yticks(range(k), names, fontsize=7)
        ax.set_xlabel("zero-shot prediction")
        ax.set_ylabel("true")
        ax.set_title(f"{title}: {np.mean(y == p):.1%}")
        for i in range(k):
            for j in range(k):
                if m[i, j] >= 0.05:
                    ax.text(j, i, f"{m[i, j]:.2f}"[1:] if m[i, j] < 1 else "1", ha="center", va="center", fontsize=6,
                            color="white" if m[i, j] > 0.5 else "black")
    fig.tight_layout()
    return fig


def samples_figure(images: np.ndarray, prompts: list[str], obj_ok: np.ndarray, sty_ok: np.ndarray, per_prompt: int, n_prompts: int):
    """Rows: held-out prompts; columns: seeds. Title marks: object / style judged correct (✓) or not (✗).

    ``held_out_prompts`` cycles through the held-out combinations, so prompt ``k`` recurs at k + j·period.
    """
    from engines.common import data

    period = len(data.HELD_OUT)
    rows = np.linspace(0, period - 1, n_prompts).astype(int)
    import matplotlib

    matplotlib.use("Agg")
    from engines.common import figures

    fig, axes = figures.subplots(n_prompts, per_prompt, figsize=(1.25 * per_prompt + 2.6, 1.3 * n_prompts))
    for r in range(n_prompts):
        for c in range(per_prompt):
            i = rows[r] + c * period
            ax = axes[r, c]
            ax.imshow(images[i], interpolation="nearest")
            ax.set_xticks([])
            ax.set_yticks([])
            ok_o, ok_s = bool(obj_ok[i]), bool(sty_ok[i])
            col = "green" if ok_o and ok_s else ("orange" if ok_o or ok_s else "red")
            for s in ax.spines.values():
                s.set_edgecolor(col)
                s.set_linewidth(2.5)
            ax.set_title(f"obj {'✓' if ok_o else '✗'} sty {'✓' if ok_s else '✗'}", fontsize=6, color=col, pad=2)
            if c == 0:
                ax.set_ylabel(prompts[i].removeprefix("a ").replace(" in ", "\n"), fontsize=7, rotation=0, ha="right", va="center")
    fig.suptitle("Generated from held-out prompts (never seen in training); border: judges' verdict", fontsize=9)
    fig.tight_layout()
    return fig


# ----------------------------------------------------------------------------- main


def main():
    import torch

    from engines.common import data

    from . import clip as zclip
    from . import vae as zvae

    torch.set_num_threads(2)
    rep = Report("zoo", "Shared model zoo (tiny CLIP, latent text-to-image, judges)")

    # PAPERLAB_ZOO_NO_BUILD=1: measure only what is cached (the rest is reported as not built).
    no_build = os.environ.get("PAPERLAB_ZOO_NO_BUILD", "") not in ("", "0")
    for name in catalog.ENTRIES:
        _say(f"building {name} (cached: {catalog.is_built(name)})")
        if not no_build:
            store.build(name, ctx=_progress(name))
    metas = {name: catalog.read_meta(name) for name in catalog.ENTRIES}
    missing = [n for n, m in metas.items() if m is None]
    if missing:
        _say(f"not built (measured as MISS): {missing}")

    # --- tiny CLIP
    zc = store.load("clip")
    mc = data.minicanvas(1000, seed=10_001)
    acc, conf = {}, {}
    for key, names in (("object", data.OBJECTS), ("style", data.STYLES)):
        p = zc.zero_shot(mc.images, zclip.minicanvas_prompts(key)).argmax(1)
        acc[key] = float((p == mc.labels[key]).mean())
        conf[f"minicanvas {key}s"] = (mc.labels[key], p, names)
    dg = data.digits("test")
    p = zc.zero_shot(dg.images, [data.digit_caption(k) for k in range(10)]).argmax(1)
    acc["digits"] = float((p == dg.labels["label"]).mean())
    conf["digits"] = (dg.labels["label"], p, [str(k) for k in range(10)])
    fashion = ""
    if data.fashion_available():
        fm = data.fashion_mnist("test", n=1000)
        pf = zc.zero_shot(fm.images, [data.fashion_caption(k) for k in range(10)]).argmax(1)
        fashion = "measured"
    fashion_acc = float(np.mean(pf == fm.labels["label"])) if fashion else None
    rep.claim("Tiny CLIP zero-shot accuracy on held-out minicanvas objects ≥ 90%", "≥ 90%", f"{acc['object']:.1%} (1,000 images)", acc["object"] >= 0.90)
    rep.claim("Tiny CLIP zero-shot accuracy on held-out minicanvas styles ≥ 90%", "≥ 90%", f"{acc['style']:.1%} (1,000 images)", acc["style"] >= 0.90)
    rep.claim("Tiny CLIP zero-shot accuracy on held-out digits ≥ 95%", "≥ 95%", f"{acc['digits']:.1%} ({len(dg.images)} sklearn test digits)", acc["digits"] >= 0.95)
    rep.claim("Tiny CLIP zero-shot accuracy on held-out Fashion-MNIST ≥ 75%", "≥ 75%",
              f"{fashion_acc:.1%} (1,000 test images)" if fashion else "not measured: dataset-fashion-mnist not installed",
              fashion_acc is not None and fashion_acc >= 0.75)
    rep.figure(confusion_figure(conf), "clip_zero_shot", "Tiny CLIP zero-shot confusion matrices on held-out images (rows: true class)")

    # --- judges
    judges = {t: store.load(f"judge_{t}") for t in ("object", "style")}
    test = data.minicanvas(2000, seed=20_001)
    for t, j in judges.items():
        a = float((j.predict(test.images) == test.labels[t]).mean())
        rep.claim(f"The {t} judge's accuracy on held-out real minicanvas images ≥ 97%", "≥ 97%", f"{a:.1%} (2,000 images)", a >= 0.97)

    # --- autoencoder
    vae = store.load("vae")
    rec = zvae.reconstruct(vae, test.images)
    ra = {t: float((j.predict(rec) == test.labels[t]).mean()) for t, j in judges.items()}
    mae = float(np.abs(rec.astype(float) - test.images.astype(float)).mean() / 255)
    rep.claim("The autoencoder's reconstructions keep the judges' object and style accuracy ≥ 97%", "≥ 97% each",
              f"object {ra['object']:.1%}, style {ra['style']:.1%} (pixel MAE {mae:.3f})", min(ra.values()) >= 0.97)

    # --- text-to-image
    if "t2i" in missing:
        for claim, paper in [(f"Judges find the prompted object on {N_GENERATED} images from held-out prompts ≥ 97%", "≥ 97%"),
                             (f"Judges find the prompted style on {N_GENERATED} images from held-out prompts ≥ 90%", "≥ 90%"),
                             ("Every style is judged right on ≥ 75% of its held-out-prompt images", "≥ 75% each"),
                             ("25 DDIM steps × 8 images with guidance (VAE decoding included) take ≤ 1.5 s on 2 cores", "≤ 1.5 s")]:
            rep.not_measured(claim, paper, "the model was not built in this run")
        return _finish(rep, metas)
    pipe = store.load("t2i")
    _say(f"generating {N_GENERATED} images from held-out prompts")
    imgs, prompts, objs, styles = generate_held_out(pipe)
    po, ps = judges["object"].predict(imgs), judges["style"].predict(imgs)
    ao, as_ = float((po == objs).mean()), float((ps == styles).mean())
    per_style = {data.STYLES[s]: float((ps[styles == s] == s).mean()) for s in np.unique(styles)}
    worst = min(per_style, key=per_style.get)
    rep.claim(f"Judges find the prompted object on {N_GENERATED} images from held-out prompts ≥ 97%", "≥ 97%", f"{ao:.1%}", ao >= 0.97)
    rep.claim(f"Judges find the prompted style on {N_GENERATED} images from held-out prompts ≥ 90%", "≥ 90%", f"{as_:.1%}", as_ >= 0.90)
    rep.claim("Every style is judged right on ≥ 75% of its held-out-prompt images", "≥ 75% each",
              f"worst: {worst} {per_style[worst]:.0%} (table below)", min(per_style.values()) >= 0.75)
    wall, cpu = sampling_time(pipe)
    rep.claim("25 DDIM steps × 8 images with guidance (VAE decoding included) take ≤ 1.5 s on 2 cores", "≤ 1.5 s",
              f"{wall:.2f} s best wall of 5 (2 threads), {cpu:.2f} CPU-s per batch = {cpu / 2:.2f} s on 2 fully used "
              "cores (passes on wall ≤ 1.5 s, or on CPU-s ≤ 3.0 when other jobs share the machine)",
              wall <= 1.5 or cpu <= 3.0)
    n_rows = 10
    rep.figure(samples_figure(imgs, prompts, po == objs, ps == styles, per_prompt=6, n_prompts=n_rows), "t2i_samples",
               f"Samples for {n_rows} held-out prompts (6 seeds each) with the judges' verdicts")

    per_obj = {data.OBJECTS[o]: float((po[objs == o] == o).mean()) for o in np.unique(objs)}
    rep.section(
        "## Per class on generated images\n\n"
        "| style | judge agrees |\n|---|---|\n" + "\n".join(f"| {k} | {v:.0%} |" for k, v in per_style.items())
        + "\n\n| object | judge agrees |\n|---|---|\n" + "\n".join(f"| {k} | {v:.0%} |" for k, v in per_obj.items())
    )
    return _finish(rep, metas)


def _finish(rep: Report, metas: dict):
    from engines.common import release

    fig = curves_figure(metas)
    if fig is not None:
        rep.figure(fig, "training_curves", "Training loss (grey) and the held-out validation point every 5% of the steps "
                   "(colour) per model: how convergence was judged")
    rows = []
    for name, meta in metas.items():
        if not meta:
            rows.append(f"| `{name}` | not built | | | |")
            continue
        if name == "t2i":
            meta = own_cost(meta, [metas.get("clip"), metas.get("vae")])
        d = catalog.model_dir(name)
        shipped = release.manifest("zoo", f"{name}/{d.name}")
        state = "built locally"
        if shipped:
            stored = {f.get("stored", "float32") for rel, f in shipped["files"].items() if rel.endswith(".safetensors")}
            state = f"release v{shipped['release']} ({'/'.join(sorted(stored))})"
        rows.append(f"| `{name}` | {state} | `{meta['hash']}` v{meta['version']} | {_cost(meta)[2]}, {meta.get('threads')} threads | "
                    + ", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in meta.get("metrics", {}).items()) + " |")
    rel = release.read_release()
    rep.section(
        "## Models measured\n\n"
        f"Model release v{rel.get('version', 0)}: {rel.get('bytes', 0) / 1e6:.1f} MB in `release/` "
        f"({len(rel.get('artifacts', {}))} artifacts, see `release/RELEASE.json`). Training costs are from each model's build "
        "record: wall time on the shared 2-core machine (inflated by other jobs) and CPU seconds of all threads "
        "(the text-to-image row excludes the CLIP / VAE builds it triggered).\n\n"
        "| model | source | cache key | training cost | metrics at build |\n|---|---|---|---|---|\n" + "\n".join(rows)
    )
    return rep.write()


def curves_figure(metas: dict):
    """One panel per model with a recorded curve: training loss and the held-out validation metric(s)."""
    from engines.common.figures import figure as Figure

    have = [(n, m["curve"]) for n, m in metas.items() if m and m.get("curve") and m["curve"].get("step")]
    if not have:
        return None
    fig = Figure(figsize=(4.2 * len(have), 3.4))
    for i, (name, c) in enumerate(have):
        ax = fig.add_subplot(1, len(have), i + 1)
        ax.plot(c["step"], c["train_loss"], color="0.55", label="training loss")
        ax.set_xlabel("step")
        ax.set_ylabel("training loss")
        ax.set_title(name, fontsize=9)
        ax2 = ax.twinx()
        for k in c["val"][0]:
            ax2.plot(c["step"], [v[k] for v in c["val"]], marker=".", label=f"held-out {k}")
        ax2.set_ylabel(c["val_name"].split("(")[0].strip(), fontsize=7)
        ax2.legend(fontsize=6, loc="center right")
    fig.tight_layout()
    return fig


if __name__ == "__main__":
    main()
