"""MoE-X invariants: the wide-sparse equivalence (check 1), routing to the sparsest experts (check 2), the BSP
metrics on synthetic activations (check 3), data replay (check 4), a training smoke (check 5), upcycling (check 7)
and bad inputs (illegal PGN, unknown features, out-of-range sizes)."""
from __future__ import annotations

import random

import chess
import numpy as np
import pytest
import torch

from engines.common.params import ParamError, validate
from engines.moex import data as D
from engines.moex import metrics as MT
from engines.moex.layers import MoELayer
from engines.moex.model import MICRO, build_model, upcycle
from engines.moex.params import ExploreParams, GridParams, SearchParams


@pytest.fixture(autouse=True)
def _one_thread():
    from engines.common.threads import torch_threads

    with torch_threads(1):
        yield


@pytest.mark.parametrize("router", ["topk_linear", "sparsity_gaussian", "sparsity_exact"])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_moe_equals_its_wide_sparse_mlp(router, activation):
    torch.manual_seed(0)
    layer = MoELayer(16, n_experts=6, expert_hidden=12, top_k=2, activation=activation, router=router)
    with torch.no_grad():
        layer.b_enc.normal_(0, 0.3)
        layer.b_dec.normal_()
    x = torch.randn(5, 7, 16)
    layer.record = True
    y = layer(x)
    h, y_wide = layer.wide_form(x)
    assert h.shape == (5, 7, 6 * 12)
    assert (y - y_wide).abs().max().item() < 1e-5
    assert torch.allclose(layer.last_h, h, atol=1e-6)  # the dispatch path's h is the same code
    assert ((h != 0).sum(-1) <= 2 * 12).all()  # ‖h‖_0 ≤ k·D
    # unselected experts' blocks are exactly zero
    blocks = h.reshape(5, 7, 6, 12).abs().sum(-1) > 0
    assert (blocks.sum(-1) <= 2).all()


def _graded_experts(router: str) -> MoELayer:
    """Expert j's biases are shifted by −0.6·j: higher j ⇒ sparser codes."""
    torch.manual_seed(1)
    layer = MoELayer(12, n_experts=5, expert_hidden=64, top_k=2, activation="relu", router=router)
    with torch.no_grad():
        layer.w_enc.normal_(0, 0.3)
        for j in range(5):
            layer.b_enc[j] = -0.6 * j + 0.1 * torch.randn(64)
    return layer


def test_sparsity_routers_pick_the_sparsest_experts():
    x = torch.randn(200, 12)
    exact = _graded_experts("sparsity_exact")
    l0 = (exact.expert_codes(x) > 0).sum(-1)  # (N, M) true expert L0
    idx, w, _ = exact.route(x)
    chosen = l0.gather(1, idx)
    # exact router: the chosen experts are the k sparsest for every token
    assert (chosen.max(1).values <= l0.sort(1).values[:, 1]).all()
    assert torch.allclose(w.sum(-1), torch.ones(200))
    gauss = _graded_experts("sparsity_gaussian")
    idx_g, _, sc = gauss.route(x)
    # the estimator ranks experts like the truth: sparsest pair mostly chosen, score anti-correlated with L0
    assert (idx_g >= 3).float().mean() > 0.8
    from scipy.stats import pearsonr, spearmanr

    assert spearmanr(sc.detach().ravel().numpy(), l0.ravel().numpy()).statistic < -0.5
    est = gauss.firing_probability(x) * gauss.D
    assert pearsonr(est.detach().ravel().numpy(), l0.ravel().numpy()).statistic > 0.7
    # the linear TopK gate ignores sparsity: a gate that prefers expert 0 keeps picking the densest one
    lin = _graded_experts("topk_linear")
    with torch.no_grad():
        lin.gate.weight.zero_()
        lin.gate.weight[0] = 1.0
        lin.gate.weight[1] = 0.5
    assert (lin.route(x.abs())[0][:, 0] == 0).all()


def test_metrics_on_synthetic_activations():
    rng = np.random.default_rng(0)
    bsp = rng.random((400, 30)) < 0.2
    bsp[:, 0] = rng.random(400) < 0.5
    acts = bsp.astype(np.float32) * rng.uniform(0.5, 1.0, bsp.shape).astype(np.float32)
    assert MT.coverage(acts, bsp)[0] == pytest.approx(1.0)
    split = ((acts[:200], bsp[:200]), (acts[200:300], bsp[200:300]), (acts[300:], bsp[300:]))
    assert MT.reconstruction(*split)["f1"] == pytest.approx(1.0)
    perm = rng.permutation(30)
    cov, _, arg = MT.coverage(acts[:, perm], bsp)
    assert cov == pytest.approx(1.0) and (perm[arg] == np.arange(30)).all()
    shuffled = ((acts[:200, perm], bsp[:200]), (acts[200:300, perm], bsp[200:300]), (acts[300:, perm], bsp[300:]))
    assert MT.reconstruction(*shuffled)["f1"] == pytest.approx(1.0)
    noise = rng.random((400, 30)).astype(np.float32)
    sparse_bsp = rng.random((400, 30)) < 0.05
    assert MT.coverage(noise, sparse_bsp)[0] < 0.2
    held = MT.coverage_heldout((acts[:200], bsp[:200]), (acts[200:], bsp[200:]))
    assert held["coverage"] == pytest.approx(1.0)
    # half the units dead: reconstruction drops to the share of BSP positives they carried
    dead = acts.copy()
    dead[:, 15:] = 0
    r = MT.reconstruction((dead[:200], bsp[:200]), (dead[200:300], bsp[200:300]), (dead[300:], bsp[300:]))
    assert 0.3 < r["f1"] < 0.95
    with pytest.raises(ValueError, match="share N"):
        MT.coverage(acts[:10], bsp)


def test_games_replay_and_bsps_match_the_board():
    games = D.synthetic_games(6, seed=3)
    gs = D.build_gameset(games, ctx=120)
    for g, sans in enumerate(games):
        s = D.to_pgn_string(sans)
        assert s.startswith(";1.") and set(s) <= set(D.VOCAB)
        assert D.parse_pgn(s) == sans  # the string replays legally into the same moves
    assert len(gs.bsp) == len(gs.pos_game) > 0
    for k in range(len(gs.pos_game)):
        g, ci = gs.pos_game[k], gs.pos_char[k]
        assert gs.pgns[g][ci] == "."
        plies = 2 * gs.pgns[g][:ci].count(".")
        board = chess.Board()
        for s in games[g][:plies]:
            board.push_san(s)
        names = {n for n, on in zip(D.FEATURE_NAMES, gs.bsp[k]) if on}
        for sq, piece in board.piece_map().items():
            colour = "white" if piece.color else "black"
            name = f"{colour} {chess.piece_name(piece.piece_type)} on {chess.square_name(sq)}"
            initial = chess.Board().piece_at(sq)
            assert (name in names) == (initial != piece), name  # initial-state pieces are masked
        assert ("white can castle kingside" in names) == board.has_kingside_castling_rights(chess.WHITE)
    assert len(D.FEATURE_NAMES) == D.N_FEATURES == 64 * 12 - 32 + len(D.GLOBAL_FEATURES)


def test_upcycled_moex_equals_the_dense_relu_model():
    from dataclasses import replace

    cfg = replace(MICRO, expert_hidden=MICRO.dense_hidden)
    dense = build_model(cfg, "dense_relu", seed=0)
    moe = upcycle(dense, cfg, "moex").eval()
    ids = torch.randint(0, len(D.VOCAB), (3, 20))
    with torch.no_grad():
        assert torch.allclose(dense(input_ids=ids).logits, moe(input_ids=ids).logits, atol=1e-5)
    # a transformers GPT2LMHeadModel (Conv1D MLPs, ReLU) upcycles the same way
    from transformers import GPT2LMHeadModel

    from engines.moex.model import gpt2_config

    hf = GPT2LMHeadModel(gpt2_config(cfg, "relu")).eval()
    up = upcycle(hf, cfg, "moex").eval()
    with torch.no_grad():
        assert torch.allclose(hf(input_ids=ids).logits, up(input_ids=ids).logits, atol=1e-5)


def test_training_smoke_loss_drops_and_moex_is_sparser():
    from engines.moex import train as T
    from engines.moex.experiment import default_train_config

    recs, nz = {}, {}
    for v in ("dense_relu", "moex"):
        tc = default_train_config(v, 0, steps=60)
        model, rec = T.train(tc)
        recs[v] = rec
        h = T.hidden_at_dots(model, T.gameset("val", T.profile_splits().val, tc.model.ctx))["h"]
        nz[v] = float((h > 0).mean())
        ids = torch.as_tensor(T.gameset("val", T.profile_splits().val, tc.model.ctx).ids[:4])
        assert T.all_layers_h_bound(model, ids)
    for v, rec in recs.items():
        assert rec["val_loss"] < 0.7 * rec["init_val_loss"], (v, rec["init_val_loss"], rec["val_loss"])
    assert nz["moex"] < nz["dense_relu"]


def test_bad_inputs_are_named():
    with pytest.raises(D.PGNError, match="Qh5"):
        D.replay(["e4", "e5", "Qh5", "Qh5"])  # the second Qh5 is Black's and illegal
    with pytest.raises(D.PGNError, match="illegal|no legal move"):
        D.parse_pgn("1.e4 e5 2.Ke3")
    with pytest.raises(D.PGNError, match="empty"):
        D.parse_pgn("   ")
    from engines.moex.experiment import search

    with pytest.raises(ValueError, match="unknown feature 'flying dragon'"):
        search({"feature": "flying dragon"}, {})
    assert search({"feature": "white knight on f3"}, {"m": {"per_feature": {}}})["matches"] == 1
    with pytest.raises(ParamError, match="n_embd"):
        validate(GridParams, {"n_embd": 8})
    with pytest.raises(ParamError, match="top_k"):
        validate(GridParams, {"top_k": 9, "n_experts": 8})
    with pytest.raises(ParamError, match="position"):
        validate(ExploreParams, {"position": 0})
    with pytest.raises(ParamError, match="game"):
        validate(ExploreParams, {"game": "lichess:1"})
    with pytest.raises(ParamError, match="feature"):
        validate(SearchParams, {"feature": "x" * 200})
    with pytest.raises(ValueError, match="top_k"):
        MoELayer(8, 4, 8, top_k=5)
    with pytest.raises(ValueError, match="unknown variant"):
        build_model(MICRO, "peer")


def test_explore_and_search_on_the_micro_models():
    from engines.moex.experiment import explore, search
    from engines.moex.release import load_tab_models

    res = explore({"game": "synthetic:2", "position": 3, "top_n": 5})
    assert res["plies"] == 4 and set(res["models"]) == {"dense_gelu", "topk_gelu", "moex", "sae"}
    board = chess.Board(res["fen"])
    assert board.turn == chess.WHITE and len(board.move_stack) == 0
    for m in res["models"].values():
        acts = [u["activation"] for u in m["units"]]
        assert acts == sorted(acts, reverse=True) and all(a > 0 for a in acts) and len(acts) <= 5
    with pytest.raises(ValueError, match="beyond this game"):
        explore({"game": "synthetic:2", "position": 150})
    with pytest.raises(D.PGNError):
        explore({"pgn": "1.e4 e5 2.Ke3", "position": 1})
    analyses = {k: v["analysis"] for k, v in load_tab_models().items()}
    got = search({"feature": "castle kingside"}, analyses)
    assert got["matches"] == 2
    found = got["features"]["white can castle kingside"]["moex"]
    assert found is not None and 0 < found["f1"] <= 1 and 0 <= found["unit"] < MICRO.n_experts * MICRO.expert_hidden


def test_grid_job_reports_every_variant_and_stops_when_asked():
    import threading

    from engines.common.context import JobCancelled, LocalContext
    from engines.moex.experiment import grid

    small = dict(variants=["dense_relu", "moex"], steps=10, n_embd=32, dense_hidden=32, n_experts=4, n_layer=2)
    res = grid(small)
    assert [r["variant"] for r in res["rows"]] == ["dense_relu", "moex"]
    assert res["rows"][1]["units"] == 4 * 16 and -1 <= res["rows"][1]["router_spearman"] <= 1
    assert all(0 <= r["coverage"] <= 1 and 0 <= r["reconstruction"] <= 1 for r in res["rows"])
    ev = threading.Event()
    ev.set()
    with pytest.raises(JobCancelled):
        grid(dict(small, steps=11), LocalContext(cancel_event=ev))
