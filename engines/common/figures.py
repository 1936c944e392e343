"""Thread-safe matplotlib figures: the object API only (``Figure`` + Agg), never pyplot's global state.

Web handlers run in up to 8 threads; pyplot's figure manager and mathtext state are shared
across threads (random ``ParseException``s under load). ``subplots`` is a drop-in for
``plt.subplots`` that builds a free-standing ``Figure``; nothing needs ``plt.close``.
"""
from __future__ import annotations

from typing import Any

_FIGURE_KW = ("figsize", "dpi", "facecolor", "edgecolor", "layout", "constrained_layout", "tight_layout")


def subplots(nrows: int = 1, ncols: int = 1, **kw: Any):
    """``(Figure, axes)`` like ``plt.subplots``, without registering the figure with pyplot."""
    from matplotlib.figure import Figure

    fig = Figure(**{k: kw.pop(k) for k in _FIGURE_KW if k in kw})
    return fig, fig.subplots(nrows, ncols, **kw)


def figure(**kw: Any):
    from matplotlib.figure import Figure

    return Figure(**kw)


def colormap(name: str):
    import matplotlib

    return matplotlib.colormaps[name]
