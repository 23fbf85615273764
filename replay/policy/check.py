"""Plain policy data (as read from YAML) → validated frozen dataclasses.

``build`` fills a dataclass field by field from its type hints and refuses an unknown key (with
a "did you mean"), a wrong type, a fraction outside 0–1, a negative count or a number beyond
``MAX_INT``; ``check`` applies the cross-field rules the types cannot say (reserve inside the
window, one reachable trigger per tier, unique tier names, templates ``str.format`` can fill).
Every refusal is a ``PolicyError`` naming the file, the key path and why.

Not here: the policy's fields (``replay.policy.model``, ``replay.policy.tier_model``).
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import math
import re
import string
import types
import typing
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from replay.errors import PolicyError
from replay.policy.harness import AUTO_COMPACT_WINDOW_RANGE
from replay.policy.model import Policy
from replay.policy.tier_model import TRIGGER_KINDS, Collapse, Trigger

if TYPE_CHECKING:
    from _typeshed import DataclassInstance


_D = TypeVar("_D", bound="DataclassInstance")


def build(cls: type[_D], doc: Any, where: str, key: str) -> _D:
    """An instance of the frozen dataclass ``cls`` from plain data, every field checked against
    its type hint (unknown keys, wrong types, fractions outside 0-1, numbers beyond ``MAX_INT``).

    Raises:
        PolicyError: naming ``where``, the key path and why.
    """
    if not isinstance(doc, dict):
        raise PolicyError(where, key or "(top)", f"expected a mapping, got {type(doc).__name__}")
    hints = _hints(cls)
    names = {("class" if f.name == "cls" else f.name): f.name for f in dataclasses.fields(cls)}
    kwargs: dict[str, Any] = {}
    for k, v in doc.items():
        path = f"{key}.{k}" if key else str(k)
        if k not in names:
            close = difflib.get_close_matches(str(k), list(names), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f"; allowed: {', '.join(names)}"
            raise PolicyError(where, path, f"unknown key{hint}")
        fname = names[k]
        if fname == "options":
            if not isinstance(v, dict):
                raise PolicyError(where, path, "expected a mapping")
            kwargs[fname] = tuple(sorted(v.items()))
            continue
        kwargs[fname] = _value(hints[fname], v, where, path)
    return cls(**kwargs)


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _value(hint: Any, v: Any, where: str, path: str) -> Any:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (types.UnionType, typing.Union):
        if v is None and type(None) in args:
            return None
        options = [a for a in args if a is not type(None)]
        if len(options) > 1 and all(dataclasses.is_dataclass(a) for a in options):
            return _tier(options, v, where, path)
        for option in options[:-1]:  # the first option the value fits (int | "auto")
            try:
                return _value(option, v, where, path)
            except PolicyError:
                pass
        return _value(options[-1], v, where, path)
    if origin is Literal:
        if v not in args:
            close = difflib.get_close_matches(str(v), [str(a) for a in args], n=1)
            hint_txt = f"; did you mean {close[0]!r}?" if close else ""
            raise PolicyError(where, path, f"{v!r} is not one of {', '.join(map(str, args))}{hint_txt}")
        return v
    if origin is tuple:
        if not isinstance(v, list):
            raise PolicyError(where, path, f"expected a list, got {type(v).__name__}")
        return tuple(_value(args[0], item, where, f"{path}.{i}") for i, item in enumerate(v))
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return build(hint, v, where, path)
    if hint is bool:
        if not isinstance(v, bool):
            raise PolicyError(where, path, f"expected true or false, got {v!r}")
        return v
    if hint is int:
        if isinstance(v, float) and v.is_integer() and abs(v) <= MAX_INT:  # 40000.0, 1e6
            raise PolicyError(where, path, f"expected a whole number, got {v!r}: a number "
                                           "written with a dot or an exponent (40000.0, 1e6) "
                                           f"is a decimal; write {int(v)}")
        if isinstance(v, bool) or not isinstance(v, int):
            raise PolicyError(where, path, f"expected a whole number, got {v!r}")
        if v < 0:
            raise PolicyError(where, path, f"must be ≥ 0, got {v}")
        if v > MAX_INT:
            raise PolicyError(where, path, f"must be at most {MAX_INT:,} (2^53), got {v:.3g}")
        if v > MAX_TOKENS and path.rsplit(".", 1)[-1].endswith("tokens"):
            raise PolicyError(where, path, f"a token count must be at most {MAX_TOKENS:,} "
                                           f"(2^32), got {v:,}")
        return v
    if hint is float:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise PolicyError(where, path, f"expected a number, got {v!r}")
        if not math.isfinite(v) or abs(v) > MAX_INT:
            raise PolicyError(where, path, f"must be a finite number of at most {MAX_INT:,} "
                                           f"(2^53), got {float(v)}")
        if path.rsplit(".", 1)[-1].endswith("frac") and not 0.0 <= v <= 1.0:
            raise PolicyError(where, path, f"a fraction must be between 0 and 1, got {v}")
        if v < 0:
            raise PolicyError(where, path, f"must be ≥ 0, got {v}")
        return float(v)
    if hint is str:
        if not isinstance(v, str):
            raise PolicyError(where, path, f"expected text, got {v!r}")
        return v
    return v


def _tier(options: list[Any], v: Any, where: str, path: str) -> Any:
    tier_types = {f.default: cls for cls in options  # the union's tier classes by their 'type'
                  for f in dataclasses.fields(cls)
                  if f.name == "type" and isinstance(f.default, str)}
    if not isinstance(v, dict) or "type" not in v:
        raise PolicyError(where, path, f"a tier needs a 'type': one of {', '.join(tier_types)}")
    kind = v["type"]
    if not isinstance(kind, str) or kind not in tier_types:  # (a list or a mapping: unhashable)
        close = difflib.get_close_matches(str(kind), list(tier_types), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise PolicyError(where, f"{path}.type", f"unknown tier type {kind!r}{hint}")
    return build(tier_types[kind], v, where, path)


def check(p: Policy, where: str) -> None:
    """Cross-field rules the types cannot say."""
    s = p.server
    if s.window_tokens <= 0:
        raise PolicyError(where, "server.window_tokens", "must be > 0")
    if s.reserve_tokens >= s.window_tokens:
        raise PolicyError(where, "server.reserve_tokens",
                          f"reserve {s.reserve_tokens} leaves no room in window {s.window_tokens}")
    for name, counter in (("estimator", p.estimator), ("truth", p.truth)):
        if counter.method == "chars" and counter.chars_per_token <= 0:
            raise PolicyError(where, f"{name}.chars_per_token", "must be > 0")
        if counter.method == "chars" and counter.chars_per_token < MIN_CHARS_PER_TOKEN:
            raise PolicyError(where, f"{name}.chars_per_token", f"must be at least "
                                                                f"{MIN_CHARS_PER_TOKEN}, got "
                                                                f"{counter.chars_per_token}")
        if counter.scale <= 0:
            raise PolicyError(where, f"{name}.scale", "must be > 0 (a count scaled to 0 never "
                                                      "reaches a trigger)")
        if counter.scale < 1 / MAX_SCALE:  # (1e-6: every request sent 0 tokens, exit 0)
            raise PolicyError(where, f"{name}.scale", f"must be at least {1 / MAX_SCALE:g} (a "
                                                      "correction near 1; a count scaled by "
                                                      f"less rounds to 0), got {counter.scale}")
        if counter.scale > MAX_SCALE:
            raise PolicyError(where, f"{name}.scale", f"must be at most {MAX_SCALE:g} (a "
                                                      f"correction near 1), got {counter.scale}")
    if p.harness is not None:
        _check_harness(p, where)
    _check_behaviour(p, where)
    names: set[str] = set()
    for i, tier in enumerate(p.tiers):
        key = f"tiers.{i}"
        if tier.name in names:
            raise PolicyError(where, f"{key}.name", f"duplicate tier name {tier.name!r}")
        names.add(tier.name)
        trigger = getattr(tier, "trigger", None)
        if trigger is not None:  # a collapse tier's is optional (its margin otherwise)
            _check_trigger(trigger, p, where, f"{key}.trigger")
        for field_name in ("placeholder", "write_note"):
            value = getattr(tier, field_name, None)
            template = getattr(value, "template", value)  # a Placeholder's, or a write note
            if isinstance(template, str):
                _check_template(template, where, f"{key}.{field_name}"
                                + (".template" if field_name == "placeholder" else ""))
        if tier.type == "trim":
            if tier.min_reclaim_tokens and tier.min_reclaim_frac:
                raise PolicyError(where, f"{key}.min_reclaim_frac",
                                  "set min_reclaim_tokens or min_reclaim_frac, not both")
            if not tier.blocks:
                raise PolicyError(where, f"{key}.blocks", "a trim tier needs at least one block kind")
        if tier.type == "collapse":
            _check_collapse(tier, where, key)
        if tier.type == "summarise" and tier.summary_tokens <= 0:
            raise PolicyError(where, f"{key}.summary_tokens", "must be > 0")
        per = getattr(getattr(tier, "restore", None), "summary_tokens_per_summarised", 0.0)
        if per > MAX_SCALE:
            raise PolicyError(where, f"{key}.restore.summary_tokens_per_summarised",
                              f"must be at most {MAX_SCALE:g}, got {per}")
        if tier.type == "custom" and ":" not in tier.cls:
            raise PolicyError(where, f"{key}.class", "expected 'module:Class'")


_KEEP_MESSAGES_DEFAULT = next(f.default for f in dataclasses.fields(Collapse)
                              if f.name == "keep_messages")


def _check_collapse(tier: Collapse, where: str, key: str) -> None:
    """A drop fraction that drops something, and no ``keep_messages`` beside it (it would be
    ignored: a sweep of it would change nothing)."""
    if tier.drop_frac is None:
        return
    if tier.drop_frac <= 0:
        raise PolicyError(where, f"{key}.drop_frac", "must be > 0 (0 drops nothing: the tier "
                                                     "would fire and never act); leave it out "
                                                     "to keep keep_messages")
    if tier.keep_messages not in (None, _KEEP_MESSAGES_DEFAULT):
        raise PolicyError(where, f"{key}.keep_messages", f"{tier.keep_messages} would be "
                                                         "ignored: drop_frac decides what is "
                                                         "dropped (set one of them)")


_CLAUDE_SETTINGS = ("CLAUDE_AUTOCOMPACT_PCT_OVERRIDE", "CLAUDE_CODE_AUTO_COMPACT_WINDOW",
                    "autoCompactWindow")
_CODEX_SETTINGS = ("model_context_window", "model_auto_compact_token_limit",
                   "server_reasoning_included")


def _check_harness(p: Policy, where: str) -> None:
    """The harness's tier exists and has a trigger; its settings are in their ranges."""
    h = p.harness
    assert h is not None
    tier = next((t for t in p.tiers if t.name == h.tier), None)
    if tier is None or getattr(tier, "trigger", None) is None:
        raise PolicyError(where, "harness.tier", f"no tier {h.tier!r} with a trigger; tiers: "
                                                 + ", ".join(t.name for t in p.tiers))
    others = _CODEX_SETTINGS if h.name == "claude-code" else _CLAUDE_SETTINGS
    for name in others:
        if getattr(h, name) not in (None, False):
            raise PolicyError(where, f"harness.{name}", f"not a setting of {h.name} (its "
                              "settings: " + ", ".join(_CLAUDE_SETTINGS if h.name == "claude-code"
                                                       else _CODEX_SETTINGS) + ")")
    for name in ("model_context_window", "model_auto_compact_token_limit"):
        value = getattr(h, name)
        if value is not None and value <= 0:
            raise PolicyError(where, f"harness.{name}", "must be > 0")
    pct = h.CLAUDE_AUTOCOMPACT_PCT_OVERRIDE
    if pct is not None and not 0 < pct <= 100:
        raise PolicyError(where, "harness.CLAUDE_AUTOCOMPACT_PCT_OVERRIDE",
                          f"a percentage above 0 and at most 100, got {pct}")
    if h.CLAUDE_CODE_AUTO_COMPACT_WINDOW is not None and h.CLAUDE_CODE_AUTO_COMPACT_WINDOW <= 0:
        raise PolicyError(where, "harness.CLAUDE_CODE_AUTO_COMPACT_WINDOW", "must be > 0")
    lo, hi = AUTO_COMPACT_WINDOW_RANGE
    acw = h.autoCompactWindow
    if isinstance(acw, int) and not lo <= acw <= hi:
        raise PolicyError(where, "harness.autoCompactWindow",
                          f"{lo:,}–{hi:,} tokens or 'auto', got {acw:,}")
MAX_REREADS_PER_TURN = 1000
"""The largest ``behaviour.max_rereads_per_turn``: the cap is what bounds a re-read loop."""


def _check_behaviour(p: Policy, where: str) -> None:
    """A cap that bounds the loop a re-call placeholder can start."""
    b = p.behaviour
    if b.max_rereads_per_turn > MAX_REREADS_PER_TURN:
        raise PolicyError(where, "behaviour.max_rereads_per_turn",
                          f"must be at most {MAX_REREADS_PER_TURN} (it bounds a re-read loop), "
                          f"got {b.max_rereads_per_turn}")


def _check_trigger(trigger: Trigger, p: Policy, where: str, key: str) -> None:
    """Exactly one condition, and one the context can reach: a token level above the window
    never fires (the server refuses the request first); ``never: true`` says so on purpose."""
    n_set = sum(v is True if isinstance(v, bool) else v is not None
                for v in (getattr(trigger, k) for k in TRIGGER_KINDS))
    if n_set != 1:
        raise PolicyError(where, key, f"set exactly one of {', '.join(TRIGGER_KINDS)} "
                                      f"({n_set} set)")
    if trigger.idle_minutes is not None and trigger.idle_minutes <= 0:
        raise PolicyError(where, f"{key}.idle_minutes", "must be > 0 (a gap of 0 minutes is "
                                                        "every request: every_request: true)")
    window = p.server.window_tokens
    level = trigger.level_tokens(p.usable_tokens)
    name = "at_tokens" if trigger.at_tokens is not None else "at_frac"
    if level is not None and level > window:
        raise PolicyError(where, f"{key}.{name}", f"{level:,} tokens is above the window "
                                                  f"({window:,}): the tier could "
                                                  "never act; write 'never: true' to switch "
                                                  "it off")
    if (level is not None and level < 0) or (trigger.after_messages or 0) < 0:
        raise PolicyError(where, key, "a trigger level must be ≥ 0")


TEMPLATE_FIELDS: tuple[str, ...] = ("tool", "path", "lines", "chars", "call_id")
"""The variables of a placeholder template and a write note (``replay.engine.tiers.base``)."""
MAX_INT = 2**53
"""Largest whole number (and magnitude of a number) a policy field takes: beyond it token
counts stop being exact as floats and sums overflow int64."""


MAX_TOKENS = 2**32
"""Largest token count a policy field takes (a window, an overhead, a summary's size): a
thousand times the largest window.  The 2^53 of ``MAX_INT`` let a per-message overhead or a
fixed overhead of 2^53 make a request's context, summed over a run's requests, leave int64
(an OverflowError traceback)."""
MAX_SCALE = 1000.0
"""Largest scale of a token count (``estimator.scale``, ``truth.scale``, a summary's tokens per
summarised token): a correction near 1; 9e15 made every figure leave int64."""
MIN_CHARS_PER_TOKEN = 0.1
"""Smallest ``chars_per_token`` (a token per tenth of a character; real text has 2-5):
1e-300 made a block's count leave int64."""


MAX_TEMPLATE_WIDTH = 1000
"""Largest width or precision a template's format spec may give (``{tool:>40}``): a placeholder
is a short note, and a larger one would make every trimmed block that many characters."""


def _check_template(template: str, where: str, key: str) -> None:
    """Refuse a template ``str.format`` cannot fill with ``TEMPLATE_FIELDS``, and a format spec
    that refers to another field (``{tool:{chars}}``: its width would come from the data) or
    asks for a width or precision above ``MAX_TEMPLATE_WIDTH``; checked before it is tried."""
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:  # a stray { or }
        raise PolicyError(where, key, f"not a valid template ({exc}); write {{{{ and }}}} for "
                                      f"a literal brace") from None
    fields = [f for _, f, _, _ in parsed if f is not None]
    for _, field, spec, _ in parsed:
        if field is None or not spec:
            continue
        if "{" in spec or "}" in spec:
            raise PolicyError(where, key, f"the format spec of {{{field}:{spec}}} refers to "
                                          "another field; give its width as a number")
        if any(len(n.lstrip("0")) > 4 or int(n) > MAX_TEMPLATE_WIDTH
               for n in re.findall(r"\d+", spec)):
            raise PolicyError(where, key, f"the format spec of {{{field}:{spec[:40]}}} asks for "
                                          f"more than {MAX_TEMPLATE_WIDTH:,} characters")
    unknown = [f for f in fields if f not in TEMPLATE_FIELDS]
    if unknown:
        raise PolicyError(where, key, f"unknown template field {{{unknown[0]}}}; the fields are "
                                      + ", ".join(f"{{{f}}}" for f in TEMPLATE_FIELDS))
    try:
        template.format(tool="t", path="p", lines=1, chars=1, call_id="c")
    except (ValueError, TypeError, KeyError, IndexError) as exc:
        raise PolicyError(where, key, f"not a valid template ({exc})") from None
