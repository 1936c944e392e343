"""Every public API endpoint, per method, and the labels of their values.

Gradio silently renames duplicates, so the names are pinned (one entry per method id; keep the blank lines:
parallel branches edit different entries). Gradio names an unlabelled input or output ``value_N`` in the API
page: :func:`unnamed_values` lists those (``tests/app/test_app.py`` checks both on the whole app).
"""
import re


API_NAMES: dict[str, set[str]] = {
    "dpsdp": {"dpsdp_refine", "dpsdp_random", "dpsdp_evaluate", "dpsdp_tree", "dpsdp_train", "dpsdp_lora",
              "dpsdp_stop"},

    "zapformat": {"zapformat_step", "zapformat_generate", "zapformat_benchmark", "zapformat_stop",
                  "zapformat_example"},

    "pde_staggered": {"pde_staggered_rollout", "pde_staggered_frame", "pde_staggered_rotate", "pde_staggered_train",
                      "pde_staggered_benchmark", "pde_staggered_stop"},

    "fdgen": {"fdgen_inspect", "fdgen_train", "fdgen_sweep", "fdgen_stop"},

    "multinoulli": {"multinoulli_upload", "multinoulli_run", "multinoulli_sweep", "multinoulli_stop"},

    "l2d": {"l2d_solve", "l2d_random", "l2d_benchmark", "l2d_training", "l2d_real_model", "l2d_stop"},

    "cl_angles": {"cl_angles_run", "cl_angles_neurons", "cl_angles_sweep", "cl_angles_bins", "cl_angles_buffer",
                  "cl_angles_stop"},

    "syncmind": {"syncmind_pick", "syncmind_run", "syncmind_batch", "syncmind_build", "syncmind_stop"},

    "poisonedeye": {"poisonedeye_craft", "poisonedeye_benchmark", "poisonedeye_stop"},

    "fedag": {"fedag_preview", "fedag_run", "fedag_attention", "fedag_stop"},

    "emloc": {"emloc_build", "emloc_strip", "emloc_benchmark", "emloc_stop"},

    "kl_bandits": {"kl_bandits_run", "kl_bandits_eta_sweep", "kl_bandits_rlhf", "kl_bandits_stop"},

    "moex": {"moex_explore", "moex_search", "moex_grid", "moex_stop"},

    "prototype": {"prototype_apply", "prototype_run_program", "prototype_undo", "prototype_redo", "prototype_reset",
                  "prototype_spec", "prototype_specify", "prototype_benchmark", "prototype_stop"},

    "slug": {"slug_targets", "slug_unlearn", "slug_reset", "slug_stop", "slug_t2i"},

    "saeuron": {"saeuron_erase", "saeuron_build", "saeuron_benchmark", "saeuron_stop"},

    "tailopt": {"tailopt_run", "tailopt_equivalence", "tailopt_stop"},

    "object_audio": {"object_audio_scene", "object_audio_upload", "object_audio_generate", "object_audio_clear",
                     "object_audio_train", "object_audio_benchmark", "object_audio_stop"},

    "rose": {"rose_forecast", "rose_mask", "rose_pretrain", "rose_ablation", "rose_stop"},
}


def unnamed_values(api_info: dict) -> list[tuple]:
    """(endpoint, parameters|returns, component, label) of every value without a meaningful label in
    ``demo.get_api_info()``: no label, or Gradio's ``value_N`` placeholder."""
    return [(name, kind, p.get("component"), p.get("label"))
            for name, ep in api_info["named_endpoints"].items() for kind in ("parameters", "returns")
            for p in ep[kind] if not p.get("label") or re.fullmatch(r"value_\d+", p["label"])]
