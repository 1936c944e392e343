"""ROSE: a general time-series forecaster pre-trained with decomposed frequency learning and a time-series register.

Wang et al., "Towards a General Time Series Forecasting Model with Unified Representation and Adaptive Transfer",
ICML 2025 (arXiv 2405.17478).
"""
