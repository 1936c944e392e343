"""``python -m engines.moex.train_grid``: train every variant x seed of the default recipe into the cache
(what ``make reproduce METHOD=moex`` measures; seed 0 of the tab's variants first, for the release)."""
from __future__ import annotations

import sys
import time

from engines.common.threads import torch_threads

from . import train as T
from .experiment import default_train_config
from .model import VARIANTS

ORDER = ["dense_gelu", "topk_gelu", "moex", "dense_relu", "topk_relu", "topk_gelu_sparsity"]


def main(seeds: int = 3) -> None:
    runs = [(v, 0) for v in ORDER] + [(v, s) for s in range(1, seeds) for v in ORDER]
    assert set(ORDER) == set(VARIANTS)
    with torch_threads(1):
        for v, s in runs:
            t0 = time.perf_counter()
            tc = default_train_config(v, s)
            model, rec = T.ensure(tc, progress=lambda f, m: None)
            print(f"{v} seed {s}: val loss {rec['val_loss']:.4f} (init {rec['init_val_loss']:.3f}), "
                  f"{time.perf_counter() - t0:.0f} s", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
