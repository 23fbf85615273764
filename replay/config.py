"""Project defaults for ``replay check`` from ``[tool.ctxreplay]`` in ``pyproject.toml`` (or the
top level of ``ctxreplay.toml``), so that a bare ``replay check`` works in CI.

``find_config(start)`` looks in ``start`` and its parents for ``ctxreplay.toml`` (first) or a
``pyproject.toml`` with a ``[tool.ctxreplay]`` table and reads it into a ``ProjectConfig``:

    [tool.ctxreplay]
    archive = "ci/archive"                       # or a list of paths
    policies = ["my-policy.yaml", "two-tier-corrected"]
    baseline = "ci/baseline.json"
    tolerances = "ci/tolerances.yaml"
    provider = "anthropic-sonnet-4"
    out = ".ctxreplay"                           # where the ingest cache is kept
    strict_logs = true

Paths are relative to the file's folder, and what check writes (``out``, ``baseline``) must stay
inside it.  An unknown key or a wrong type is a ``ConfigError``
naming the file and the key (with a "did you mean").  Command-line options win over the file.

Not here: what check does (``analysis.check.gate``).
"""

from __future__ import annotations

import difflib
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from replay.errors import ConfigError

KEYS: dict[str, str] = {
    "archive": "a path or a list of paths: the logs (or one dataset) to replay",
    "policies": "a list of policy files (relative to the config) or preset names",
    "baseline": "a path: the baseline JSON",
    "tolerances": "a path: the tolerances YAML",
    "provider": "a provider profile name (replay providers)",
    "out": "a path: where the ingest cache is kept",
    "strict_logs": "true or false",
}
"""Every key ``[tool.ctxreplay]`` may have, with what it takes."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ProjectConfig:
    """The check defaults of one project; None where the file does not say."""

    source: Path
    """The file read."""
    archive: tuple[Path, ...] | None = None
    policies: tuple[str, ...] | None = None
    baseline: Path | None = None
    tolerances: Path | None = None
    provider: str | None = None
    out: Path | None = None
    strict_logs: bool | None = None


WRITTEN = ("baseline", "out")
"""Keys naming what ``replay check`` writes (the baseline with --update-baseline, the ingest
cache): a file from a cloned repository must not make it write outside that repository."""


def _inside(path: Path, root: Path) -> bool:
    """Whether ``path`` (symlinks resolved) is ``root`` or below it."""
    try:
        path.resolve().relative_to(root.resolve())
    except (ValueError, OSError, RuntimeError):
        return False
    return True


def find_config(start: Path) -> ProjectConfig | None:
    """The configuration of the project ``start`` is in, or None when there is none."""
    for folder in [start.resolve(), *start.resolve().parents]:
        own = folder / "ctxreplay.toml"
        if own.is_file():
            return read_config(own)
        py = folder / "pyproject.toml"
        if py.is_file():
            cfg = read_config(py)
            if cfg is not None:
                return cfg
        if (folder / ".git").exists():
            break  # the repository's root: do not read another project's settings
    return None


def read_config(path: Path) -> ProjectConfig | None:
    """Read ``ctxreplay.toml`` or ``pyproject.toml``'s ``[tool.ctxreplay]`` (None if absent)."""
    where = str(path)
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(where, "", f"cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(where, "", f"invalid TOML: {exc}") from None
    except RecursionError:  # tomllib parses nested arrays and tables recursively
        raise ConfigError(where, "", "invalid TOML: nested too deeply to read") from None
    if path.name == "pyproject.toml":
        table = doc.get("tool", {}).get("ctxreplay") if isinstance(doc.get("tool"), dict) else None
        key = "tool.ctxreplay"
        if table is None:
            return None
    else:
        table, key = doc.get("tool", {}).get("ctxreplay", doc), ""
    if not isinstance(table, dict):
        raise ConfigError(where, key, "expected a table")
    return _build(table, path, key)


def _build(table: dict[str, Any], path: Path, prefix: str) -> ProjectConfig:
    where, root = str(path), path.parent
    values: dict[str, Any] = {}
    for k, v in table.items():
        full = f"{prefix}.{k}" if prefix else k
        if k not in KEYS:
            close = difflib.get_close_matches(k, list(KEYS), n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"allowed: {', '.join(KEYS)}"
            raise ConfigError(where, full, f"unknown key; {hint}")
        if k == "archive":
            items = [v] if isinstance(v, str) else v
            if not isinstance(items, list) or not items or not all(isinstance(i, str) and i
                                                                    for i in items):
                # ('' was the config's own folder: every file in the project read as a log)
                raise ConfigError(where, full, f"expected {KEYS[k]}")
            values[k] = tuple(root / i for i in items)
        elif k == "policies":
            if not isinstance(v, list) or not v or not all(isinstance(i, str) for i in v):
                raise ConfigError(where, full, f"expected {KEYS[k]}")
            values[k] = tuple(str(root / i) if "/" in i or i.endswith((".yaml", ".yml")) else i
                              for i in v)
        elif k in ("baseline", "tolerances", "out"):
            if not isinstance(v, str) or not v:
                raise ConfigError(where, full, f"expected {KEYS[k]}")
            values[k] = root / v
            if k in WRITTEN and not _inside(values[k], root):
                raise ConfigError(where, full, f"{v!r} is outside the project ({root}): a "
                                               "folder the command writes must be in it (give "
                                               "another one on the command line)")
        elif k == "provider":
            if not isinstance(v, str) or not v:  # ('' was no provider: the policies' own)
                raise ConfigError(where, full, f"expected {KEYS[k]}")
            values[k] = v
        else:
            if not isinstance(v, bool):
                raise ConfigError(where, full, f"expected {KEYS[k]}")
            values[k] = v
    return ProjectConfig(source=path, **values)
