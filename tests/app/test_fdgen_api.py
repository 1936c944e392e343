"""The fdgen tab's endpoints through gradio_client: inspect, train & sample, bad input."""
from __future__ import annotations

import pytest
from gradio_client import Client, handle_file

# dataset, n_nodes, sensitive, knn, minority, homophily, feature_bias, label_bias, avg_degree, edges, nodes
SBM = ["sbm", 80, "age", 10, 0.3, 5.0, 1.5, 0.2, 8.0, None, None]
MICRO_TRAIN = ["vgae", 1.0, 1.0, "unconditional", 10, 4, 1, 1]  # backbone, λ_f, λ_s, mode, epochs, T, seeds, samples


def test_inspect_reports_bias(inline_app):
    url, _ = inline_app
    c = Client(url, verbose=False)
    plot, table, md = c.predict(*SBM, api_name="/fdgen_inspect")
    assert plot["plot"].startswith("data:image")
    rows = {r[0]: float(r[1]) for r in table["data"]}
    assert rows["nodes"] == 80 and rows["sensitive homophily h_s"] > rows["h_s under random mixing"]
    assert "Synthetic biased SBM" in md


def test_train_and_sample_via_client(inline_app):
    url, _ = inline_app
    c = Client(url, verbose=False)
    drawing, table, bars, hist, files, status = c.predict(*SBM, *MICRO_TRAIN, ["vanilla", "fdgen"],
                                                          api_name="/fdgen_train")
    labels = [r[0] for r in table["data"]]
    assert labels == ["real graph (training nodes)", "vanilla (λ_f = λ_s = 0)", "FDGen (both)"]
    assert bars["plot"].startswith("data:image") and hist["plot"].startswith("data:image")
    names = sorted(f.rsplit("/", 1)[-1] for f in files)
    assert "fdgen.graphml" in names and "vanilla_edges.csv" in names
    assert "Done" in status


def test_bad_upload_is_rejected_before_training(inline_app, tmp_path):
    url, _ = inline_app
    c = Client(url, verbose=False)
    nodes = tmp_path / "nodes.csv"
    nodes.write_text("id,s,y,f\n" + "".join(f"{k},1,{k % 2},{k}\n" for k in range(30)))  # constant s
    edges = tmp_path / "edges.csv"
    edges.write_text("".join(f"{k},{k + 1}\n" for k in range(29)))
    args = ["upload", 80, "age", 10, 0.3, 5.0, 1.5, 0.2, 8.0, handle_file(str(edges)), handle_file(str(nodes))]
    with pytest.raises(Exception, match="constant"):
        c.predict(*args, api_name="/fdgen_inspect")
    with pytest.raises(Exception, match="constant"):
        c.predict(*args, *MICRO_TRAIN, ["fdgen"], api_name="/fdgen_train")
    binary = tmp_path / "edges.png"
    binary.write_bytes(b"\x89PNG\r\n")
    args[9] = handle_file(str(binary))
    with pytest.raises(Exception, match="(?i)file type|text file"):
        c.predict(*args, api_name="/fdgen_inspect")


def test_empty_variants_and_bad_lambdas_are_clear_errors(inline_app):
    url, _ = inline_app
    c = Client(url, verbose=False)
    with pytest.raises(Exception, match="at least one generator variant"):
        c.predict(*SBM, *MICRO_TRAIN, [], api_name="/fdgen_train")
    with pytest.raises(Exception, match="numbers separated by commas"):
        c.predict(*SBM, "vgae", "unconditional", 10, 4, 1, 1, "0, x", api_name="/fdgen_sweep")
    with pytest.raises(Exception, match="lambda_f|maximum"):
        c.predict(*SBM, "vgae", 99.0, 1.0, "unconditional", 10, 4, 1, 1, ["fdgen"], api_name="/fdgen_train")
