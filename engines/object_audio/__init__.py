"""Sounding that Object (Li et al., ICML 2025): click an object, segment it, generate its sound.

Modules: ``sounds`` (sound classes, real CC0 samples, log-mel, Griffin-Lim), ``scenes`` (audio-visual
scenes), ``segment`` (flood fill, GrabCut, SAM / LiteMedSAM adapter), ``models`` (tiny CLAP, mel
autoencoder, single-head attention conditioner, UNet, classifier), ``train``, ``generate`` (mask
substitution with variance rescaling, CFG + DDIM), ``evaluate`` (benchmark), ``reproduce``.
"""
