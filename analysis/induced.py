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
    a = actions.assign(run_id=actions["run_id"].astype(str), policy=actions["policy"].astype(str))
    a = a[a["kind"] == INDUCED_REREAD]
    undone = a["undone"].astype(bool)
    capped = a[undone].groupby(keys).size()
    made = a[~undone]
    repeats = (made.groupby(keys).size()
               - made.drop_duplicates([*keys, "first_msg"]).groupby(keys).size())
    idx = pd.MultiIndex.from_frame(out[keys])
    out["induced_rereads_capped_n"] = capped.reindex(idx, fill_value=0).to_numpy().astype("int64")
    out["induced_rereads_repeat_n"] = repeats.reindex(idx, fill_value=0).to_numpy().astype("int64")
    invited = made[made["when"] == INDUCED_INVITED].groupby(keys).size()
    out["induced_rereads_invited_n"] = invited.reindex(idx, fill_value=0).to_numpy().astype("int64")
    estimated = made[made["size_estimate"] != ""].groupby(keys).size()
    out["induced_rereads_estimated_n"] = (estimated.reindex(idx, fill_value=0).to_numpy()
                                          .astype("int64"))
    return out


def includes_induced(values: pd.Series | list[int] | None) -> bool:
    """Whether figures built from these ``induced_rereads_n`` values include induced work."""
    if values is None:
        return False
    return any(int(v) > 0 for v in values if not pd.isna(v))
