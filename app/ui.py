"""The Paperlab Blocks: a landing tab, then one tab per available method."""
from __future__ import annotations

import importlib
import logging
from functools import partial
from pathlib import Path

import gradio as gr

from engines.registry import METHODS, available

from . import worked_example
from .guard import GuardedBlocks, guard_all
from .landing import ROOT, landing_html

log = logging.getLogger("paperlab.app")
CSS_PATH = ROOT / "static" / "app.css"
THEME = gr.themes.Soft(primary_hue="indigo")


def _landing_extras() -> None:
    """Optional landing sections contributed by other modules (e.g. the model zoo's status)."""
    try:
        mod = importlib.import_module("app.zoo_status")
    except ModuleNotFoundError:
        return
    mod.build()


def build_demo() -> gr.Blocks:
    from engines.common.settings import get_settings

    s = get_settings()
    # Gradio deletes its uploads and outputs older than a day (and all of them at restart): docs/reliability.md.
    with GuardedBlocks(title="Paperlab", delete_cache=(s.housekeeping_interval_s, s.gradio_cache_max_age_s)) as demo:
        with gr.Tabs(overflow_behavior="wrap"):
            with gr.Tab("Papers", id="landing"):
                gr.HTML(landing_html(), elem_id="landing")
                from .health import build as _health_line

                _health_line()
                _landing_extras()
            for m in available():
                with gr.Tab(m.title, id=m.id, elem_id=f"tab-{m.id}") as tab:
                    try:
                        importlib.import_module(f"app.tabs.{m.id}").build()
                    except Exception:  # one broken tab must not take the app down
                        log.exception("tab %s failed to build", m.id)
                        gr.Markdown("**This tab failed to load.** The server log has the details.")
                # the opened tab's worked example is computed before the others the page load asked for
                tab.select(partial(worked_example.promote, m.id), None, None, queue=False,
                           api_visibility="private")
    return guard_all(demo)


def launch_kwargs(settings) -> dict:
    return dict(
        server_name=settings.host,
        server_port=settings.port,
        theme=THEME,
        css_paths=[CSS_PATH],
        allowed_paths=[str(ROOT / "docs"), str(ROOT / "static"), str(Path(settings.artifacts_dir))],
        max_file_size=int(settings.max_upload_mb * 1024 * 1024),
        show_error=True,
        footer_links=["api", "gradio"],
    )


__all__ = ["build_demo", "launch_kwargs", "METHODS"]
