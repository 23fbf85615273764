"""Reading a small YAML configuration file (a policy, a sweep grid, tolerances) that may be
hostile: bounded in size, in nesting and in what its aliases expand to.

``read_yaml_file(path)`` reads only a regular file (a device such as ``/dev/zero``, a FIFO or
a folder is refused before it is opened for reading), at most ``MAX_YAML_BYTES``; composes the
YAML into nodes, refuses nesting deeper than ``MAX_YAML_DEPTH`` and a document whose aliases
expand to more than ``MAX_YAML_NODES`` nodes (an alias bomb: a few lines of ``&a [*b, *b, …]``
that become billions of values when the document is walked) or refer to themselves; and only
then builds the Python values (safe tags only).  Every refusal is a ``YamlRefused`` whose
message never quotes the file's content (a file named by mistake, ``-p /etc/shadow``, must not
be echoed to the terminal).

Not here: what the values mean (``replay.policy``, ``analysis.sweep.grid``, ``analysis.check.gate``).
"""

from __future__ import annotations

import difflib
import os
import re
import stat
from collections.abc import Collection
from pathlib import Path
from typing import Any

import yaml

MAX_YAML_BYTES = 1 << 20
"""Largest configuration file read (1 MiB; the shipped presets are under 2 KiB)."""
MAX_YAML_NODES = 100_000
"""Most nodes a document may have with every alias expanded."""
MAX_YAML_DEPTH = 100
"""Deepest nesting of mappings and lists."""


class YamlRefused(ValueError):
    """A configuration file that is not read: the reason, never the file's content."""


class _FlowDepthBound:
    """Refuses the flow collection (``[`` or ``{``) that opens inside ``MAX_YAML_DEPTH``
    others as it is scanned: its document nests deeper than ``MAX_YAML_DEPTH`` whatever
    follows.  PyYAML's scanner keeps a possible simple key per open flow level and walks them
    all at every token, so without this a 200 KB ``[[[…`` took 1.5-6 s to refuse (the
    composer's recursion ran out ~7,000 levels in)."""

    flow_level: int

    def fetch_flow_collection_start(self, token_class: type) -> None:
        if self.flow_level >= MAX_YAML_DEPTH:
            raise YamlRefused(f"nested more than {MAX_YAML_DEPTH} levels deep")
        super().fetch_flow_collection_start(token_class)  # type: ignore[misc]


class _SafeComposer(_FlowDepthBound, yaml.SafeLoader):
    """The safe loader, used in two steps (compose, check, construct); a number in exponent
    form is a float as YAML 1.2 reads it (``EXPONENT_FLOAT``)."""


EXPONENT_FLOAT = re.compile(r"[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)[eE][-+]?[0-9]+")
"""A number in exponent form that YAML 1.1 (PyYAML) reads as text: ``1e6``, ``1.5e5``,
``-2E3`` (1.1 wants a dot and a signed exponent, ``1.0e+6``); YAML 1.2, and a user, read a
float.  Every other scalar is read as PyYAML reads it (a whole number written so is a float
all the same, as ``40000.0`` is: a field of whole numbers refuses it)."""
_SafeComposer.add_implicit_resolver(  # (on this class only: PyYAML copies the table first)
    "tag:yaml.org,2002:float", re.compile(f"^(?:{EXPONENT_FLOAT.pattern})$"),
    list("-+0123456789."))


class _BaseComposer(_FlowDepthBound, yaml.BaseLoader):
    """The base loader (every scalar a string), used in two steps."""


def read_yaml_file(path: Path, *, strings_only: bool = False,
                   max_bytes: int = MAX_YAML_BYTES) -> Any:
    """The YAML document of ``path`` as plain data (None for an empty file).

    Args:
        path: the file.
        strings_only: every scalar as a string (``yaml.BaseLoader``), else the safe types.
        max_bytes: the size limit.

    Raises:
        FileNotFoundError: no such file.
        IsADirectoryError: ``path`` is a folder.
        YamlRefused: not a regular file, too large, not UTF-8, not valid YAML, too deeply
            nested, or its aliases expand too far.
    """
    return parse_yaml(_read_bounded(path, max_bytes), strings_only=strings_only)


def parse_yaml(text: str, *, strings_only: bool = False) -> Any:
    """``text`` as YAML under the same limits as ``read_yaml_file`` (nesting, aliases)."""
    try:
        loader = (_BaseComposer if strings_only else _SafeComposer)(text)
    except yaml.YAMLError as exc:  # the reader refuses control characters before parsing
        raise YamlRefused(f"not YAML text ({getattr(exc, 'reason', type(exc).__name__)})") \
            from None
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_nodes(node)
        return loader.construct_document(node)
    except RecursionError:
        raise YamlRefused(f"nested more than {MAX_YAML_DEPTH} levels deep") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        what = "; ".join(p for p in (exc.context, exc.problem) if p)
        raise YamlRefused(f"invalid YAML{where}: {what}") from None
    except yaml.YAMLError as exc:
        raise YamlRefused(f"invalid YAML ({type(exc).__name__})") from None
    finally:
        loader.dispose()


def named_by_mistake(doc: Any, keys: Collection[str], *, close: bool = False) -> bool:
    """Whether ``doc``, a mapping read from a file the user named as a configuration of one
    kind, has keys and none of them is one of that kind's top-level ``keys`` (``close``: nor
    close to one, a typo its caller then names with "did you mean"): a file named by mistake
    (``/etc/shadow``, a secrets file), refused without quoting its keys, which are its content.
    ``close`` only where the names are long and specific (metric names): a short key merely
    close to a short name (``other``, near ``tiers``) would let the file's other keys be quoted
    back as unknown ones."""
    return isinstance(doc, dict) and bool(doc) and not any(
        isinstance(k, str) and (k in keys or close and bool(difflib.get_close_matches(k, keys, n=1)))
        for k in doc)


def _read_bounded(path: Path, max_bytes: int) -> str:
    st = os.stat(path)  # FileNotFoundError for the caller
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(str(path))
    if not stat.S_ISREG(st.st_mode):
        raise YamlRefused("not a regular file (a device, FIFO or socket); name a YAML file")
    if st.st_size > max_bytes:
        raise YamlRefused(f"{st.st_size:,} bytes; a configuration file may be at most "
                          f"{max_bytes:,} bytes")
    with open(path, "rb") as f:
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise YamlRefused(f"over {max_bytes:,} bytes; a configuration file may be at most "
                          f"{max_bytes:,} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise YamlRefused(f"not UTF-8 text (byte {exc.start:,} cannot be decoded); name a YAML "
                          "file") from None


def _check_nodes(root: yaml.Node) -> None:
    """Refuse nesting deeper than ``MAX_YAML_DEPTH``, aliases that refer to themselves and
    documents that expand to more than ``MAX_YAML_NODES`` nodes (each shared node counted once
    per use, computed once per node; said as an alias bomb only when fewer nodes are written)."""
    expanded: dict[int, int] = {}
    depth: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        children = _children(node)
        if done:
            on_path.discard(key)
            expanded[key] = 1 + sum(expanded[id(c)] for c in children)
            depth[key] = 1 + max((depth[id(c)] for c in children), default=0)
            if expanded[key] > MAX_YAML_NODES:
                if len(expanded) > MAX_YAML_NODES:  # as many written: no alias made them
                    raise YamlRefused(f"more than {MAX_YAML_NODES:,} values; a configuration "
                                      f"file may hold at most {MAX_YAML_NODES:,}")
                raise YamlRefused(f"its aliases expand to more than {MAX_YAML_NODES:,} values "
                                  "(an alias bomb?)")
            if depth[key] > MAX_YAML_DEPTH:
                raise YamlRefused(f"nested more than {MAX_YAML_DEPTH} levels deep")
            continue
        if key in expanded:
            continue
        if key in on_path:
            raise YamlRefused("an alias refers to the node that contains it")
        on_path.add(key)
        _no_duplicate_keys(node)
        stack.append((node, True))
        stack.extend((c, False) for c in children if id(c) not in expanded)


def _no_duplicate_keys(node: yaml.Node) -> None:
    """Refuse a mapping that gives one key twice: YAML keeps the last silently, so a copied
    line (``window_tokens: 100000`` above ``window_tokens: 5``) would change the setting
    unseen.  Keys are compared as written with their tag (``1`` and ``'1'`` differ); merge
    keys (``<<``), which explicit keys may override, are not keys."""
    if not isinstance(node, yaml.MappingNode):
        return
    seen: dict[tuple[str, str], int] = {}
    for k, _ in node.value:
        if not isinstance(k, yaml.ScalarNode) or k.tag == "tag:yaml.org,2002:merge":
            continue
        line, ident = k.start_mark.line + 1, (k.tag, k.value)
        if ident in seen:
            where = f"line {line}" if seen[ident] == line else f"lines {seen[ident]} and {line}"
            raise YamlRefused(f"a key is given twice in one mapping ({where}; YAML would keep "
                              f"only the last): {k.value[:60]!r}")
        seen[ident] = line


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []
