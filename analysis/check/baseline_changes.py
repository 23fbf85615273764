"""What replacing one baseline with another changes: what ``check --update-baseline`` lists.

Each difference is a ``BaselineChange``: the versions the baseline was measured under, the runs,
metrics and policies added or removed, a run's log changed, a policy's settings changed, a value
moved beyond the stored digits (``baseline.same_value``), or what judged a run (its truth).

Not here: the baseline itself, measured, written and read (``analysis.check.baseline``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from analysis.check.baseline import Baseline, same_value
from analysis.metric_spec import count


@dataclass(frozen=True, slots=True, kw_only=True)
class BaselineChange:
    """One difference between two baselines (what ``--update-baseline`` changed)."""

    kind: str
    """``version``, ``run added``, ``run removed``, ``log changed``, ``policy added``,
    ``policy removed``, ``policy changed``, ``metric added``, ``metric removed``, ``value`` or
    ``truth`` (what judged a run: ``PolicyValues.truth``)."""
    where: str
    """What changed: ``policy / run / metric`` for values, else the name concerned."""
    old: Any
    new: Any


def diff_baselines(old: Baseline | None, new: Baseline) -> list[BaselineChange]:
    """What replacing ``old`` with ``new`` changes, headers first, then values in key order."""
    if old is None:
        return [BaselineChange(kind="created", where="baseline", old=None,
                               new=f"{count(len(new.runs), 'run')} × "
                                   f"{count(len(new.policies), 'policy', 'policies')} × "
                                   f"{count(len(new.metrics), 'metric')}")]
    versions = [(n, getattr(old, n), getattr(new, n)) for n in ("trace_version", "schema_version")]
    out = [BaselineChange(kind="version", where=n, old=a, new=b) for n, a, b in versions if a != b]
    out += _key_changes("run", old.runs, new.runs)
    out += [BaselineChange(kind="log changed", where=k, old=old.runs[k].sha256,
                           new=new.runs[k].sha256)
            for k in sorted(old.runs.keys() & new.runs.keys()) if old.runs[k] != new.runs[k]]
    out += _key_changes("metric", dict.fromkeys(old.metrics), dict.fromkeys(new.metrics))
    out += _key_changes("policy", old.policies, new.policies)
    for name in sorted(old.policies.keys() & new.policies.keys()):
        a, b = old.policies[name], new.policies[name]
        if a.digest != b.digest:
            out.append(BaselineChange(kind="policy changed", where=name, old=a.digest,
                                      new=b.digest))
        for run in sorted(a.values.keys() & b.values.keys()):
            va, vb = a.values[run], b.values[run]
            out += [BaselineChange(kind="value", where=f"{name} / {run} / {m}", old=va[m],
                                   new=vb[m])
                    for m in sorted(va.keys() & vb.keys()) if not same_value(va[m], vb[m])]
        if b.truth and not a.truth:  # (a baseline written before truth was stored)
            out.append(BaselineChange(kind="truth", where=name, old=None,
                                      new=f"the truth of {len(b.truth)} runs recorded"))
        out += [BaselineChange(kind="truth", where=f"{name} / {run}", old=a.truth[run],
                               new=b.truth[run])
                for run in sorted(a.truth.keys() & b.truth.keys()) if a.truth[run] != b.truth[run]]
    return out


def _key_changes(what: str, old: dict[str, Any], new: dict[str, Any]) -> list[BaselineChange]:
    return ([BaselineChange(kind=f"{what} removed", where=k, old=k, new=None)
             for k in sorted(old.keys() - new.keys())] +
            [BaselineChange(kind=f"{what} added", where=k, old=None, new=k)
             for k in sorted(new.keys() - old.keys())])
