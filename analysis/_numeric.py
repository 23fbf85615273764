"""Numeric columns from any pandas dtype (NumPy, nullable, Arrow-backed) as plain arrays.

The metric modules accept the loaders' Arrow-backed frames and hand-built
frames alike; ``floats`` and ``nullable_ints`` are the only dtype handling they share.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def floats(s: pd.Series) -> pd.Series:
    """``s`` as float64, missing values as NaN, index kept."""
    vals = pd.array(s, dtype="Float64").to_numpy(dtype="float64", na_value=np.nan)
    return pd.Series(vals, index=s.index)


def nullable_ints(s: pd.Series) -> pd.arrays.IntegerArray:
    """``s`` as a nullable Int64 array (missing values as ``<NA>``)."""
    if pd.api.types.is_integer_dtype(s.dtype):
        # the same values converted at once: one value at a time, an Arrow-backed column cost
        # ~2 us a value (most of ``summarisation``'s time over a few thousand requests)
        return pd.array(s, dtype="Int64")
    return pd.array([None if pd.isna(v) else int(v) for v in s], dtype="Int64")

