"""Issue 17: SLUG's layer and step are chosen on a validation half; the test half is only reported."""
from __future__ import annotations

import numpy as np

from engines.slug.concepts import Task, build_concept, split_task


def test_split_task_is_a_stratified_partition():
    labels = np.repeat(np.arange(3), [5, 4, 7])
    t = Task("toy", np.arange(len(labels))[:, None].astype(float), labels, ["a", "b", "c"], ["a", "b", "c"])
    v, te = split_task(t, seed=0)
    assert len(v.labels) + len(te.labels) == len(labels)
    assert not set(v.images[:, 0]) & set(te.images[:, 0])
    for c in range(3):
        assert abs(np.sum(v.labels == c) - np.sum(te.labels == c)) <= 1


def test_concept_with_heldout_split_keeps_both_halves():
    c = build_concept("digit", "three", n_forget=32, n_retain=64, heldout_split=True)
    assert c.test_task is not None and np.any(c.test_task.labels == c.index) and np.any(c.task.labels == c.index)
    plain = build_concept("digit", "three", n_forget=32, n_retain=64)
    assert plain.test_task is None
    assert len(c.task.labels) + len(c.test_task.labels) == len(plain.task.labels)
