"""Published per-head tables for tests: random profiles with the author's column names, written
by the table, survey and dashboard tests alike."""

from __future__ import annotations

import numpy as np
import pandas as pd


def author_table(model: str, layers: int, heads: int, kv: int, dim: int, seed: int) -> pd.DataFrame:
    """Random per-head rows with the author's column names (profiles on the simplex)."""
    rng = np.random.default_rng(seed)
    count = layers * heads
    profile = rng.dirichlet(np.ones(4), count)
    sym = rng.dirichlet([4.0, 1.0, 1.0], count)
    sym[: count // 4, 0] = 0.995  # a quarter of Type II heads (c_S + d_S <= 1/50)
    sym[: count // 4, 1:] = 0.0025
    layer, head = np.divmod(np.arange(count), heads)
    return pd.DataFrame(
        {
            "model": model,
            "layer": layer,
            "head": head,
            "kv_head": head // (heads // kv),
            "dim": dim,
            "symmetric_energy": 1 - profile[:, 0],
            "balance": rng.uniform(0.9, 1.0, count),
            "pairing": rng.uniform(0, 1, count),
            "a": profile[:, 0],
            "b": profile[:, 1],
            "c": profile[:, 2],
            "d": profile[:, 3],
            "b_sym": sym[:, 0],
            "c_sym": sym[:, 1],
            "d_sym": sym[:, 2],
        }
    )


def head_rows(models: int, layers: int = 1, heads: int = 1, name: str = "m{}") -> pd.DataFrame:
    """Constant profiles: a per-head table of ``models`` models (named by ``name``) of ``layers``
    x ``heads`` heads, the columns a table needs and no others."""
    count = models * layers * heads
    index = np.arange(count)
    return pd.DataFrame(
        {
            "model": [name.format(i // (layers * heads)) for i in index],
            "layer": (index // heads) % layers,
            "head": index % heads,
            **{c: 0.25 for c in ("a", "b", "c", "d")},
            **{c: 1 / 3 for c in ("b_sym", "c_sym", "d_sym")},
        }
    )
