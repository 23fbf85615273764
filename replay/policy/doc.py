"""Policy files as people write them: ``extends:`` a preset, and the YAML ``show-policy`` prints.

``read_policy_doc`` reads a policy file (or a preset by name) into plain data, resolving
``extends: <preset or file>``: the base's document with the extending file's keys merged over
it, mapping into mapping (``server: {window_tokens: 100000}`` changes only the window;
``behaviour: {rereads: false}`` only that switch).  Tiers
given as a list replace the base's; given as a mapping they change the base's tiers by name
(``tiers: {tier2_summary: {trigger: {at_tokens: 60000}}}``).  An unknown preset, a missing file,
a tier name the base lacks or a cycle (a extends b extends a) is a ``PolicyError`` naming the
file and the key path.  A policy that extends another and gives no ``name`` is called after its
file.

``policy_yaml`` is the inverse in the form users write: only what differs from the defaults
(and the cache fields that differ from the named provider profile), or with ``defaults=True``
every field.  Loading what it prints gives the same policy.

Not here: validation and the policy model (``replay.policy``), provider profiles
(``replay.policy.providers``).
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
from pathlib import Path
from typing import Any

import yaml

from replay.errors import PolicyError
from replay.policy.model import Policy, policy_to_dict
from replay.policy.providers import PROVIDERS, deep_merge
from replay.safe_yaml import YamlRefused, named_by_mistake, read_yaml_file

PRESETS_DIR = Path(__file__).parent / "presets"


def preset_names() -> list[str]:
    """Names of the shipped presets."""
    return sorted(f.stem for f in PRESETS_DIR.glob("*.yaml"))


_PRESET_DOCS: dict[Path, tuple[tuple[int, int], Any]] = {}
"""A preset's file → ((its modification time in ns, its size in bytes) when read, its document)."""


def _preset_doc(path: Path) -> Any:
    """A shipped preset's YAML document, parsed once a process while its file stays the same
    (modification time and size), a copy at each call (``_read`` merges into it): parsing
    takes ~7.5 ms of a preset's ~8 ms ``load_policy``, which a notebook or a test suite calls
    for the same presets again and again.  Errors are raised as ``read_yaml_file`` raises them,
    and nothing is kept."""
    st = path.stat()
    key = (st.st_mtime_ns, st.st_size)
    got = _PRESET_DOCS.get(path)
    if got is None or got[0] != key:
        got = _PRESET_DOCS[path] = (key, read_yaml_file(path))
    return copy.deepcopy(got[1])


POLICY_KEYS = frozenset(f.name for f in dataclasses.fields(Policy))
"""The top-level keys of a policy (a file may also have ``extends``)."""
_TOP_KEYS = POLICY_KEYS | {"extends"}
"""A policy file's top-level keys (``refuse_non_policy``)."""


def refuse_non_policy(doc: Any, where: str) -> None:
    """Refuse a mapping none of whose top-level keys is a policy key (or ``extends``): a file
    named by mistake (``-p /etc/shadow``, or ``extends: /etc/shadow``) whose keys, its
    content, would otherwise be quoted back as unknown keys.

    Raises:
        PolicyError: naming the file and the policy keys, never its own keys.
    """
    if named_by_mistake(doc, _TOP_KEYS):
        raise PolicyError(where, "", "not a policy: none of its top-level keys is a policy "
                                     f"key ({', '.join(sorted(POLICY_KEYS))})")


def read_policy_doc(path: str | Path) -> tuple[dict[str, Any] | Any, str]:
    """(the policy's plain data with ``extends`` resolved, the file it came from)."""
    return _read(path, (), None)


def _locate(ref: str | Path, relative_to: Path | None) -> tuple[Path, bool]:
    """(the file, whether it is a preset) for a policy reference.

    A preset's own ``extends`` names a preset, never a file (a file named ``deepagents`` in
    the current folder became the parent of the shipped ``deepagents-no-profile``); a bare
    preset name that is also a file there (or beside the file extending it) is refused as
    ambiguous (a file ``none`` was read for ``-p none`` without a word): ``./none`` names
    the file.

    Raises:
        PolicyError: a preset name that is also a file.
    """
    p = Path(ref)
    preset = isinstance(ref, str) and ref in preset_names()  # a name, never a path into presets/
    if preset and relative_to is not None and relative_to.resolve() == PRESETS_DIR.resolve():
        return PRESETS_DIR / f"{ref}.yaml", True
    files = [c for c in ([relative_to / p] if relative_to is not None and not p.is_absolute()
                         else []) + [p] if c.is_file()]
    if preset and files:
        raise PolicyError(str(files[0]), "", f"{ref!r} is both a preset and this file; write "
                                             f"./{ref} (or its path) for the file, or rename it")
    if files:
        return files[0], False
    if preset:
        return PRESETS_DIR / f"{ref}.yaml", True
    return p, False


def _read(ref: str | Path, chain: tuple[str, ...], parent: tuple[str, Path] | None) -> tuple[Any, str]:
    relative_to = parent[1].parent if parent else None
    if not str(ref).strip():
        raise PolicyError(parent[0] if parent else repr(str(ref)), "extends" if parent else "",
                          f"an empty policy name; presets: {', '.join(preset_names())}")
    path, is_preset = _locate(ref, relative_to)
    try:
        doc = _preset_doc(path) if is_preset else read_yaml_file(path)
    except IsADirectoryError:
        raise PolicyError(str(path), "", "a folder, not a policy file") from None
    except (FileNotFoundError, NotADirectoryError):
        names = preset_names()
        close = difflib.get_close_matches(str(ref), names, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        where, key = (parent[0], "extends") if parent else (str(ref), "")
        raise PolicyError(where, key, f"no such file or preset {str(ref)!r}; {hint}"
                                      f"presets: {', '.join(names)}") from None
    except YamlRefused as exc:
        raise PolicyError(str(path), "", f"not read as a policy: {exc}") from None
    except OSError as exc:
        raise PolicyError(str(path), "", f"cannot read: {exc.strerror or exc}") from None
    where = str(path)
    refuse_non_policy(doc, where)  # each file of an ``extends`` chain, before it is merged
    ident = f"preset {path.stem}" if is_preset else str(path.resolve())
    if ident in chain:
        cycle = " → ".join([*chain[chain.index(ident):], ident])
        raise PolicyError(parent[0] if parent else where, "extends", f"cycle: {cycle}")
    if not isinstance(doc, dict) or "extends" not in doc:
        return doc, where
    base_ref = doc["extends"]
    if not isinstance(base_ref, str) or not base_ref:
        raise PolicyError(where, "extends", f"expected a preset name or a policy file, got "
                                            f"{base_ref!r}")
    base, _ = _read(base_ref, (*chain, ident), (where, path))
    if not isinstance(base, dict):
        raise PolicyError(where, "extends", f"{base_ref!r} is not a policy mapping")
    own = {k: v for k, v in doc.items() if k != "extends"}
    merged = _merge_policy(base, own, where, base_ref)
    if "name" not in own:
        merged["name"] = path.stem
    return merged, where


def _merge_policy(base: dict[str, Any], own: dict[str, Any], where: str,
                  base_ref: str) -> dict[str, Any]:
    tiers = own.get("tiers")
    out = deep_merge(base, {k: v for k, v in own.items() if k != "tiers"})
    if isinstance(tiers, dict):
        out["tiers"] = _merge_tiers(base.get("tiers") or [], tiers, where, base_ref)
    elif "tiers" in own:
        out["tiers"] = tiers
    return out


def item_name(item: Any) -> Any:
    """What a list item (a tier) is called in a path or a policy file: its ``name``, else its
    ``type`` (None for an item that is not a mapping)."""
    return item.get("name", item.get("type")) if isinstance(item, dict) else None


def item_index(items: list[Any], key: Any) -> int | None:
    """The item of a list that ``key`` names, the one rule of policy files (``tiers:
    {tier2_summary: …}``) and dotted paths (``tiers.tier2_summary.trigger.at_tokens``): an
    item's name (``item_name``) first, else an index (``1`` or ``"1"``); None when neither."""
    names = [item_name(t) for t in items]
    if key in names:
        return names.index(key)
    if isinstance(key, str) and key.isdigit():
        key = int(key)
    if isinstance(key, int) and not isinstance(key, bool) and 0 <= key < len(items):
        return key
    return None


def _merge_tiers(base: list[Any], changes: dict[Any, Any], where: str,
                 base_ref: str) -> list[Any]:
    tiers = [dict(t) if isinstance(t, dict) else t for t in base]
    names = [item_name(t) for t in tiers]
    for key, change in changes.items():
        found = item_index(tiers, key) if not isinstance(key, str) or key in names else None
        if found is not None:
            i = found
        else:
            close = difflib.get_close_matches(str(key), [str(n) for n in names], n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise PolicyError(where, f"tiers.{key}", f"{base_ref} has no tier {key!r}; {hint}"
                                                     f"its tiers: {', '.join(map(str, names))}")
        if not isinstance(change, dict):
            raise PolicyError(where, f"tiers.{key}", "expected a mapping of the tier's keys "
                                                     "to change")
        tiers[i] = deep_merge(tiers[i], change)
    return tiers


def policy_yaml(policy: Policy, *, defaults: bool = False) -> str:
    """The policy as YAML: what differs from the defaults, or every field with ``defaults``."""
    full = policy_to_dict(policy)
    if defaults:
        doc = full
    else:
        doc = _minimal(policy, keep=("name", "provider"))
        doc.pop("cache", None)
        prof = PROVIDERS.get(policy.provider)
        cache = full["cache"] if prof is None else _changed_keys(
            full["cache"], dataclasses.asdict(prof.cache))
        if cache:
            doc["cache"] = cache
    order = ["name", "description", "source", "provider",
             *[f.name for f in dataclasses.fields(Policy)]]
    doc = {k: doc[k] for k in sorted(doc, key=lambda k: order.index(k) if k in order else 99)}
    return yaml.dump(doc, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)


class _Dumper(yaml.SafeDumper):
    """Safe YAML with short lists of plain values on one line (``blocks: [a, b]``)."""


def _list(dumper: yaml.SafeDumper, data: list[Any]) -> yaml.Node:
    flow = all(not isinstance(v, (dict, list)) for v in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)


_Dumper.add_representer(list, _list)


def _minimal(obj: Any, keep: tuple[str, ...]) -> dict[str, Any]:
    """The fields of a dataclass that differ from their defaults, nested dataclasses likewise
    (against their own class's defaults: what the loader fills in for a missing key); a
    counter's ``method`` is always shown."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(obj):
        v = getattr(obj, f.name)
        key = "class" if f.name == "cls" else f.name
        if f.name not in keep and f.name != "method":
            default = f.default_factory() if f.default_factory is not dataclasses.MISSING \
                else f.default
            if v == default:
                continue
        if dataclasses.is_dataclass(v):
            out[key] = _minimal(v, keep=("name",) if f.name == "harness" else ())
        elif f.name == "tiers":
            out[key] = [_minimal(t, keep=("type", "name")) for t in v]
        else:
            out[key] = dict(v) if f.name == "options" else policy_to_dict(v)
    return out


def _changed_keys(value: dict[str, Any], base: dict[str, Any]) -> dict[str, Any]:
    """The keys of ``value`` that differ from ``base``, nested mappings key by key."""
    out: dict[str, Any] = {}
    for k, v in value.items():
        if isinstance(v, dict) and isinstance(base.get(k), dict):
            sub = _changed_keys(v, base[k])
            if sub:
                out[k] = sub
        elif v != base.get(k):
            out[k] = v
    return out
