"""The setting a sweep chose, as a policy file of its own: ``chosen.yaml``.

The chosen setting gets its own name, ``<base>-<first 8 hex of its setting id>`` (the base's
name would make ``replay run`` write over the base policy's outputs in ``out/<policy>/`` and
make baselines mix the two), and a comment block saying how it was chosen: the grid (design,
each swept path with its values), the constraints, the metric and direction, how many settings
met the constraints, and this setting's values.  Everything in the comment comes from the
grid and the command line; each line is kept one line (line breaks escaped), so the file stays
the YAML ``replay run --policy`` reads.

Not here: ranking settings (``analysis.sweep.pareto.best``), the sweep itself (``analysis.sweep.core``).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import yaml

from analysis.sweep.grid import Setting
from replay.policy import Policy, policy_to_dict
from replay.safe_text import terminal


@dataclass(frozen=True, slots=True, kw_only=True)
class ChoiceRule:
    """How ``sweep --best`` chose: what the chosen.yaml comment says."""

    constraints: tuple[str, ...] = ()
    objective: str = "tokens_sent"
    minimise: bool = True
    design: str = "grid"
    n_meeting: int | None = None
    """Settings that met the constraints (None: not known)."""
    n_unknown: int = 0
    """Of those, settings whose objective is not known (no run gave it a value, as
    ``cache_invalidation_cached_share_where_recorded`` of runs that recorded no usage): ranked
    after every known one, so a choice among them only is by setting id, not by the metric."""
    constraint_unknown: tuple[tuple[str, int], ...] = ()
    """Each metric a constraint names that settings left out have no value for, with how many
    (``analysis.sweep.pareto.unknown_in_constraints``)."""
    beaten: tuple[str, float, float, float, float] | None = None
    """When another setting meeting the constraints costs less and makes the agent fetch no
    more again (or fetch less again at no more cost) than the chosen one: (its id, its
    ``cost_usd``, its ``induced_rereads_n``, the chosen one's ``cost_usd``, the chosen one's
    ``induced_rereads_n``); None otherwise (``beaten_on_loss``)."""


def chosen_name(base: str, setting_id: str) -> str:
    """The chosen setting's policy name: the base's name and the setting id's first 8 hex."""
    return f"{base}-{setting_id[:8]}"


def chosen_policy(setting: Setting) -> Policy:
    """The setting's policy under its own name (``chosen_name``)."""
    return dataclasses.replace(setting.policy, name=chosen_name(setting.policy.name, setting.id))


def chosen_yaml(settings: tuple[Setting, ...], setting_id: str,
                rule: ChoiceRule | None = None) -> str:
    """``chosen.yaml``'s text: the comment block, then the policy under its own name."""
    setting = next(s for s in settings if s.id == setting_id)
    policy = chosen_policy(setting)
    paths = [p for p, _ in setting.params]
    grid = "; ".join(f"{p} = {', '.join(_values(settings, p))}" for p in paths) or "(no axis)"
    lines = [f"{policy.name}: the setting {setting_id} of a sweep of {setting.policy.name}",
             (f"grid (design {rule.design if rule else 'not given'}, {len(settings)} settings): "
             f"{grid}")]
    if rule is not None:
        met = f"; {rule.n_meeting} of {len(settings)} settings met them" \
            if rule.n_meeting is not None else ""
        lines += [(f"constraints: {', '.join(rule.constraints) or 'none'}{met}"
                   f"{unknown_constraints(rule)}"),
                  (f"chosen: the {'least' if rule.minimise else 'most'} {rule.objective} "
                  f"(summed over runs){unknown_objective(rule)}")]
        if rule.beaten is not None:
            lines.append(beaten_text(rule.beaten))
    else:
        lines.append("chosen: by the caller of write_sweep (no rule given)")
    lines.append("this setting: " + (", ".join(f"{p}={_text(v)}" for p, v in setting.params)
                                     or "the base policy"))
    head = "".join(f"# {terminal(line)}\n" for line in lines)
    return head + yaml.safe_dump(policy_to_dict(policy), sort_keys=False)


def unknown_objective(rule: ChoiceRule) -> str:
    """What the choice says of settings whose objective is not known ('' when every one
    meeting the constraints has it)."""
    if not rule.n_unknown:
        return ""
    of = f" of the {rule.n_meeting}" if rule.n_meeting is not None else ""
    if rule.n_meeting is not None and rule.n_unknown >= rule.n_meeting:
        return (f"; {rule.objective} is not known for any{of} setting(s) meeting the "
                "constraints (no run gave it a value): the chosen one is the first by setting "
                "id, not the best by the metric")
    return (f"; {rule.objective} is not known for {rule.n_unknown}{of} setting(s) meeting the "
            "constraints (no run gave it a value): ranked last")


def beaten_on_loss(ranked: Any) -> tuple[str, float, float, float, float] | None:
    """Whether a setting of ``ranked`` (the settings meeting the constraints, best first,
    ``analysis.sweep.pareto.best``) beats the first on both ``cost_usd`` and
    ``induced_rereads_n`` (lower on one, no higher on the other): the cheapest such, as
    ``ChoiceRule.beaten``; None when none does, a figure is unknown or the first induced no
    re-read.  The objective alone
    (``tokens_sent`` by default) can choose the most aggressive setting: the one that makes
    the agent fetch the most again, at a higher cost."""
    if len(ranked) < 2 or not {"cost_usd", "induced_rereads_n"} <= set(ranked.columns):
        return None
    first = ranked.iloc[0]
    cost, rereads = first["cost_usd"], first["induced_rereads_n"]
    if math.isnan(cost) or not rereads > 0:  # (NaN, unknown, is not above 0 either)
        return None
    rest = ranked.iloc[1:]
    better = rest[((rest["cost_usd"] < cost) & (rest["induced_rereads_n"] <= rereads))
                  | ((rest["cost_usd"] <= cost) & (rest["induced_rereads_n"] < rereads))]
    if not len(better):
        return None
    row = better.sort_values(["cost_usd", "induced_rereads_n", "setting"], kind="stable").iloc[0]
    return (str(row["setting"]), float(row["cost_usd"]), float(row["induced_rereads_n"]),
            float(cost), float(rereads))


def beaten_text(beaten: tuple[str, float, float, float, float]) -> str:
    """What the choice says of a setting that beats it on cost and induced re-reads."""
    setting, cost, rereads, own_cost, own_rereads = beaten
    return (f"setting {setting} also meets the constraints and beats the chosen one on both "
            f"cost and induced re-reads: cost_usd {cost:,.2f} against {own_cost:,.2f}, "
            f"induced_rereads_n {rereads:,.0f} against {own_rereads:,.0f} (summed over runs; "
            "--minimise cost_usd chooses by cost)")


def unknown_constraints(rule: ChoiceRule) -> str:
    """What the choice says of settings left out that have no value for a metric a constraint
    names ('' when none has)."""
    if not rule.constraint_unknown:
        return ""
    return "; " + "; ".join(f"{n:,} setting(s) left out have no value for {name} (no run gave "
                            "it one): a comparison with an unknown value is never true"
                            for name, n in rule.constraint_unknown)


def _values(settings: tuple[Setting, ...], path: str) -> list[str]:
    seen = dict.fromkeys(_text(dict(s.params)[path]) for s in settings)
    return list(seen)


def _text(value: Any) -> str:
    return yaml.safe_dump(value, default_flow_style=True, width=10_000).strip().removesuffix(
        "\n...").strip() if not isinstance(value, str) else value

