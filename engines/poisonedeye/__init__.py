"""PoisonedEye: knowledge poisoning of a vision-language RAG system with one image-text pair (ICML 2025)."""
