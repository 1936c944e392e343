"""The moex endpoints through gradio_client (inline jobs, micro models), and bad input."""
from __future__ import annotations

import pytest
from gradio_client import Client

MODELS = ["dense_gelu", "topk_gelu", "moex", "sae"]


@pytest.fixture(scope="module")
def client(inline_app):
    url, _ = inline_app
    return Client(url, verbose=False)


def test_explore_and_search(client):
    board, moves, units, status = client.predict("synthetic:1", "", 3, MODELS, 4, api_name="/moex_explore")
    assert "<svg" in board and "**1. " in moves and "◀" in moves
    names = {r[0] for r in units["data"]}
    assert names <= {"Dense GELU", "TopK MoE", "MoE-X", "SAE on dense"} and "MoE-X" in names
    assert "position 3" in status and "units active" in status
    board2, _, units2, status2 = client.predict("synthetic:0", "1.e4 e5 2.Nf3 Nc6 3.Bb5 a6", 2, ["moex"], 3,
                                                api_name="/moex_explore")
    assert "your PGN" in status2 and {r[0] for r in units2["data"]} <= {"MoE-X"}
    table, msg = client.predict("castle", api_name="/moex_search")
    feats = {r[0] for r in table["data"]}
    assert "white can castle kingside" in feats and "4 board feature(s)" in msg


def test_bad_input(client):
    with pytest.raises(Exception, match="Ke3|illegal"):
        client.predict("synthetic:0", "1.e4 e5 2.Ke3", 1, MODELS, 4, api_name="/moex_explore")
    with pytest.raises(Exception, match="unknown feature"):
        client.predict("dragon on z9", api_name="/moex_search")
    with pytest.raises(Exception, match="(?i)position|maximum"):
        client.predict("synthetic:0", "", 500, MODELS, 4, api_name="/moex_explore")
    with pytest.raises(Exception, match="beyond this game"):
        client.predict("synthetic:0", "1.e4 e5", 30, MODELS, 4, api_name="/moex_explore")
    # the app keeps serving after bad input
    assert client.predict("synthetic:2", "", 2, ["moex"], 2, api_name="/moex_explore")[3]


def test_worked_example_is_the_first_position_computed_with_the_tab_models(client):
    from app import worked_example as we
    from app.tabs import moex as tab

    client.predict("synthetic:1", "", 1, ["moex"], 1, api_name="/moex_explore")  # the micro models exist now
    assert tab.missing_models() is None
    res = we.fetch("moex", "explore", tab.EXAMPLE)
    board, moves, units = tab.render_explore(res)
    assert res["position"] == tab.EXAMPLE["position"] == 6 and "<svg" in board and "**1. " in moves
    assert "MoE-X" in {r[0] for r in units} <= {"Dense GELU", "TopK MoE", "MoE-X", "SAE on dense"}
    assert we.cached("moex", "explore", tab.EXAMPLE) == res


def test_worked_example_without_models_says_how_to_get_them(tmp_path, monkeypatch):
    from app.tabs import moex as tab
    from engines.common.settings import reset_settings

    monkeypatch.setenv("PAPERLAB_DATA_DIR", str(tmp_path))
    reset_settings()
    try:
        why = tab.missing_models()
    finally:
        monkeypatch.undo()
        reset_settings()
    assert why and "dense_gelu, topk_gelu, moex, sae" in why and "Train" in why and "never train" in why


def test_real_games_are_listed_only_when_installed(tmp_path, monkeypatch):
    """The dropdown lists the pychess PGN games only where the files exist, and says why they are absent."""
    from app.tabs import moex

    monkeypatch.setattr(moex, "PYCHESS_DIR", str(tmp_path / "absent"))
    choices, why = moex._games()
    assert choices and all(v.startswith("synthetic:") for _, v in choices)
    assert "pychess" in why and "Paste" in why
    (tmp_path / "pychess" / "learn").mkdir(parents=True)
    (tmp_path / "pychess" / "learn" / "games.pgn").write_text("1. e4 e5 2. Nf3 Nc6 *\n")
    monkeypatch.setattr(moex, "PYCHESS_DIR", str(tmp_path / "pychess"))
    choices, why = moex._games()
    assert why is None and any(v.startswith("real:") for _, v in choices)
