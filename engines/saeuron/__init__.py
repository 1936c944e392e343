"""SAeUron: concept unlearning in diffusion models with sparse autoencoders (Cywiński & Deja, ICML 2025)."""
