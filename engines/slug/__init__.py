"""SLUG: targeted unlearning with a single layer unlearning gradient (Cai, Tan, Asif; ICML 2025)."""
