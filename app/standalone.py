"""Run one tab on its own: ``python -m app.tabs.<id>`` (jobs run inline in the process)."""
from __future__ import annotations

import os
from typing import Callable

import gradio as gr


def launch_tab(build: Callable[[], None], method_id: str) -> None:
    os.environ.setdefault("PAPERLAB_INLINE_JOBS", "true")
    from engines.common.settings import get_settings, reset_settings
    from engines.registry import get

    from .ui import launch_kwargs

    reset_settings()
    from .guard import GuardedBlocks, guard_all

    with GuardedBlocks(title=f"Paperlab · {get(method_id).title}") as demo:
        gr.Markdown(f"## {get(method_id).title}")
        build()
    guard_all(demo)
    demo.queue().launch(**launch_kwargs(get_settings()))
