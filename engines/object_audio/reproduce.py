"""``make reproduce METHOD=object_audio``: the spec's acceptance checks (§8) and the issue's claims."""
from __future__ import annotations

import json
import time

from engines.common.results import RESULTS_DIR, Report


def main(n_scenes: int = 100, steps: int = 25, sam_scenes: int = 8):
    import torch

    torch.set_num_threads(1)
    from engines.common.context import LocalContext

    from . import sounds
    from .evaluate import benchmark
    from .plots import benchmark_figure
    from .train import clip_key, default_configs

    rep = Report("object_audio", "Sounding that Object: object-click audio generation")
    last = [0.0]

    def pr(f, m, p):
        if time.time() - last[0] > 30:
            print(f"[{f:5.1%}] {m}", flush=True)
            last[0] = time.time()

    r = benchmark(dict(n_scenes=n_scenes, steps=steps, additive=True, sam_scenes=sam_scenes), LocalContext(on_progress=pr))
    (RESULTS_DIR / "object_audio_benchmark.json").write_text(json.dumps(r, indent=1))
    rep.claim("Check 1 (data validity): classifier accuracy on held-out single-source clips ≥ 0.95; class mel "
              "centroids distinct (pairwise cosine < 0.9)", "ceiling (spec §8.1)",
              f"accuracy {r['single_acc']:.3f}, mixture mAP {r['mixture_map']:.3f}, max centroid cosine "
              f"{r['max_centroid_cos']:.2f}", r["single_acc"] >= 0.95 and r["max_centroid_cos"] < 0.9)
    rep.claim("Check 2: flood fill from a click on the object: IoU ≥ 0.95 (GrabCut ≥ 0.8 when OpenCV is installed)",
              "exact on synthetic scenes (spec)",
              f"flood fill {r['flood_iou']:.3f} over {r['flood_n']} clicks; GrabCut "
              + ("not installed" if r["grabcut_iou"] is None else f"{r['grabcut_iou']:.3f}"),
              r["flood_iou"] >= 0.95 and (r["grabcut_iou"] is None or r["grabcut_iou"] >= 0.8))
    if r["sam_iou"] is not None:
        rep.reported("LiteMedSAM through SamPredictor, click → box prompt: bounding box of the flood-fill "
                  "region; alternative: box proposals around the click ranked by predicted IoU",
                  "box prompt IoU ≈ 0.97, point prompt ≈ 0 (ASSETS.md)",
                  f"flood-fill box: mean IoU {r['sam_iou']:.3f} (median {r['sam_median_iou']:.3f}); ranked proposals: "
                  f"{r['sam_proposals_iou']:.3f}; {r['sam_n']} clicks; "
                  f"{r['sam_click_s']:.2f} s per click incl. the first embedding of each image")
    gap = r["acc_mask"] - r["acc_whole"]
    rep.claim("Claim 1 / check 5: clicked-class accuracy with mask substitution ≥ 0.80 and ≥ 20 points above "
              "whole-image conditioning", "ACC 0.859 (AudioCaps)",
              f"mask {r['acc_mask']:.3f} vs whole image {r['acc_whole']:.3f} (+{100 * gap:.1f} points); text naming "
              f"all objects {r['acc_text_only_all']:.3f}; {r['n_clicks']} clicks on {r['n_scenes']} scenes",
              r["acc_mask"] >= 0.8 and gap >= 0.2)
    if r.get("acc_mask_interior") is not None:
        rep.reported("Exploratory variant (chosen after seeing test results, so not a claim): the mask downsampled "
                     "to the patch grid by keeping only the patches inside it (≥ 90 % covered) instead of area "
                     "fractions, then rescaled the same way",
                  "\"downsampled to the patch grid\" (rule not given)",
                  f"interior {r['acc_mask_interior']:.3f} vs area fractions {r['acc_mask']:.3f} "
                  f"(whole image {r['acc_whole']:.3f})")
    d = abs(r["acc_mask"] - r["acc_text_attention"])
    rep.claim("Claim 2 / check 6: learned text attention ≈ mask: AUROC ≥ 0.85 and |ACC_mask − ACC_attn| ≤ 0.05",
              "ACC 0.856 (attention) vs 0.859 (mask)",
              f"AUROC {r['attention_auroc']:.3f}; ACC_attn {r['acc_text_attention']:.3f} (|Δ| = {d:.3f}); "
              f"attention–mask weight correlation {r['attention_mask_corr']:.2f}",
              r["attention_auroc"] >= 0.85 and d <= 0.05)
    drop = r["acc_mask"] - r["acc_additive_mask"]
    rep.claim("Claim 3 / check 7: additive attention with mask substitution ≥ 30 points worse than dot-product",
              "ACC 0.103 (additive) vs 0.859",
              f"additive + mask {r['acc_additive_mask']:.3f} ({-100 * drop:+.1f} points); additive with its own "
              f"text attention {r['acc_additive_text']:.3f}, its attention AUROC {r['additive_attention_auroc']:.3f}",
              drop >= 0.3)
    rep.claim("Check 8: click-to-audio < 5 s on 2 CPU cores (models loaded; flood fill, 50 DDIM steps with CFG, "
              "Griffin-Lim)", "interactive (spec §6)", f"{r['latency_s']:.2f} s", r["latency_s"] < 5.0)
    rep.reported("Quality beside the paper's metrics: Fréchet distance of classifier embeddings to real clips of "
                 "the clicked classes (FAD analogue, lower is better)", "FAD 1.271",
                 f"mask {r['fd_mask']:.2f} vs whole image {r['fd_whole']:.2f}")
    rep.figure(benchmark_figure(r), "benchmark", "Clicked-class accuracy by conditioning (left; dashed: classifier "
               "ceiling) and the diffusion model's training loss (right).")
    b, dc = default_configs("dot")
    rep.section(
        "## Setting\n\n"
        f"Tiny models trained from scratch on {b.n_scenes} synthetic scenes (1-3 objects, 5 sounding classes, "
        f"silent distractors): CLIP patch features from the zoo (`{clip_key()}`), CLAP-like text/audio encoder "
        f"({b.clap_steps} steps), mel autoencoder 64×96 → {r.get('latent_channels', 8)} channels × 8×12 ({b.ae_steps} steps), "
        f"diffusers UNet {dc.channels}. Stage 1, the AudioLDM analogue: {dc.pretrain_steps} steps × {dc.batch} (lr {dc.lr}) "
        "conditioned on the CLAP audio embedding of the target clip. Stage 2, the paper's fine-tuning with single-head "
        f"dot-product attention conditioning: {dc.steps} steps × {dc.batch} (lr {dc.finetune_lr}, attention "
        f"{dc.attention_lr_mult:g}× that); linear β 0.0015→0.0195 over 1000 steps, 10 % condition dropout, CFG 2.0, "
        f"{steps} DDIM steps, Griffin-Lim. Training took {r['train_s']['base']:.0f} s (base) + "
        f"{r['train_s'].get('pretrain') or 0:.0f} s (stage 1) + {r['train_s']['dot']:.0f} s (dot) + "
        f"{r['train_s']['additive'] or 0:.0f} s (additive) on a shared 2-core machine. Test: {r['n_scenes']} "
        "scenes with 2-3 sounding objects of distinct classes, one click per object (a random pixel of its mask), "
        "flood-fill segmentation. Sounds: " + ", ".join(f"{c} ({sounds.source(c)})" for c in sounds.CLASSES) + ".\n\n"
        f"Training-attention variance σ² = {r['attention_var']:.2e} (dot), {r.get('additive_attention_var', 0):.2e} "
        "(additive): the mask weights are rescaled to it.")
    return rep.write()


if __name__ == "__main__":
    main()
