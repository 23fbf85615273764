"""The exception tree of ctxreplay.

    ReplayError
    ├── ParseError        a log file (or one line of it) could not be read: path, line, reason
    ├── DamagedInputError an input the user named is damaged (exit 1, not a usage error)
    │   ├── StoreError    a dataset on disk is missing, from another schema version, or corrupt
    │   └── RunFolderError a `replay run` output folder (summary.json, traces/) is damaged
    ├── PolicyError       a policy file is invalid: path, key path, reason
    ├── TokenizerError    an encoding is not available offline
    ├── ConfigError       a project configuration ([tool.ctxreplay]) is invalid: path, key, reason
    ├── ReplayInputError  a run cannot be replayed (e.g. no requests)
    └── OutputError       an output folder is a file, or cannot be created or written

Messages read as "<where>: <what is wrong>".  The CLI maps these to exit codes (0 ok; 1 an
input failed: a ``DamagedInputError``, a log that could not be ingested, a check that
regressed; 2 a usage or configuration error: the others);
library code lets them propagate.  Not in the tree: ``TierInvariantError``, an ``AssertionError``
(a bug in a tier, not a problem of the input), raised by ``replay/engine/tiers/apply.py``.
"""

from __future__ import annotations


class ReplayError(Exception):
    """Base of every error ctxreplay raises on purpose."""


class ParseError(ReplayError):
    """A log file, or one line of it, could not be read."""

    def __init__(self, path: str, line: int | None, reason: str) -> None:
        self.path, self.line, self.reason = path, line, reason
        where = f"{path}:{line}" if line else path
        super().__init__(f"{where}: {reason}")


class DamagedInputError(ReplayError):
    """An input the user named — a dataset, a ``replay run`` folder, a baseline — is there but
    damaged: a part missing or cut, not the format it should be, a symlink planted where a
    file belongs, or parts that contradict each other (a summary that does not describe its
    traces).  An input that failed (exit 1), not a usage error: the command was right, the
    file is not.  The message names the file and what is wrong with it."""


class StoreError(DamagedInputError):
    """A dataset directory is missing, corrupt or from another schema version."""


class RunFolderError(DamagedInputError):
    """A ``replay run --out`` folder read back (``--traces``) is damaged: its summary.json or a
    trace file missing, not a plain file, not what this engine writes, or not describing the
    other (``replay.run_folder.read_run``)."""


class PolicyError(ReplayError):
    """A policy file is invalid."""

    def __init__(self, path: str, key: str, reason: str) -> None:
        self.path, self.key, self.reason = path, key, reason
        where = f"{path}: {key}" if key else path
        super().__init__(f"{where}: {reason}")


class ConfigError(ReplayError):
    """A project configuration file is invalid."""

    def __init__(self, path: str, key: str, reason: str) -> None:
        self.path, self.key, self.reason = path, key, reason
        where = f"{path}: {key}" if key else path
        super().__init__(f"{where}: {reason}")


class TokenizerError(ReplayError):
    """An encoding is not available offline."""


class ReplayInputError(ReplayError):
    """A run cannot be replayed."""


class OutputError(ReplayError):
    """An output folder (``--out``) is a file, or cannot be created or written."""


class TierInvariantError(AssertionError):
    """A tier asked for a change the engine's invariants forbid (a bug in the tier).

    Raised by ``replay/engine/tiers/apply.py``; defined here because a module compiled by mypyc
    (the optional compiled engine) cannot subclass ``AssertionError``."""
