"""Figures and animations: ζ fields side by side (GIF and a time-slider frame), error / correlation / mass
curves, training losses, the rotate-the-input comparison, benchmark bars."""
from __future__ import annotations

import io

import numpy as np
from engines.common.figures import subplots

COLORS = {"solver": "black", "p1": "tab:red", "p1_M": "tab:orange", "p4m": "tab:blue", "p4m_M": "tab:green"}
LABELS = {"solver": "solver", "p1": "p1/∅", "p1_M": "p1/M", "p4m": "p4m/∅", "p4m_M": "p4m/M"}


def _safe(a: np.ndarray) -> np.ndarray:
    return np.nan_to_num(np.asarray(a, dtype=np.float64), nan=0.0, posinf=0.0, neginf=0.0)


def _lim(ref: np.ndarray) -> float:
    dev = _safe(ref) - _safe(ref).mean()
    return float(max(np.abs(dev).max(), 1e-6))


def animation_gif(fields: np.ndarray, names: list[str], scale: int | None = None, every: int = 1) -> bytes:
    """fields: (V, T+1, N, N) with row 0 the solver. One labelled panel per model, frames over time."""
    import matplotlib
    from PIL import Image, ImageDraw

    cmap = matplotlib.colormaps["RdBu_r"]
    f = _safe(fields)
    f = f - f[0, 0].mean()
    lim = _lim(fields[0])
    scale = scale or max(4, 150 // f.shape[-1])
    n = f.shape[-1] * scale
    pad, top = 4, 16
    frames = []
    for t in range(0, f.shape[1], every):
        canvas = Image.new("RGB", (len(names) * (n + pad) + pad, n + top + pad), "white")
        draw = ImageDraw.Draw(canvas)
        for i, name in enumerate(names):
            rgb = (cmap(np.clip(0.5 + 0.5 * f[i, t] / lim, 0, 1))[..., :3] * 255).astype(np.uint8)
            img = Image.fromarray(rgb).resize((n, n), Image.NEAREST)
            x0 = pad + i * (n + pad)
            canvas.paste(img, (x0, top))
            draw.text((x0, 2), f"{LABELS.get(name, name)}  t={t}", fill="black")
        frames.append(canvas)
    buf = io.BytesIO()
    frames[0].save(buf, format="GIF", save_all=True, append_images=frames[1:], duration=120, loop=0)
    return buf.getvalue()


def frame_figure(fields: np.ndarray, names: list[str], t: int):
    """Row 1: ζ − mean at step t per model; row 2: |model − solver|."""

    f = _safe(fields)
    f = f - f[0, 0].mean()
    t = int(np.clip(t, 0, f.shape[1] - 1))
    lim = _lim(fields[0])
    v = len(names)
    fig, axes = subplots(2, v, figsize=(2.3 * v, 4.9), squeeze=False)
    errmax = lim  # errors on the scale of ζ itself (a diverging model saturates instead of hiding the others)
    for i, name in enumerate(names):
        ax = axes[0, i]
        im = ax.imshow(f[i, t], cmap="RdBu_r", vmin=-lim, vmax=lim)
        ax.set_title(f"{LABELS.get(name, name)}", fontsize=10, color=COLORS.get(name, "black"))
        ax2 = axes[1, i]
        if i == 0:
            ax2.axis("off")
            ax2.text(0.5, 0.5, f"step {t}\n(×2.0 time units)\n\nrow 2: |model − solver|", ha="center",
                     va="center", fontsize=9, transform=ax2.transAxes)
        else:
            im2 = ax2.imshow(np.abs(f[i, t] - f[0, t]), cmap="magma", vmin=0, vmax=errmax)
        for a in (ax, ax2):
            a.set_xticks([])
            a.set_yticks([])
    fig.colorbar(im, ax=axes[0, :].tolist(), shrink=0.8, label="ζ − mean")
    if v > 1:
        fig.colorbar(im2, ax=axes[1, :].tolist(), shrink=0.8, label="|error| (saturates at max |ζ − mean|)")
    return fig


def curves_figure(res: dict):
    """NRMSE(ζ), correlation with the solver (threshold and correlation time marked), mass drift."""

    fig, axes = subplots(1, 3, figsize=(13, 3.4))
    steps = np.arange(res["horizon"] + 1)
    for v in res["variants"]:
        c = COLORS[v]
        axes[0].plot(steps, res["nrmse"][v], color=c, label=LABELS[v])
        axes[1].plot(steps, res["corr"][v], color=c, label=f"{LABELS[v]} (τ = {res['corr_time'][v]:g})")
        axes[2].semilogy(steps, np.maximum(res["mass"][v], 1e-12), color=c, label=LABELS[v])
    axes[2].semilogy(steps, np.maximum(res["mass"]["solver"], 1e-12), color="black", ls=":", label="solver")
    axes[1].axhline(res["threshold"], color="gray", ls="--", lw=1)
    axes[0].set(title=f"NRMSE of {res.get('shown', 'ζ')}", xlabel="surrogate step")
    axes[1].set(title=f"correlation with the solver (τ: steps > {res['threshold']:g})", xlabel="surrogate step",
                ylim=(min(-0.05, min(min(x) for x in res["corr"].values())), 1.02))
    if res.get("conserved", "mass") == "mass":
        axes[2].set(title="relative mass drift |Σζ_t − Σζ_0| / Σ|ζ_0|", xlabel="surrogate step", ylim=(1e-12, 10))
    else:
        axes[2].set(title="momentum drift (|Δū| + |Δv̄|) / rms speed", xlabel="surrogate step", ylim=(1e-12, 10))
    for a in axes:
        a.grid(alpha=0.3)
        a.legend(fontsize=8)
    fig.tight_layout()
    return fig


def loss_figure(records: list[dict]):

    fig, ax = subplots(figsize=(7, 3.4))
    for r in records:
        v = r["variant"]
        lo = np.asarray(r["losses"])
        k = max(1, len(lo) // 50)
        sm = np.convolve(lo, np.ones(k) / k, mode="valid")
        ax.semilogy(np.arange(len(sm)) + k, sm, color=COLORS[v], label=f"{LABELS[v]} train ({r['params']} params)")
        if r["val"]:
            s, val = zip(*r["val"])
            ax.semilogy(s, val, "o--", color=COLORS[v], ms=3, lw=1)
    ax.set(xlabel="optimizer step", ylabel="one-step MSE (normalised)", title="training loss (dashed: validation)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def rotate_figure(panels: dict, element: str, steps: int, field: str = "ζ"):
    """Per variant: G(x), G(g·x), g·G(x) and |G(g·x) − g·G(x)| after ``steps`` surrogate steps."""

    names = list(panels)
    fig, axes = subplots(len(names), 4, figsize=(9.5, 2.35 * len(names)), squeeze=False)
    ref = panels[names[0]]["Gx"]
    lim = max(float(np.abs(_safe(ref) - _safe(ref).mean()).max()), 1e-6)
    titles = ["G(x): original input", f"G(g·x): input {element}", "g·G(x): output transformed", "|G(g·x) − g·G(x)|"]
    for r, v in enumerate(names):
        p = panels[v]
        mean = float(_safe(p["Gx"]).mean())
        for c, k in enumerate(("Gx", "Ggx", "gGx")):
            axes[r, c].imshow(_safe(p[k]) - mean, cmap="RdBu_r", vmin=-lim, vmax=lim)
        im = axes[r, 3].imshow(np.abs(_safe(p["Ggx"]) - _safe(p["gGx"])), cmap="magma", vmin=0, vmax=lim / 2)
        axes[r, 0].set_ylabel(f"{LABELS[v]}\nrel. err {p['error']:.1e}", color=COLORS[v], fontsize=10)
        for c in range(4):
            axes[r, c].set_xticks([])
            axes[r, c].set_yticks([])
            if r == 0:
                axes[r, c].set_title(titles[c], fontsize=9)
    fig.colorbar(im, ax=axes[:, 3].tolist(), shrink=0.6, label=f"|difference| (same scale as {field})")
    fig.suptitle(f"{field} after {steps} surrogate steps: equivariant models commute with the symmetry", fontsize=10)
    return fig


def benchmark_figure(res: dict):

    fig, axes = subplots(1, 2, figsize=(11, 3.6))
    steps = np.arange(len(next(iter(res["nrmse_curve"].values()))))
    for v in res["variants"]:
        axes[0].semilogy(steps, res["nrmse_curve"][v], color=COLORS[v], label=LABELS[v])
        axes[1].plot(steps, res["corr_curve"][v], color=COLORS[v], label=LABELS[v])
    axes[1].axhline(0.8, color="gray", ls="--", lw=1)
    tr = res.get("train_frames")
    for a in axes:
        if tr:
            a.axvline(tr, color="gray", ls=":", lw=1)
        a.grid(alpha=0.3)
        a.legend(fontsize=8)
        a.set_xlabel("surrogate step (dotted: training trajectory length)")
    fld = "ω" if res.get("problem") == "ins" else "ζ"
    axes[0].set_title(f"median NRMSE of {fld} over held-out ICs and seeds")
    axes[1].set_title("median correlation with the solver")
    fig.tight_layout()
    return fig
