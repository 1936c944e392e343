"""Tab: object-click audio — click an object, segmentation masks it, latent diffusion generates its sound.

Run standalone with ``python -m app.tabs.object_audio`` (inline jobs).
"""
from __future__ import annotations

import random
from functools import lru_cache

import gradio as gr

from engines.object_audio.params import MODE_LABELS, SEGMENTER_LABELS

from .. import worked_example
from ..bridge import JobRun, cancel_job

METHOD_ID = "object_audio"
GALLERY_SEEDS = [3, 11, 21, 42, 57, 88]
MODE_CHOICES = [(v, k) for k, v in MODE_LABELS.items()]
SEG_CHOICES = [(v, k) for k, v in SEGMENTER_LABELS.items()]


def _path(ref: str) -> str:
    from engines.common.artifacts import resolve
    from engines.common.settings import get_settings

    return str(resolve(get_settings().artifacts_dir, ref))


@lru_cache(maxsize=64)
def _scene(seed: int):
    from engines.object_audio import images, scenes

    sc = scenes.make_scenes(1, seed=int(seed), min_objects=2, max_objects=3, p_silent=0.3)
    iid = images.store(sc.images[0], sc.kinds[0], sc.masks[0])
    return iid, sc.images[0], sc.kinds[0]


@lru_cache(maxsize=1)
def example() -> dict:
    """The worked example shown on arrival: the first gallery scene, one include click inside its first sounding
    object (the pixel of its mask nearest the mask's centre), the tab's default sampling settings."""
    import numpy as np

    from engines.object_audio import scenes

    seed = GALLERY_SEEDS[0]
    sc = scenes.make_scenes(1, seed=seed, min_objects=2, max_objects=3, p_silent=0.3)
    j = sc.sounding(0)[0]
    ys, xs = np.nonzero(sc.masks[0][j])
    k = int(np.argmin((ys - ys.mean()) ** 2 + (xs - xs.mean()) ** 2))
    return dict(image_id=_scene(seed)[0], clicks=[(float(xs[k]), float(ys[k]), 1)], segmenter="flood", mode="mask",
                prompt="", cfg=2.0, steps=50, seed=0)


def clicks_text(clicks) -> str:
    return "; ".join(f"{int(x)},{int(y)},{int(lab)}" for x, y, lab in clicks)


def missing_models() -> str | None:
    """Why the example would have to train first (None when the tiny models are cached or released)."""
    from engines.common import release
    from engines.object_audio import train as T

    b, dc = T.default_configs("dot")
    miss = [d.name for d in (T.base_dir(b), T.pretrain_dir(b, dc), T.diffusion_dir(b, dc))
            if not (d / "meta.json").exists() and release.manifest(METHOD_ID, d.name) is None]
    if not miss:
        return None
    return ("the tiny audio models are neither trained nor in the release, and page loads never train. Press "
            "**Train models** under *Training and benchmark* (or run `make models MODELS=object_audio`), then "
            "reload the page.")


def render_click(r: dict) -> tuple:
    """(overlay, object clip, whole-scene clip, figure) of a ``click`` result."""
    return _path(r["overlay"]), _path(r["audio_object"]), _path(r["audio_whole"]), _path(r["figure"])


def click_status(r: dict) -> str:
    probs = dict(zip(r["classes"], r["probs_object"]))
    lines = [f"**{r['predicted_class']}** generated for the selection "
             f"({'clicked object: ' + r['clicked_class'] if r['clicked_class'] else 'object class unknown'}); "
             f"whole scene → {max(zip(r['probs_whole'], r['classes']))[1]}.",
             f"Segmentation: {r['segmenter_note'] or 'none (' + r['mode'] + ' mode)'}. "
             f"Click-to-audio {r['latency_s']:.2f} s (job {r['elapsed_s']:.1f} s)."]
    if r["note"]:
        lines.append(f"⚠ {r['note']}")
    return ("\n\n".join(lines) + "\n\nClassifier on the clicked-object clip: "
            + ", ".join(f"{k} {v:.2f}" for k, v in probs.items()))


def gallery_images():
    """Thumbnails of the gallery scenes, enlarged smoothly (the scenes are 64×64 pixels)."""
    import numpy as np
    from PIL import Image

    def thumb(img):
        return np.asarray(Image.fromarray(img).resize((192, 192), Image.Resampling.BICUBIC))

    return [(thumb(_scene(s)[1]), f"scene {s}") for s in GALLERY_SEEDS]


def _describe(kinds) -> str:
    snd = [k for k in kinds if not k.startswith("silent:")]
    sil = [k.split(":")[1] for k in kinds if k.startswith("silent:")]
    from engines.object_audio.sounds import SOUND_CLASSES

    objs = ", ".join(f"{SOUND_CLASSES[k]['shape']} = {k}" for k in snd)
    return f"Sounding objects: {objs}" + (f"; silent: {', '.join(sil)}" if sil else "") + ". Click one."


def open_scene(seed):
    if seed is None or not (0 <= int(seed) < 2**31):
        raise gr.Error("Scene seed must be an integer between 0 and 2³¹−1.", title="Invalid scene")
    from engines.object_audio.images import for_display

    iid, img, kinds = _scene(int(seed))
    return iid, for_display(img), "", f"Scene {int(seed)}. {_describe(kinds)}"


def random_scene():
    seed = random.randrange(100_000)
    return (seed, *open_scene(seed))


def pick_gallery(evt: gr.SelectData):
    seed = GALLERY_SEEDS[evt.index]
    return (seed, *open_scene(seed))


def upload(file):
    if file is None:
        raise gr.Error("No file received: choose an image (PNG or JPEG).", title="No upload")
    from engines.object_audio import images

    try:
        img = images.check_upload(file)
    except images.ImageError as e:
        raise gr.Error(f"Upload refused: {e}.", title="Not a usable image") from None
    iid = images.store(img)
    return iid, images.for_display(img), "", (f"Uploaded image ({img.shape[1]}×{img.shape[0]}). The models were trained on synthetic "
                          "scenes, so expect the nearest class they know. Click an object.")


def parse_clicks(text: str) -> list[tuple[float, float, int]]:
    """'x,y,1; x,y,0' → [(x, y, label)]."""
    out = []
    for part in (text or "").replace("\n", ";").split(";"):
        part = part.strip()
        if not part:
            continue
        bits = [b.strip() for b in part.split(",")]
        if len(bits) != 3:
            raise gr.Error(f"Click {part!r} must be 'x, y, label' (label 1 include, 0 exclude).", title="Bad clicks")
        try:
            x, y, lab = float(bits[0]), float(bits[1]), int(bits[2])
        except ValueError:
            raise gr.Error(f"Click {part!r} must contain numbers.", title="Bad clicks") from None
        out.append((x, y, lab))
    return out


def add_click(clicks: str, include: str, image_id: str, evt: gr.SelectData):
    """A click on the (enlarged) image → image-pixel coordinates appended to the clicks box."""
    from engines.object_audio import images

    s = images.display_scale(images.load(image_id).shape) if image_id else 1
    x, y = int(evt.index[0]) // s, int(evt.index[1]) // s
    lab = 1 if include == "include" else 0
    return ((clicks + "; ") if clicks.strip() else "") + f"{x},{y},{lab}"


def generate(image_id, clicks, segmenter, mode, prompt, cfg, steps, seed, progress=gr.Progress()):
    if not image_id:
        raise gr.Error("Open a scene or upload an image first.", title="No image")
    cl = parse_clicks(clicks)
    if mode == "mask" and not cl:
        raise gr.Error("Click on an object in the image first (or choose the whole-image mode).", title="No click")
    params = dict(image_id=image_id, clicks=cl, segmenter=segmenter, mode=mode, prompt=prompt or "",
                  cfg=float(cfg), steps=int(steps), seed=int(seed))
    job = JobRun(METHOD_ID, "click", params)
    yield job.id, gr.skip(), gr.skip(), gr.skip(), gr.skip(), f"Job {job.id[:8]} queued…"
    r = job.wait(progress)
    yield job.id, *render_click(r), click_status(r)


def clear(image_id):
    from engines.object_audio import images

    img = images.for_display(images.load(image_id)) if image_id else None
    return "", img, "Clicks cleared."


def train(attention, force, progress=gr.Progress()):
    job = JobRun(METHOD_ID, "train", dict(attention=attention, force=bool(force)))
    yield job.id, f"Job {job.id[:8]} queued…"
    r = job.wait(progress)
    src = ", ".join(f"{k}: {v}" for k, v in r["sources"].items())
    yield job.id, (f"Trained ({r['attention']} attention): final ε-loss {r['final_loss']:.4f}, autoencoder L1 "
                   f"{r['ae_l1']:.3f}, training-attention variance {r['attention_var']:.2e} (the mask is rescaled to "
                   f"it). Training took {r['train_s']:.0f} s. Sounds: {src}.")


BENCH_ROWS = [("acc_mask", "clicked-class accuracy, mask (ours)"), ("acc_text_attention", "… learned text attention"),
              ("acc_whole", "… whole image (uniform weights)"), ("acc_text_only_all", "… text naming all objects"),
              ("acc_additive_mask", "… additive attention + mask (ablation)"), ("attention_auroc", "attention AUROC vs mask"),
              ("single_acc", "classifier ceiling (single-source)"), ("fd_mask", "Fréchet distance, mask"),
              ("fd_whole", "Fréchet distance, whole"), ("flood_iou", "flood-fill IoU"), ("sam_iou", "LiteMedSAM IoU"),
              ("latency_s", "click-to-audio seconds")]


def run_benchmark(n_scenes, steps, additive, sam_scenes, progress=gr.Progress()):
    job = JobRun(METHOD_ID, "benchmark", dict(n_scenes=int(n_scenes), steps=int(steps), additive=bool(additive),
                                               sam_scenes=int(sam_scenes)))
    yield job.id, gr.skip(), gr.skip(), f"Job {job.id[:8]} queued…"
    r = job.wait(progress)
    from engines.object_audio.plots import benchmark_figure

    rows = [[label, None if r.get(k) is None else round(float(r[k]), 3)] for k, label in BENCH_ROWS]
    yield job.id, benchmark_figure(r), rows, f"{r['n_clicks']} clicks on {r['n_scenes']} scenes; done in {r['elapsed_s']:.0f} s."


def build() -> None:
    gr.Markdown(
        "Click an object in the scene: it is segmented (flood fill, GrabCut or Segment Anything), the mask is "
        "pooled to the 8×8 patch grid and **replaces the learned text→image attention** of a latent diffusion "
        "model (rescaled to the attention statistics seen in training), which then generates that object's "
        "sound. The whole-scene clip (uniform weights) plays beside it for comparison. Each sounding shape has "
        "its own sound (real CC0 recordings from sonic-pi where they fit); other shapes are silent. The tiny "
        "models ship with the repository's model release; other configurations train as a background job."
    )
    job_id = gr.State(None)
    first = GALLERY_SEEDS[0]  # shown when a page loads (filled by a load event: nothing is computed at start-up)
    with gr.Row():
        with gr.Column(scale=1, min_width=320):
            gallery = gr.Gallery(label="Scenes (click one)", columns=3, rows=2, height="auto", object_fit="contain",
                                 allow_preview=False, elem_id="object_audio_gallery")
            with gr.Row():
                seed_box = gr.Number(GALLERY_SEEDS[0], precision=0, label="Scene seed", minimum=0)
                open_btn = gr.Button("Open scene")
                new_btn = gr.Button("New random scene", elem_id="object_audio_new")
            up = gr.File(label="…or upload an image", file_types=["image"], type="filepath")
            include = gr.Radio(["include", "exclude"], value="include", label="Next click")
            clicks = gr.Textbox("", label="Clicks (x, y, label; …)", elem_id="object_audio_clicks")
            image_id = gr.Textbox("", visible=False, label="image id")
            segmenter = gr.Dropdown(SEG_CHOICES, value="flood", label="Segmenter")
            mode = gr.Radio(MODE_CHOICES, value="mask", label="Conditioning")
            prompt = gr.Textbox("", label="Text query (text-attention mode; also shown as the attention map)")
            with gr.Accordion("Sampling", open=False):
                cfg = gr.Slider(0, 6, value=2.0, step=0.1, label="CFG scale (paper 2.0)")
                steps = gr.Slider(5, 200, value=50, step=1, label="DDIM steps (paper 200)")
                seed = gr.Number(0, precision=0, label="Sampling seed", minimum=0)
            with gr.Row():
                gen_btn = gr.Button("Generate", variant="primary", elem_id="object_audio_generate")
                clear_btn = gr.Button("Clear clicks")
                stop = gr.Button("Stop", variant="stop")
        with gr.Column(scale=2):
            status = gr.Markdown(label="status", elem_id="object_audio_status")
            with gr.Row():
                view = gr.Image(label="Scene: click an object", interactive=False, height=280,
                                elem_id="object_audio_image")
                overlay = gr.Image(label="Mask overlay", interactive=False, height=280, elem_id="object_audio_overlay")
            with gr.Row():
                audio_obj = gr.Audio(label="Clicked object", type="filepath", elem_id="object_audio_audio")
                audio_whole = gr.Audio(label="Whole scene (A/B)", type="filepath")
            figure = gr.Image(label="Patch weights from the mask, learned text attention, mel-spectrograms of both "
                                    "clips and the classifier's probabilities", interactive=False,
                              elem_id="object_audio_figure")
    with gr.Accordion("Training and benchmark (background jobs)", open=False):
        with gr.Row():
            attention = gr.Radio(["dot", "additive"], value="dot", label="Attention (additive = ablation)")
            force = gr.Checkbox(False, label="Retrain even if cached")
            train_btn = gr.Button("Train models", elem_id="object_audio_train")
        train_status = gr.Markdown(label="training status")
        with gr.Row():
            b_scenes = gr.Slider(2, 400, value=200, step=1, label="Test scenes")
            b_steps = gr.Slider(5, 200, value=50, step=1, label="DDIM steps")
            b_add = gr.Checkbox(True, label="Additive-attention ablation")
            b_sam = gr.Slider(0, 50, value=20, step=1, label="Scenes for the LiteMedSAM IoU")
            bench_btn = gr.Button("Run benchmark", elem_id="object_audio_bench")
        bench_status = gr.Markdown(label="benchmark status")
        bench_plot = gr.Plot(label="Clicked-class accuracy and Fréchet distance per conditioning (after 'Run benchmark')")
        bench_table = gr.Dataframe(label="benchmark table", headers=["measure", "value"], interactive=False)

    scene_out = [image_id, view, clicks, status]
    # the first scene (its id, picture and description), then the worked example: one click on it
    gr.on(None, lambda: (gallery_images(), *open_scene(first)[:2]), None, [gallery, image_id, view],
          api_visibility="private")
    worked_example.on_load(
        METHOD_ID, "click", example, lambda r: (*render_click(r), clicks_text(example()["clicks"])),
        [overlay, audio_obj, audio_whole, figure, clicks], status, missing=missing_models,
        done=lambda r: f"**Worked example:** {open_scene(first)[3].removesuffix(' Click one.')}; one click on the "
                       f"{r['clicked_class'] or 'first sounding'} object. " + click_status(r),
        cancel_on=[gen_btn.click, view.select, new_btn.click, open_btn.click])
    open_btn.click(open_scene, seed_box, scene_out, api_name="object_audio_scene")
    new_btn.click(random_scene, None, [seed_box, *scene_out], api_visibility="private")
    gallery.select(pick_gallery, None, [seed_box, *scene_out], api_visibility="private")
    up.upload(upload, up, scene_out, api_name="object_audio_upload")
    gen_in = [image_id, clicks, segmenter, mode, prompt, cfg, steps, seed]
    gen_out = [job_id, overlay, audio_obj, audio_whole, figure, status]
    ev1 = gen_btn.click(generate, gen_in, gen_out, api_name="object_audio_generate")
    ev2 = view.select(add_click, [clicks, include, image_id], clicks, api_visibility="private").then(
        generate, gen_in, gen_out, api_visibility="private", trigger_mode="always_last")
    clear_btn.click(clear, image_id, [clicks, overlay, status], api_name="object_audio_clear")
    ev3 = train_btn.click(train, [attention, force], [job_id, train_status], api_name="object_audio_train")
    ev4 = bench_btn.click(run_benchmark, [b_scenes, b_steps, b_add, b_sam], [job_id, bench_plot, bench_table, bench_status],
                          api_name="object_audio_benchmark")
    stop.click(cancel_job, job_id, status, cancels=[ev1, ev2, ev3, ev4], api_name="object_audio_stop")


if __name__ == "__main__":
    from ..standalone import launch_tab

    launch_tab(build, METHOD_ID)
