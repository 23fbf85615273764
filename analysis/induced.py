"""Induced re-reads: what a replay added because its policy removed content the run needs later.

The replay inserts the re-read the agent would have made where the recorded run depends on a
removed block and nothing supplies it (``replay.engine.induced``); the trace marks it — the
requests' ``induced_rereads``, ``induced_tokens`` and ``induced_cost_usd``, the actions of kind
``induced_reread`` (undone: past the cap per turn) — so every figure can be split into recorded
and induced work.  ``induced_summary`` is the readable definition of the ``induced_rereads_*``
metrics (``analysis.per_run.induced`` computes the same without pandas) and ``includes_induced``
says whether a table's figures include any.

Not here: the need rules (``replay.engine.needs``).
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd

from analysis.per_run.induced import INDUCED_NOTE
from replay.engine.trace import INDUCED_INVITED, INDUCED_REREAD

__all__ = ["INDUCED_NOTE", "includes_induced", "induced_summary"]


def induced_summary(requests: pd.DataFrame, actions: pd.DataFrame) -> pd.DataFrame:
    """The ``induced_rereads_*`` columns, one row per (run_id, policy) of ``requests``."""
    keys = ["run_id", "policy"]
    r = requests.assign(run_id=requests["run_id"].astype(str),
                        policy=requests["policy"].astype(str))
    out = r.groupby(keys, sort=False).agg(
        induced_rereads_n=("induced_rereads", "sum"),
        induced_rereads_tokens=("induced_tokens", "sum"),
        induced_rereads_cost_usd=("induced_cost_usd", "sum")).reset_index()
    # the induced re-reads' actions (a few a run) counted in one pass, not a pandas group-by
    # of each count's rows (~5 ms each however few the rows)
    capped: Counter[tuple[str, str]] = Counter()
    made: Counter[tuple[str, str]] = Counter()
    invited: Counter[tuple[str, str]] = Counter()
    estimated: Counter[tuple[str, str]] = Counter()
    firsts: dict[tuple[str, str], set[object]] = {}
    a = actions[actions["kind"] == INDUCED_REREAD]
    for rid, pol, undone, first, when, size in zip(
            *(a[c].tolist() for c in ("run_id", "policy", "undone", "first_msg", "when",
                                      "size_estimate"))):
        k = (str(rid), str(pol))
        if bool(undone):
            capped[k] += 1
            continue
        made[k] += 1
        firsts.setdefault(k, set()).add(first)
        invited[k] += when == INDUCED_INVITED
        estimated[k] += size != ""
    at = list(zip(out["run_id"], out["policy"]))
    out["induced_rereads_capped_n"] = np.array([capped[k] for k in at], dtype="int64")
    out["induced_rereads_repeat_n"] = np.array([made[k] - len(firsts.get(k, ())) for k in at],
                                               dtype="int64")
    out["induced_rereads_invited_n"] = np.array([invited[k] for k in at], dtype="int64")
    out["induced_rereads_estimated_n"] = np.array([estimated[k] for k in at], dtype="int64")
    return out


def includes_induced(values: pd.Series | list[int] | None) -> bool:
    """Whether figures built from these ``induced_rereads_n`` values include induced work."""
    if values is None:
        return False
    return any(int(v) > 0 for v in values if not pd.isna(v))
