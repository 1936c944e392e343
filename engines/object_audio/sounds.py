"""The sounding classes, their audio (real CC0 recordings where they fit), log-mel and Griffin-Lim.

Every class has a characteristic sound. Real recordings come from Debian's ``sonic-pi-samples``
(``/usr/share/sonic-pi/samples``, CC0); the engine (and any class whose file is missing) is
synthesised. Each clip is 1 s at 16 kHz with ±5 % pitch jitter, a random onset and gain.
"""
from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

import numpy as np

SR = 16_000
CLIP_S = 1.0
N_SAMPLES = int(SR * CLIP_S)
N_FFT = 512
HOP = 160
N_MELS = 64
N_FRAMES = 96
LOG_FLOOR = 1e-4
# log-mel is mapped to roughly [-1, 1]: (log(mel) - LOG_MID) / LOG_HALF
LOG_MID, LOG_HALF = -3.5, 5.5

SAMPLES_DIR = Path(os.environ.get("PAPERLAB_SONIC_PI_SAMPLES", "/usr/share/sonic-pi/samples"))

# class -> (visual shape from minicanvas, RGB colour, sonic-pi sample or None, repeat rate in Hz)
SOUND_CLASSES: dict[str, dict] = {
    "bell": dict(shape="circle", colour=(0.95, 0.85, 0.10), sample="perc_bell.flac", rate=0.0),
    "engine": dict(shape="square", colour=(0.36, 0.36, 0.38), sample=None, rate=0.0),
    "bird": dict(shape="triangle", colour=(0.90, 0.12, 0.10), sample="misc_crow.flac", rate=0.0),
    "rain": dict(shape="diamond", colour=(0.12, 0.30, 0.92), sample="vinyl_hiss.flac", rate=0.0),
    "drum": dict(shape="ring", colour=(0.55, 0.33, 0.12), sample="drum_bass_hard.flac", rate=3.0),
}
CLASSES = list(SOUND_CLASSES)
# silent distractors: shapes that never sound
SILENT_SHAPES = ["star", "cross", "arrow"]
SILENT_COLOURS = [(0.10, 0.65, 0.15), (0.55, 0.15, 0.75), (1.00, 0.45, 0.75), (0.00, 0.75, 0.80)]


def samples_available() -> bool:
    return SAMPLES_DIR.is_dir()


@lru_cache(maxsize=None)
def load_sample(name: str) -> np.ndarray | None:
    """Decode a sonic-pi FLAC to mono float32 at 16 kHz (PyAV); None when the package is missing."""
    path = SAMPLES_DIR / name
    if not path.exists():
        return None
    import av

    with av.open(str(path)) as f:
        res = av.AudioResampler(format="flt", layout="mono", rate=SR)
        chunks = []
        for frame in f.decode(audio=0):
            for out in res.resample(frame):
                chunks.append(out.to_ndarray().reshape(-1))
        for out in res.resample(None):
            chunks.append(out.to_ndarray().reshape(-1))
    x = np.concatenate(chunks).astype(np.float32)
    # trim leading silence, normalise peak
    nz = np.nonzero(np.abs(x) > 0.02 * np.abs(x).max())[0]
    x = x[nz[0]:] if len(nz) else x
    return x / max(np.abs(x).max(), 1e-6)


def source(name: str) -> str:
    """Where a class's sound comes from ("sonic-pi: perc_bell.flac" or "synthesised")."""
    s = SOUND_CLASSES[name]["sample"]
    return f"sonic-pi: {s}" if s and load_sample(s) is not None else "synthesised"


def _synth(name: str, rng, pitch: float) -> np.ndarray:
    t = np.arange(N_SAMPLES) / SR
    if name == "bell":
        f = 880 * pitch
        x = sum(a * np.sin(2 * np.pi * f * k * t) for k, a in ((1, 1.0), (2.76, 0.5), (5.4, 0.25)))
        return x * np.exp(-3 * t)
    if name == "engine":
        f = 110 * pitch
        saw = sum(np.sin(2 * np.pi * f * k * t) / k for k in range(1, 13))  # band-limited sawtooth
        return saw * (0.6 + 0.4 * np.sin(2 * np.pi * 8 * t))
    if name == "bird":
        ph = (t * 4) % 1.0
        fr = 2000 * pitch * (1 + ph)  # 2 -> 4 kHz chirps
        return np.sin(2 * np.pi * np.cumsum(fr) / SR) * (ph < 0.6)
    if name == "rain":
        n = rng.standard_normal(N_SAMPLES)
        spec = np.fft.rfft(n)
        fr = np.fft.rfftfreq(N_SAMPLES, 1 / SR)
        spec[(fr < 1000 * pitch) | (fr > 3000 * pitch)] = 0
        return np.fft.irfft(spec, N_SAMPLES)
    if name == "drum":
        f = 80 * pitch
        ph = (t * 3) % 1.0 / 3
        return np.sin(2 * np.pi * f * ph) * np.exp(-ph * 25)
    raise ValueError(name)


def _resample(x: np.ndarray, factor: float) -> np.ndarray:
    """Pitch shift by ``factor`` (> 1 higher) through linear-interpolation resampling."""
    n = int(len(x) / factor)
    return np.interp(np.arange(n) * factor, np.arange(len(x)), x).astype(np.float32)


def class_clip(name: str, rng: np.random.Generator) -> np.ndarray:
    """One 1-s clip of class ``name`` with pitch (±5 %), onset and gain jitter; peak ≈ 1."""
    spec = SOUND_CLASSES[name]
    pitch = float(rng.uniform(0.95, 1.05))
    raw = load_sample(spec["sample"]) if spec["sample"] else None
    if raw is None:
        x = _synth(name, rng, pitch)
    else:
        r = _resample(raw, pitch)
        if spec["rate"] > 0:  # repeated hits (drum) at its rate
            x = np.zeros(N_SAMPLES, np.float32)
            period = int(SR / (spec["rate"] * pitch))
            hit = r[:period]
            for s in range(int(rng.integers(0, period // 3)), N_SAMPLES, period):
                seg = hit[: N_SAMPLES - s]
                x[s:s + len(seg)] += seg
        elif len(r) < N_SAMPLES:
            x = np.tile(r, N_SAMPLES // len(r) + 1)[:N_SAMPLES]
        else:
            start = int(rng.integers(0, max(1, min(len(r) - N_SAMPLES, SR // 4))))
            x = r[start:start + N_SAMPLES]
    x = np.asarray(x, np.float32)
    if name == "rain" and raw is not None:  # the hiss band-passed to 1-3 kHz, like rain on a roof
        spec_ = np.fft.rfft(x)
        fr = np.fft.rfftfreq(len(x), 1 / SR)
        spec_[(fr < 1000 * pitch) | (fr > 3000 * pitch)] = 0
        x = np.fft.irfft(spec_, len(x)).astype(np.float32)
    shift = int(rng.integers(0, SR // 20))
    x = np.concatenate([np.zeros(shift, np.float32), x])[:N_SAMPLES]
    return x / max(np.abs(x).max(), 1e-6)


def mixture(classes: list[str], rng: np.random.Generator) -> np.ndarray:
    """Gain-randomised sum of one clip per class, peak-normalised to 0.9."""
    x = np.zeros(N_SAMPLES, np.float32)
    for c in classes:
        x += float(rng.uniform(0.6, 1.0)) * class_clip(c, rng)
    return 0.9 * x / max(np.abs(x).max(), 1e-6)


# ----------------------------------------------------------------------------- log-mel and back


def _hz_to_mel(f):
    return 2595.0 * np.log10(1.0 + np.asarray(f, float) / 700.0)


def _mel_to_hz(m):
    return 700.0 * (10 ** (np.asarray(m, float) / 2595.0) - 1.0)


@lru_cache(maxsize=1)
def mel_basis() -> np.ndarray:
    """HTK-style triangular filters (N_MELS, N_FFT // 2 + 1), slaney-normalised, 0 to 8 kHz."""
    freqs = np.linspace(0, SR / 2, N_FFT // 2 + 1)
    pts = _mel_to_hz(np.linspace(_hz_to_mel(0), _hz_to_mel(SR / 2), N_MELS + 2))
    fb = np.zeros((N_MELS, len(freqs)))
    for i in range(N_MELS):
        lo, c, hi = pts[i], pts[i + 1], pts[i + 2]
        fb[i] = np.maximum(0, np.minimum((freqs - lo) / (c - lo), (hi - freqs) / (hi - c)))
        fb[i] *= 2.0 / (hi - lo)
    return fb.astype(np.float32)


def log_mel(wave):
    """(…, N_SAMPLES) waveform(s) → normalised log-mel (…, N_MELS, N_FRAMES) as a torch tensor."""
    import torch

    x = torch.as_tensor(np.asarray(wave, np.float32))
    shape = x.shape[:-1]
    x = x.reshape(-1, x.shape[-1])
    spec = torch.stft(x, N_FFT, HOP, window=torch.hann_window(N_FFT), return_complex=True).abs()
    mel = torch.as_tensor(mel_basis()) @ spec
    out = (torch.log(mel[..., :N_FRAMES] + LOG_FLOOR) - LOG_MID) / LOG_HALF
    return out.reshape(*shape, N_MELS, N_FRAMES)


def griffin_lim(logmel, n_iter: int = 32, seed: int = 0) -> np.ndarray:
    """Normalised log-mel (N_MELS, N_FRAMES) → waveform: pseudo-inverse mel, then Griffin-Lim phases."""
    import torch

    m = torch.as_tensor(np.asarray(logmel, np.float32))
    mel = torch.exp(m * LOG_HALF + LOG_MID) - LOG_FLOOR
    fb = torch.as_tensor(mel_basis())
    mag = torch.clamp(torch.linalg.pinv(fb) @ mel.clamp(min=0), min=0)
    win = torch.hann_window(N_FFT)
    g = torch.Generator().manual_seed(seed)
    angles = torch.exp(2j * np.pi * torch.rand(mag.shape, generator=g))
    length = (N_FRAMES - 1) * HOP
    prev = torch.zeros_like(mag, dtype=torch.complex64)
    for _ in range(n_iter):  # fast Griffin-Lim (momentum 0.99)
        y = torch.istft(mag * angles, N_FFT, HOP, window=win, length=length)
        rebuilt = torch.stft(y, N_FFT, HOP, window=win, return_complex=True)[:, :N_FRAMES]
        angles = rebuilt - 0.99 * prev
        prev = rebuilt
        angles = angles / angles.abs().clamp(min=1e-8)
    y = torch.istft(mag * angles, N_FFT, HOP, window=win, length=length).numpy()
    y = np.pad(y, (0, N_SAMPLES - len(y)))
    return (0.9 * y / max(np.abs(y).max(), 1e-6)).astype(np.float32)


def to_wav_bytes(wave: np.ndarray, sr: int = SR) -> bytes:
    """16-bit PCM WAV bytes (stdlib ``wave``)."""
    import io
    import wave as _wave

    pcm = (np.clip(wave, -1, 1) * 32767).astype("<i2")
    buf = io.BytesIO()
    with _wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(sr)
        w.writeframes(pcm.tobytes())
    return buf.getvalue()
