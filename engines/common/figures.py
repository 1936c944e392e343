"""Thread-safe matplotlib figures: the object API only (``Figure`` + Agg), never pyplot's global state.

Web handlers run in up to 8 threads; pyplot's figure manager and mathtext state are shared
across threads (random ``ParseException``s under load). ``subplots`` is a drop-in for
``plt.subplots`` that builds a free-standing ``Figure``; nothing needs ``plt.close``.

The object API alone is not enough: matplotlib keeps one mathtext parser per process (a pyparsing
grammar with internal state), used by every figure for ``$...$`` text and log-axis tick labels
(``$\\mathdefault{10^{0}}$``). Two threads laying out such labels at once raise ``ValueError:
ParseException``. :func:`_serialise_mathtext` puts a lock around that parser, once per process.
"""
from __future__ import annotations

import threading
from typing import Any

_FIGURE_KW = ("figsize", "dpi", "facecolor", "edgecolor", "layout", "constrained_layout", "tight_layout")


_mathtext_lock = threading.RLock()
_patched = False


def _serialise_mathtext() -> None:
    """Wrap matplotlib's shared mathtext parser in a lock (idempotent)."""
    global _patched
    if _patched:
        return
    with _mathtext_lock:
        if _patched:
            return
        from matplotlib import _mathtext

        unsafe = _mathtext.Parser.parse

        def parse(self, *args, **kwargs):
            with _mathtext_lock:
                return unsafe(self, *args, **kwargs)

        _mathtext.Parser.parse = parse
        _patched = True


def subplots(nrows: int = 1, ncols: int = 1, **kw: Any):
    """``(Figure, axes)`` like ``plt.subplots``, without registering the figure with pyplot."""
    from matplotlib.figure import Figure

    _serialise_mathtext()

    fig = Figure(**{k: kw.pop(k) for k in _FIGURE_KW if k in kw})
    return fig, fig.subplots(nrows, ncols, **kw)


def figure(**kw: Any):
    from matplotlib.figure import Figure

    _serialise_mathtext()

    return Figure(**kw)


def colormap(name: str):
    import matplotlib

    return matplotlib.colormaps[name]
