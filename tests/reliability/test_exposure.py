"""API answers never show the server's data directory: artifacts travel as copies in Gradio's cache."""
from __future__ import annotations

import json

import numpy as np

from engines.common.artifacts import ArtifactStore, resolve
from engines.common.settings import get_settings
from tests.helpers import free_port


def test_artifact_files_are_served_without_the_data_path():
    import gradio as gr
    from gradio_client import Client

    from app.guard import GuardedBlocks, guard_all
    from app.ui import launch_kwargs

    s = get_settings()
    store = ArtifactStore(s.artifacts_dir, "exposurejob")
    ref_img = store.save_image("figure.png", np.zeros((8, 8, 3), np.uint8))
    ref_csv = store.save_bytes("table.csv", b"a,b\n1,2\n")

    def show():  # what the tabs do: resolve the job's references to files
        return str(resolve(s.artifacts_dir, ref_img)), str(resolve(s.artifacts_dir, ref_csv))

    with GuardedBlocks() as demo:
        btn = gr.Button()
        img, f = gr.Image(), gr.File()
        btn.click(show, None, [img, f], api_name="show")
    guard_all(demo)
    demo.queue()
    kw = dict(launch_kwargs(s), server_port=free_port())
    demo.launch(prevent_thread_lock=True, quiet=True, **kw)
    try:
        out = Client(f"http://127.0.0.1:{kw['server_port']}/", verbose=False, download_files=False).predict(
            api_name="/show")
    finally:
        demo.close()
    text = json.dumps(out)
    assert str(s.data_dir) not in text and str(s.data_dir.resolve()) not in text, text
    assert all("/gradio_api/file=" in o["url"] and o["path"].endswith((".png", ".csv", ".webp")) for o in out)
