"""ROSE invariants: frequency masks, register (VQ, top-k, frozen codebook), shapes and parameter count of the
released configuration, the checkpoint loader, the release round trip, MASE, and bad inputs."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from engines.common.params import ParamError, validate
from engines.rose import baselines, checkpoint, data, training
from engines.rose.masking import band_mask, freq_multi_views, freq_view, patch_multi_views, patchify
from engines.rose.model import MICRO, PAPER, ROSE, n_params
from engines.rose.params import ForecastParams


@pytest.fixture(autouse=True)
def _one_thread():
    from engines.common.threads import torch_threads

    with torch_threads(1):
        yield


def test_freq_mask_low_high_partition():
    torch.manual_seed(0)
    x = torch.randn(3, 256, dtype=torch.float64)
    F_ = 129
    cut = int(np.floor(0.3 * F_))
    X = torch.fft.rfft(x)
    low = freq_view(x, 0.3, True)  # low band zeroed
    high = freq_view(x, 0.3, False)
    L, Hh = torch.fft.rfft(low), torch.fft.rfft(high)
    assert torch.allclose(L[:, :cut].abs(), torch.zeros(3, cut, dtype=torch.float64), atol=1e-9)
    assert torch.allclose(L[:, cut:], X[:, cut:], atol=1e-9)
    assert torch.allclose(Hh[:, cut:].abs(), torch.zeros(3, F_ - cut, dtype=torch.float64), atol=1e-9)
    assert torch.allclose(Hh[:, :cut], X[:, :cut], atol=1e-9)
    # the two complementary views partition the spectrum: they sum back to the series
    assert torch.allclose(low + high, x, atol=1e-9)


def test_freq_multi_views_shapes_and_bands():
    x = torch.randn(5, 64)
    g = torch.Generator().manual_seed(1)
    views, meta = freq_multi_views(x, 4, 0.4, 0.5, generator=g)
    assert views.shape == (4, 5, 64)
    assert (meta["tau"] >= 0).all() and (meta["tau"] < 0.4).all()
    keep = band_mask(33, meta["tau"], meta["low"])
    V = torch.fft.rfft(views)
    assert torch.allclose(V * (~keep), torch.zeros_like(V), atol=1e-5)  # zeroed bins are exactly zero


def test_patch_masking_zeroes_whole_patches():
    x = torch.randn(2, 64) + 5
    v = patch_multi_views(x, 3, 16, 0.5)
    p = patchify(v.reshape(6, 64), 16)
    zero = (p == 0).all(-1)
    assert (zero.sum(-1) == 2).all()  # round(0.5 · 4) patches per view
    assert torch.equal(p[~zero], patchify(x.repeat(3, 1), 16)[~zero])


def test_register_straight_through_and_losses():
    torch.manual_seed(0)
    m = ROSE(MICRO)
    x, fut = torch.randn(8, 64), torch.randn(8, 24)
    losses = m.pretrain_loss(x, fut)
    assert all(torch.isfinite(v) for v in losses.values())
    assert set(losses) >= {"rec", "codebook", "commit", "pred_8", "pred_16", "pred_24"}
    m.zero_grad()
    sum(v for k, v in losses.items() if k.startswith("pred_")).backward()
    # the forecasting loss reaches the register projection through the straight-through estimator ...
    assert m.register_proj.weight.grad is not None and m.register_proj.weight.grad.abs().sum() > 0
    assert m.encoder.layers[0].q.weight.grad.abs().sum() > 0
    # ... but not the towers: the prediction tower is a frozen copy, and its output is detached
    assert all(p.grad is None for p in m.tower_pred.parameters())
    assert all(p.grad is None or p.grad.abs().sum() == 0 for p in m.tower_rec.parameters())
    for a, b in zip(m.tower_rec.parameters(), m.tower_pred.parameters()):
        assert torch.equal(a, b)


def test_topk_selects_the_k_nearest_codes():
    torch.manual_seed(0)
    m = ROSE(MICRO)
    q = torch.randn(6, MICRO.d_model)
    _, idx, dist, e = m.select_register(q, "topk", 3)
    brute = torch.cdist(q, m.codebook.weight.detach()).argsort(1)[:, :3]
    assert idx.shape == (6, 3) and torch.equal(idx, brute)
    assert torch.allclose(e, m.codebook.weight[brute].mean(1))
    _, idx1, _, _ = m.select_register(q, "argmin")
    assert torch.equal(idx1[:, 0], brute[:, 0])


def test_frozen_codebook_bit_identical_after_fine_tuning():
    torch.manual_seed(0)
    m = ROSE(MICRO)
    before = m.codebook.weight.detach().clone()
    u0 = m.u.detach().clone()
    y = np.sin(np.arange(300) / 5.0) + 0.1 * np.random.default_rng(0).standard_normal(300)
    X, V, Y = training.train_windows(y, MICRO, 8)
    training.fit_downstream(m, X[:20], V[:20], Y[:20], steps=5, lr=1e-2)
    assert torch.equal(m.codebook.weight, before)
    assert not torch.equal(m.u, u0)  # the low-rank adapter u·vᵀ is trained


def test_released_configuration_shapes_and_size():
    torch.manual_seed(0)
    m = ROSE(PAPER).eval()
    assert abs(n_params(m) - 8.0e6) / 8.0e6 < 0.10
    x = torch.randn(2, 512, 3)
    for h in PAPER.horizons:
        with torch.no_grad():
            assert m.forecast_channels(x, h).shape == (2, h, 3)
    with pytest.raises(ValueError, match="exceeds the longest head"):
        m(torch.randn(1, 512), 721)


def test_checkpoint_loader_maps_official_keys():
    torch.manual_seed(0)
    src = ROSE(PAPER).eval()
    state = checkpoint.to_official(src)
    for k in ("backbone.W_pos", "backbone.encoder.layers.2.self_attn.W_Q.weight", "vq_embedding.weight",
              "encoder_predict.encoder.layers.0.norm_ffn.1.running_var", "head_720.linear.bias", "token_embed.weight"):
        assert k in state
    state["backbone_2.encoder.layers.0.ff.0.weight"] = torch.zeros(1)  # ROSE_predict's unused stack: ignored
    model, rep = checkpoint.load_official(state)
    assert rep["initialised"] == [] and rep["config"]["num_token"] == 3 and rep["config"]["d_model"] == 256
    assert rep["config"]["n_heads"] == 16 and rep["config"]["horizons"] == [96, 192, 336, 720]
    x = torch.randn(2, 512)
    with torch.no_grad():
        assert torch.allclose(model(x, 96), src(x, 96), atol=1e-5)
    with pytest.raises(ValueError, match="d_model = 256 but the configuration asks for 128"):
        checkpoint.load_official(state, expected={"d_model": 128})
    bad = dict(state)
    bad["head_96.linear.weight"] = torch.zeros(96, 10)
    with pytest.raises(ValueError, match="head"):
        checkpoint.load_official(bad)


def test_release_round_trip(tmp_path):
    torch.manual_seed(0)
    m = ROSE(MICRO).eval()
    checkpoint.save_release(m, tmp_path / "r", {"recipe": {}})
    m2, man = checkpoint.load_release(tmp_path / "r")
    x = torch.randn(3, 64)
    with torch.no_grad():
        assert torch.equal(m(x, 16), m2(x, 16))
    assert len(man["sha256"]) == 64
    w = tmp_path / "r.safetensors"
    w.write_bytes(w.read_bytes()[:-4] + b"\0\0\0\0")
    with pytest.raises(ValueError, match="sha256"):
        checkpoint.load_release(tmp_path / "r")


def test_shipped_release_loads():
    m, man = checkpoint.load_release()
    assert 0.2e6 < man["n_params"] < 0.45e6 and man["config"]["horizons"] == [24, 48, 96]


def test_mase_of_seasonal_naive_is_one_on_its_own_definition():
    rng = np.random.default_rng(0)
    y = rng.standard_normal(200).cumsum()
    m = 12
    # in-sample seasonal-naive forecasts ŷ_t = y_{t−m} have MASE exactly 1 against the scale they define
    mase = np.mean(np.abs(y[m:] - y[:-m])) / baselines.mase_scale(y, m)
    assert mase == pytest.approx(1.0, abs=1e-12)
    mean, lo, hi = baselines.seasonal_naive(y, 30, m)
    assert np.array_equal(mean[:12], y[-12:]) and np.array_equal(mean[12:24], y[-12:])
    assert (lo <= mean).all() and (hi >= mean).all()


def test_synthetic_families_and_windows():
    rng = np.random.default_rng(0)
    for f in range(len(data.FAMILIES)):
        y = data.synth_series(f, 400, rng)
        assert y.shape == (400,) and np.isfinite(y).all()
    X, V, Y = data.windows(np.arange(100.0), 64, 8, [30, 92])
    assert X.shape == (2, 64) and V[0].sum() == 30 and X[0, -1] == 29 and Y[1].tolist() == list(range(92, 100))


def _csv(tmp_path, text):
    p = tmp_path / "s.csv"
    p.write_text(text)
    return p


def test_csv_inputs(tmp_path):
    ok = "date,value\n" + "\n".join(f"2020-01-{d:02d},{d}" for d in range(1, 29))
    d = data.load_csv(_csv(tmp_path, ok))
    assert d["period"] == 7 and len(d["y"]) == 28 and d["imputed"] == 0
    gap = "date,value\n" + "\n".join(f"2020-01-{d:02d},{d}" for d in range(1, 29) if d != 5)
    g = data.load_csv(_csv(tmp_path, gap))
    assert g["imputed"] == 1 and g["y"][4] == pytest.approx(5.0)  # a missing day, interpolated
    nan = ok.replace(",3\n", ",\n")
    assert data.load_csv(_csv(tmp_path, nan))["imputed"] == 1
    with pytest.raises(data.SeriesError, match="no time column"):
        data.load_csv(_csv(tmp_path, "a,b\n1,2\n3,4\n"))
    irregular = "date,value\n2020-01-01 00:00,1\n2020-01-01 01:00,2\n2020-01-01 01:37,3\n2020-01-01 03:00,4\n"
    with pytest.raises(data.SeriesError, match="irregular timestamps"):
        data.load_csv(_csv(tmp_path, irregular))
    with pytest.raises(data.SeriesError, match="strictly increasing"):
        data.load_csv(_csv(tmp_path, "date,value\n2020-01-02,1\n2020-01-01,2\n2020-01-03,3\n"))
    mostly_missing = "date,value\n" + "\n".join(f"2020-01-{d:02d},{'' if d % 2 else d}" for d in range(1, 29))
    with pytest.raises(data.SeriesError, match="missing"):
        data.load_csv(_csv(tmp_path, mostly_missing))


def test_bad_parameters_are_named():
    with pytest.raises(ParamError, match="horizon"):
        validate(ForecastParams, {"horizon": 200})
    with pytest.raises(ParamError, match="few_shot_fraction"):
        validate(ForecastParams, {"few_shot_fraction": float("nan")})
    with pytest.raises(ParamError, match="baselines"):
        validate(ForecastParams, {"baselines": ["seasonal_naive", "seasonal_naive"]})


def test_forecast_entry_micro(tmp_path):
    from engines.rose.experiment import forecast

    res = forecast({"series": "synthetic:multi_seasonal", "horizon": 16, "few_shot": True, "few_shot_steps": 4,
                    "baselines": ["seasonal_naive", "scratch"]})
    keys = [f.key for f in res.forecasts]
    assert keys == ["rose_zero", "rose_few", "seasonal_naive", "scratch"]
    for f in res.forecasts:
        assert len(f.mean) == 16 and np.isfinite(f.mean).all() and f.metrics["mase"] >= 0
    assert res.register_view is not None and len(res.register_view.topk) == 3
    short = _csv(tmp_path, "date,value\n" + "\n".join(f"2020-01-{d:02d},{d}" for d in range(1, 29)))
    with pytest.raises(ParamError, match="too short"):
        forecast({"csv_path": str(short), "horizon": 16, "few_shot": False, "baselines": []})


# ----------------------------------------------------------------------------- held-out series stay out of pre-training


def _max_lagged_corr(a: np.ndarray, b: np.ndarray, min_overlap: int = 60) -> float:
    """Largest Pearson correlation of a[i] with b[i + lag] over every lag with at least ``min_overlap`` pairs."""
    from scipy.signal import correlate

    na, nb = len(a), len(b)
    if min(na, nb) < min_overlap:
        return -1.0
    sab = correlate(b, a, mode="full", method="fft")  # entry j: Σ_i a[i] b[i + lag], lag = j − (na − 1)
    lags = np.arange(-(na - 1), nb)
    lo, hi = np.maximum(0, -lags), np.minimum(na, nb - lags)
    n = hi - lo
    keep = n >= min_overlap
    lags, lo, hi, n, sab = lags[keep], lo[keep], hi[keep], n[keep], sab[keep]

    def sums(y, i, j):
        c, c2 = np.concatenate([[0.0], np.cumsum(y)]), np.concatenate([[0.0], np.cumsum(y * y)])
        return c[j] - c[i], c2[j] - c2[i]

    sa, sa2 = sums(a, lo, hi)
    sb, sb2 = sums(b, lo + lags, hi + lags)
    va, vb = sa2 - sa ** 2 / n, sb2 - sb ** 2 / n
    r = (sab - sa * sb / n) / np.sqrt(np.maximum(va * vb, 1e-300))
    r[(va < 1e-9 * n) | (vb < 1e-9 * n)] = 0.0
    return float(r.max())


def _resamplings(y: np.ndarray):
    """The series and its block means over 2 … 52 steps (hourly → daily, monthly → yearly, …), several phases."""
    for k in (1, 2, 3, 4, 7, 12, 24, 48, 52):
        for phase in range(0, k, max(1, k // 4)):
            n = (len(y) - phase) // k
            if n >= 60:
                yield y[phase:phase + n * k].reshape(n, k).mean(1)


def _same_record(a: np.ndarray, b: np.ndarray) -> float:
    """How strongly two series look like samplings of the same measurements: the best lagged correlation of their
    first differences after aggregating either one (unrelated bundled series stay below 0.9)."""
    best = max(_max_lagged_corr(np.diff(x), np.diff(b)) for x in _resamplings(a))
    return max(best, max(_max_lagged_corr(np.diff(a), np.diff(x)) for x in _resamplings(b)))


def test_no_held_out_record_in_the_pretraining_corpus():
    """The zero-shot claim needs held-out series never seen in pre-training, in any sampling: statsmodels'
    yearly sunspots (annual means of the held-out monthly series) were once in the corpus."""
    corpus = training.build_corpus(12, training.config_for("tiny"), 0, real=True)
    assert corpus.real, "no bundled real series available (statsmodels / pmdarima / vega_datasets)"
    held = {n: data.load_real(n) for n in data.HELD_OUT}
    for name, y in corpus.real.items():
        assert name not in data.HELD_OUT and data.REAL[name].record not in data.HELD_OUT_RECORDS, name
        for h, yh in held.items():
            r = _same_record(yh, np.asarray(y, float))
            assert r < 0.97, f"pre-training series {name!r} looks like a resampling of held-out {h!r} (r = {r:.3f})"
    assert "sunspots_yearly" not in data.PRETRAIN_REAL
    # the detector finds the leak it guards against: yearly sunspots are the monthly series' annual means
    assert _same_record(held["sunspots"], data.load_real("sunspots_yearly")) > 0.99


def test_sampler_redraws_constant_contexts():
    cfg = training.config_for("micro")
    n = 3 * (cfg.context + max(cfg.horizons))
    rng = np.random.default_rng(0)
    synth = np.stack([np.zeros(n), rng.standard_normal(n)]).astype(np.float32)  # one series without variation
    corpus = training.Corpus(synth, np.array([4, 2]), {})
    x, v, fut = training.sample_batch(corpus, cfg, 64, np.random.default_rng(1))
    assert x.shape == (64, cfg.context) and not training.flat_contexts(x, v).any()
    assert training.flat_contexts(torch.zeros(2, 8), torch.ones(2, 8, dtype=torch.bool)).all()


def test_auto_ets_fits_half_hourly_demand():
    """AutoETS on the held-out half-hourly demand (values ~30,000, m = 48) once picked a damped trend with
    α = β = 1 after its seasonal fits failed on the raw scale (MASE 8.1, seasonal naive 0.99); it now fits the
    standardised, STL-adjusted series and drops non-converged fits."""
    from engines.rose.experiment import heldout_origins

    y = data.load_real("taylor")
    H, m = 96, 48
    mase = []
    for t in heldout_origins(len(y), H):
        mean, lo, hi = baselines.STATISTICAL["auto_ets"](y[:t], H, m)
        assert mean.shape == (H,) and np.all(lo <= mean) and np.all(mean <= hi)
        mase.append(np.mean(np.abs(y[t:t + H] - mean)) / baselines.mase_scale(y[:t], m))
    assert np.mean(mase) < 1.5, mase
    # an affine change of units changes the forecast by the same map (fits on the standardised series)
    a = baselines.STATISTICAL["auto_ets"](y[:3000], 24, m)[0]
    b = baselines.STATISTICAL["auto_ets"](1e-3 * y[:3000] + 7.0, 24, m)[0]
    assert np.allclose(1e-3 * a + 7.0, b, rtol=1e-4, atol=1e-6)


def test_rebuild_drops_the_superseded_model(tmp_path, monkeypatch):
    import json

    from engines.rose import release as rose_release

    monkeypatch.setenv("PAPERLAB_RELEASE_DIR", str(tmp_path))
    arts = {k: {"label": k, "bytes": 10, "metrics": {}} for k in ("rose/tiny-old", "rose/tiny-new", "zoo/clip/x")}
    (tmp_path / "RELEASE.json").write_text(json.dumps({"version": 1, "bytes": 30, "artifacts": arts}))
    for k in arts:
        (tmp_path / k).mkdir(parents=True)
    (tmp_path / "rose" / "tiny-orphan").mkdir()
    assert rose_release._drop_superseded("tiny-new") == ["rose/tiny-old", "rose/tiny-orphan"]
    rel = json.loads((tmp_path / "RELEASE.json").read_text())
    assert sorted(rel["artifacts"]) == ["rose/tiny-new", "zoo/clip/x"] and rel["bytes"] == 20
    assert sorted(p.name for p in (tmp_path / "rose").iterdir()) == ["tiny-new"] and (tmp_path / "zoo/clip/x").is_dir()
