"""FedAG: federated domain-knowledge infusion into a frozen CLIP (per-domain gating adapters, quality-aware
mutual distillation on server-side synthetic data, attention over adapters with an own-domain regulariser)."""
