"""The bundled synthetic repository: a small library whose history renames parameters, changes return
types, renames and moves helpers and renames attributes, with tests kept in step at every commit.

``synthetic_repo()`` writes it as a deterministic git history (fixed dates and authors, so commit
hashes are the same on every machine) under the data directory. It guarantees a fixed set of caller
and callee fail-to-pass instances for CI (spec §4, data 2).
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from engines.common.settings import get_settings

from .gitrepo import build_history, head

NAME = "minilib"

# ---------------------------------------------------------------- commit 1: the first release
GEOMETRY_1 = '''"""Plane geometry helpers."""


def rect_area(w, h):
    """Area of a w-by-h rectangle."""
    return w * h


def scale(points, k):
    """Scale every (x, y) point by k."""
    return [(x * k, y * k) for x, y in points]


def bounding_box(points):
    """(xmin, ymin, xmax, ymax) of the points."""
    xs = [x for x, _ in points]
    ys = [y for _, y in points]
    return min(xs), min(ys), max(xs), max(ys)
'''
TEXT_1 = '''"""Text helpers."""


def slugify(text):
    """Lower-case words joined by dashes."""
    return "-".join(text.lower().split())


def word_counts(text):
    """How often each word occurs."""
    counts = {}
    for word in text.lower().split():
        counts[word] = counts.get(word, 0) + 1
    return counts
'''
STATS_1 = '''"""Descriptive statistics."""


def mean(xs):
    """Arithmetic mean."""
    return sum(xs) / len(xs)


def summarize(xs):
    """Smallest value, largest value and mean."""
    return min(xs), max(xs), mean(xs)
'''
TEST_GEOMETRY_1 = '''from minilib.geometry import bounding_box, rect_area, scale


def unit_square():
    return [(0, 0), (1, 0), (1, 1), (0, 1)]


def test_rect_area():
    assert rect_area(w=2, h=3) == 6


def test_scale():
    assert scale(unit_square(), 2)[2] == (2, 2)


def test_bounding_box():
    assert bounding_box(unit_square()) == (0, 0, 1, 1)
'''
TEST_TEXT_1 = '''from minilib.text import slugify, word_counts


def test_slugify():
    assert slugify("Hello World") == "hello-world"


def test_word_counts():
    counts = word_counts("a b a")
    assert counts["a"] == 2 and counts["b"] == 1
'''
TEST_STATS_1 = '''from minilib.stats import mean, summarize


def test_mean():
    assert mean([1, 2, 3]) == 2


def test_summarize():
    lo, hi, avg = summarize([1, 2, 3, 6])
    assert (lo, hi, avg) == (1, 6, 3)
'''

# ---------------------------------------------------------------- commit 2: parameters renamed
GEOMETRY_2 = GEOMETRY_1.replace('''def rect_area(w, h):
    """Area of a w-by-h rectangle."""
    return w * h''', '''def rect_area(width, height):
    """Area of a width-by-height rectangle."""
    return width * height''').replace('''def scale(points, k):
    """Scale every (x, y) point by k."""
    return [(x * k, y * k) for x, y in points]''', '''def scale(points, factor):
    """Scale every (x, y) point by factor."""
    return [(x * factor, y * factor) for x, y in points]''')
TEXT_2 = TEXT_1.replace('''def slugify(text):
    """Lower-case words joined by dashes."""
    return "-".join(text.lower().split())''', '''def slugify(text, sep="-"):
    """Lower-case words joined by ``sep``."""
    return sep.join(text.lower().split())''')
TEST_GEOMETRY_2 = TEST_GEOMETRY_1.replace("rect_area(w=2, h=3)", "rect_area(width=2, height=3)").replace(
    "scale(unit_square(), 2)", "scale(unit_square(), factor=2)")
TEST_TEXT_2 = TEST_TEXT_1.replace('''def test_slugify():
    assert slugify("Hello World") == "hello-world"''', '''def test_slugify():
    assert slugify("Hello World") == "hello-world"
    assert slugify("Hello World", sep="_") == "hello_world"''')

# ---------------------------------------------------------------- commit 3: return types changed
STATS_3 = STATS_1.replace('''def summarize(xs):
    """Smallest value, largest value and mean."""
    return min(xs), max(xs), mean(xs)''', '''def summarize(xs):
    """A dict with the smallest value, the largest value and the mean."""
    return {"min": min(xs), "max": max(xs), "mean": mean(xs)}''')
TEXT_3 = TEXT_2.replace('''def word_counts(text):
    """How often each word occurs."""
    counts = {}
    for word in text.lower().split():
        counts[word] = counts.get(word, 0) + 1
    return counts''', '''def word_counts(text):
    """(word, count) pairs, most frequent first, ties alphabetical."""
    counts = {}
    for word in text.lower().split():
        counts[word] = counts.get(word, 0) + 1
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))''')
TEST_STATS_3 = TEST_STATS_1.replace('''def test_summarize():
    lo, hi, avg = summarize([1, 2, 3, 6])
    assert (lo, hi, avg) == (1, 6, 3)''', '''def test_summarize():
    s = summarize([1, 2, 3, 6])
    assert (s["min"], s["max"], s["mean"]) == (1, 6, 3)''')
TEST_TEXT_3 = TEST_TEXT_2.replace('''def test_word_counts():
    counts = word_counts("a b a")
    assert counts["a"] == 2 and counts["b"] == 1''', '''def test_word_counts():
    assert word_counts("b a b c a b") == [("b", 3), ("a", 2), ("c", 1)]''')

# ---------------------------------------------------------------- commit 4: helpers renamed and moved
STATS_4 = STATS_3.replace("def mean(xs):", "def average(xs):").replace('"mean": mean(xs)', '"mean": average(xs)')
GEOMETRY_4 = GEOMETRY_2.replace('''def scale(points, factor):''', '''def scale_points(points, factor):''').replace(
    '''def bounding_box(points):
    """(xmin, ymin, xmax, ymax) of the points."""
    xs = [x for x, _ in points]
    ys = [y for _, y in points]
    return min(xs), min(ys), max(xs), max(ys)''', '''def _coords(points):
    """The x and the y coordinates as two lists."""
    return [x for x, _ in points], [y for _, y in points]


def bounding_box(points):
    """(xmin, ymin, xmax, ymax) of the points."""
    xs, ys = _coords(points)
    return min(xs), min(ys), max(xs), max(ys)


class Polygon:
    """A closed polygon given by its vertices."""

    def __init__(self, pts):
        self.pts = list(pts)

    def perimeter(self):
        n = len(self.pts)
        total = 0.0
        for i in range(n):
            (x0, y0), (x1, y1) = self.pts[i], self.pts[(i + 1) % n]
            total += ((x1 - x0) ** 2 + (y1 - y0) ** 2) ** 0.5
        return total

    def scaled(self, factor):
        return Polygon(scale_points(self.pts, factor))''')
TEXT_4 = TEXT_3.replace('''def slugify(text, sep="-"):
    """Lower-case words joined by ``sep``."""
    return sep.join(text.lower().split())''', '''def normalize(text):
    """Lower-case words with punctuation stripped."""
    return [w.strip(".,;:!?") for w in text.lower().split()]


def slugify(text, sep="-"):
    """Normalised words joined by ``sep``."""
    return sep.join(normalize(text))''').replace("    for word in text.lower().split():",
                                                  "    for word in normalize(text):")
TEST_STATS_4 = TEST_STATS_3.replace("from minilib.stats import mean, summarize",
                                    "from minilib.stats import average, summarize").replace(
    '''def test_mean():
    assert mean([1, 2, 3]) == 2''', '''def test_average():
    assert average([1, 2, 3]) == 2''')
TEST_GEOMETRY_4 = '''from minilib.geometry import Polygon, bounding_box, rect_area, scale_points


def unit_square():
    return [(0, 0), (1, 0), (1, 1), (0, 1)]


def make_polygon():
    return Polygon(pts=unit_square())


def test_rect_area():
    assert rect_area(width=2, height=3) == 6


def test_scale():
    assert scale_points(unit_square(), factor=2)[2] == (2, 2)


def test_bounding_box():
    assert bounding_box(unit_square()) == (0, 0, 1, 1)


def test_polygon():
    poly = make_polygon()
    assert poly.perimeter() == 4
    assert poly.scaled(3).perimeter() == 12
'''
TEST_TEXT_4 = TEST_TEXT_3.replace("from minilib.text import slugify, word_counts",
                                  "from minilib.text import normalize, slugify, word_counts").replace(
    '''    assert slugify("Hello World", sep="_") == "hello_world"''',
    '''    assert slugify("Hello World", sep="_") == "hello_world"
    assert slugify("Hello, World!") == "hello-world"


def test_normalize():
    assert normalize("Hi, there!") == ["hi", "there"]''')

# ---------------------------------------------------------------- commit 5 (HEAD): attributes renamed
GEOMETRY_5 = GEOMETRY_4.replace('''    def __init__(self, pts):
        self.pts = list(pts)''', '''    def __init__(self, points):
        self.points = list(points)''').replace("self.pts", "self.points")
TEST_GEOMETRY_5 = TEST_GEOMETRY_4.replace("Polygon(pts=unit_square())", "Polygon(points=unit_square())")
STATS_5 = STATS_4.replace('''def average(xs):
    """Arithmetic mean."""
    return sum(xs) / len(xs)''', '''def average(xs, weights=None):
    """Arithmetic mean, optionally weighted."""
    if weights is None:
        return sum(xs) / len(xs)
    return sum(x * w for x, w in zip(xs, weights)) / sum(weights)''')
TEST_STATS_5 = TEST_STATS_4.replace('''def test_average():
    assert average([1, 2, 3]) == 2''', '''def test_average():
    assert average([1, 2, 3]) == 2
    assert average([1, 3], weights=[3, 1]) == 1.5''')

INIT = '"""minilib: a tiny library whose history SyncBench rolls back."""\n'
README = "# minilib\n\nA small library used to build SyncBench out-of-sync instances.\n"


def _snap(geometry, text, stats, tg, tt, ts) -> dict[str, str]:
    return {"README.md": README, "minilib/__init__.py": INIT, "minilib/geometry.py": geometry,
            "minilib/text.py": text, "minilib/stats.py": stats, "tests/__init__.py": "",
            "tests/test_geometry.py": tg, "tests/test_text.py": tt, "tests/test_stats.py": ts}


SNAPSHOTS: list[tuple[str, dict[str, str]]] = [
    ("first release", _snap(GEOMETRY_1, TEXT_1, STATS_1, TEST_GEOMETRY_1, TEST_TEXT_1, TEST_STATS_1)),
    ("rename parameters: width/height, factor; slugify gains sep",
     _snap(GEOMETRY_2, TEXT_2, STATS_1, TEST_GEOMETRY_2, TEST_TEXT_2, TEST_STATS_1)),
    ("return types: summarize returns a dict, word_counts sorted pairs",
     _snap(GEOMETRY_2, TEXT_3, STATS_3, TEST_GEOMETRY_2, TEST_TEXT_3, TEST_STATS_3)),
    ("rename mean -> average, scale -> scale_points; add Polygon, normalize, _coords",
     _snap(GEOMETRY_4, TEXT_4, STATS_4, TEST_GEOMETRY_4, TEST_TEXT_4, TEST_STATS_4)),
    ("Polygon.pts -> Polygon.points; weighted average",
     _snap(GEOMETRY_5, TEXT_4, STATS_5, TEST_GEOMETRY_5, TEST_TEXT_4, TEST_STATS_5)),
]


def fingerprint() -> str:
    return hashlib.sha256(json.dumps(SNAPSHOTS, sort_keys=True).encode()).hexdigest()[:12]


def synthetic_repo(root: Path | None = None) -> Path:
    """The synthetic git repository (built once per content hash under ``<data_dir>/syncmind/repos``)."""
    root = root or get_settings().data_dir / "syncmind" / "repos"
    target = root / f"{NAME}-{fingerprint()}"
    if not (target / ".git").exists():
        build_history(target, SNAPSHOTS)
    head(target)  # a usable repository
    return target
