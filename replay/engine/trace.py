"""The output of one replay: what the harness would have sent, request by request.

A ``Trace`` holds three column tables, declared once here:

- ``requests``: one row per model call — tokens by estimate and by truth, the
  window and reserve, overshoot, context split into call arguments (write/edit
  separately), results and other bytes, cache-eligible prefix, invalidated
  tokens, cost;
- ``actions``: one row per tier action — tier, trigger value and the threshold it resolved to,
  messages affected, tokens reclaimed, whether it was undone or its summariser failed, and the
  values a tier resolved from the policy that analyses need (``min_reclaim_tokens``: the trim
  minimum after ``min_reclaim_frac × usable``; ``protect_first_msg``: the first message of the
  range the action could not touch, null when nothing was protected), so ``analysis`` never
  re-derives tier logic;
- ``evictions``: one row per block a tier trimmed, summarised or dropped, with
  the request before which that happened.

Re-reads the replay induced (the agent fetching again what the policy removed, where the
recorded run needs it: ``replay.engine.induced``) are marked in all three: the requests'
``induced_*`` columns (calls inserted before a request, their tokens and cost), the action kind
``induced_reread`` and the ``induced`` flag of actions and evictions, so every figure can be
split into recorded and induced work.

Each table's rows have a named type declared beside its schema (``RequestRow``, ``ActionRow``,
``EvictionRow``; checked at import to be the table's columns, in order, with their types and
nullability); the engine builds rows through them (its per-request loop keeps the measured
values of ``RequestMeasured`` as flat positional values, for speed) and maps columns by name.

The trace's vocabulary lives here too, and only here: the action kinds, the eviction fates and
the kind families (trim-like, cut-like, summaries); tiers write these names, analyses read them.

Not here: computing it (``replay.engine.fold``), metrics over it (``analysis``).
"""

from __future__ import annotations

from typing import Any, NamedTuple, get_type_hints

import pyarrow as pa

from replay.ingest.schema import SCHEMA_VERSION

# -- vocabulary: action kinds (``actions.kind``) -------------------------------------------------
TRIM = "trim"
"""A trim tier's pass: old tool output (and write/edit arguments) replaced by placeholders."""
SUMMARISE = "summarise"
"""A summarise tier's cut: the oldest messages replaced by a stub summary."""
COLLAPSE = "collapse"
"""A collapse tier's cut: the oldest messages dropped (behind a stub summary if configured)."""
COLLAPSE_TRIM = "collapse_trim"
"""A collapse tier's emergency trim inside the other tiers' protected ranges."""
CUSTOM_TRIM = "custom_trim"
"""A custom tier's ``TrimBlocks`` decision."""
CUSTOM_CUT = "custom_cut"
"""A custom tier's ``CutBefore`` decision."""
INDUCED_REREAD = "induced_reread"
"""The agent fetching again what the policy had removed, where the recorded run needs it
(``replay.engine.induced``): one more model call, and the content back in the context (the
action's ``reclaimed_tokens`` is negative: the context grew).  ``undone``: the need was unmet
but the policy's cap per turn was reached, nothing inserted."""
ACTION_KINDS: tuple[str, ...] = (TRIM, SUMMARISE, COLLAPSE, COLLAPSE_TRIM, CUSTOM_TRIM, CUSTOM_CUT,
                                 INDUCED_REREAD)

TRIM_KINDS: tuple[str, ...] = (TRIM, COLLAPSE_TRIM, CUSTOM_TRIM)
"""Trim-like kinds: blocks replaced in place (nothing removed)."""
CUT_KINDS: tuple[str, ...] = (SUMMARISE, COLLAPSE, CUSTOM_CUT)
"""Cut-like kinds: every message before a safe split removed (behind a head, if any)."""
GROW_KINDS: tuple[str, ...] = (INDUCED_REREAD,)
"""Kinds that add to the context (the agent's own doing, not a tier's)."""
REMOVING_KINDS: tuple[str, ...] = TRIM_KINDS + CUT_KINDS
"""Kinds by which a tier removes content (every kind but the growing ones)."""
SUMMARY_KINDS: tuple[str, ...] = CUT_KINDS
"""What counts as a summary, everywhere (``replay run``, ``metrics()``, the summarisation
analysis, the report): a replayed cut that replaces the oldest messages, by kind."""
INDUCED_FAMILY = "induced"
"""The family of ``GROW_KINDS`` (the agent's doing, no tier's)."""
FAMILIES: dict[str, str] = {TRIM: "trim", SUMMARISE: "summarise", COLLAPSE: "collapse",
                            COLLAPSE_TRIM: "collapse", CUSTOM_TRIM: "custom",
                            CUSTOM_CUT: "custom", INDUCED_REREAD: INDUCED_FAMILY}
"""Action kind → the tier family it comes from (reported per family)."""
FAMILY_NAMES: tuple[str, ...] = ("trim", "summarise", "collapse", "custom")
"""The tier families (an induced re-read is no tier's: its family is ``INDUCED_FAMILY``)."""
INDUCED_AT_NEED = "need"
"""The ``when`` of an induced re-read made where the recorded run needs the content."""
INDUCED_INVITED = "invited"
"""The ``when`` of an induced re-read a re-call placeholder asked for (``invited_recall:
immediate``): made at the request after the placeholder was first sent."""
INDUCED_TIER = "behaviour"
"""The ``tier`` of an induced re-read's action row (the policy's ``behaviour:`` block)."""

# -- vocabulary: eviction fates (``evictions.fate``) ---------------------------------------------
TRIMMED = "trimmed"
"""Replaced by a placeholder (still in context, shrunk)."""
SUMMARISED = "summarised"
"""Removed by a summarise cut (behind its summary)."""
DROPPED = "dropped"
"""Removed by a collapse or custom cut."""
FATES: tuple[str, ...] = (TRIMMED, SUMMARISED, DROPPED)
REMOVED_FATES: tuple[str, ...] = (SUMMARISED, DROPPED)
"""Fates that take a block out of the context (a trimmed block stays, shrunk)."""

TRACE_VERSION = "34"
"""Bumped whenever the engine's arithmetic or these columns change."""

_S, _I, _F, _B = pa.string(), pa.int64(), pa.float64(), pa.bool_()


def _schema(name: str, cols: list[tuple[str, pa.DataType]]) -> pa.Schema:
    return pa.schema([pa.field(n, t, nullable=(n in _NULLABLE)) for n, t in cols],
                     metadata={"trace_version": TRACE_VERSION, "schema_version": SCHEMA_VERSION,
                               "table": name})


_NULLABLE = {"recorded_input_tokens", "recorded_cache_read_tokens", "protect_first_msg"}

REQUESTS = _schema("requests", [
    ("run_id", _S), ("policy", _S), ("request", _I), ("ts", _S),
    ("est_tokens", _I), ("truth_tokens", _I), ("raw_tokens", _I),
    ("recorded_input_tokens", _I), ("recorded_cache_read_tokens", _I),
    ("window_tokens", _I), ("reserve_tokens", _I), ("usable_tokens", _I),
    ("overshoot_tokens", _I), ("n_messages", _I), ("n_blocks", _I),
    ("bytes_args", _I), ("bytes_args_write", _I), ("bytes_results", _I), ("bytes_other", _I),
    ("cached_tokens", _I), ("cache_write_tokens", _I), ("fresh_tokens", _I),
    ("invalidated_tokens", _I), ("output_tokens", _I), ("cost_usd", _F), ("truth_source", _S),
    ("truth_floored", _B), ("induced_rereads", _I), ("induced_tokens", _I), ("induced_cost_usd", _F),
])
ACTIONS = _schema("actions", [
    ("run_id", _S), ("policy", _S), ("action", _I), ("request", _I), ("tier", _S), ("kind", _S),
    ("when", _S), ("trigger_tokens", _I), ("threshold_tokens", _I), ("n_blocks", _I),
    ("first_msg", _I), ("last_msg", _I), ("reclaimed_tokens", _I), ("reclaimed_est_tokens", _I),
    ("invalidated_tokens", _I), ("undone", _B), ("failed", _B), ("summary_tokens", _I),
    ("context_after_tokens", _I), ("recorded_summary", _B), ("min_reclaim_tokens", _I),
    ("protect_first_msg", _I), ("induced", _B), ("size_estimate", _S),
])
EVICTIONS = _schema("evictions", [
    ("run_id", _S), ("policy", _S), ("msg", _I), ("block", _I), ("request", _I), ("tier", _S),
    ("fate", _S), ("induced", _B),
])
TRACE_SCHEMAS: dict[str, pa.Schema] = {"requests": REQUESTS, "actions": ACTIONS,
                                       "evictions": EVICTIONS}


# -- rows: one named row type per table, its fields the table's columns in order -----------------
# (checked against the schemas at import: ``_check_rows``)


class RequestRow(NamedTuple):
    """One row of ``requests``."""

    run_id: str
    policy: str
    request: int
    ts: str
    est_tokens: int
    truth_tokens: int
    raw_tokens: int
    recorded_input_tokens: int | None
    recorded_cache_read_tokens: int | None
    window_tokens: int
    reserve_tokens: int
    usable_tokens: int
    overshoot_tokens: int
    n_messages: int
    n_blocks: int
    bytes_args: int
    bytes_args_write: int
    bytes_results: int
    bytes_other: int
    cached_tokens: int
    cache_write_tokens: int
    fresh_tokens: int
    invalidated_tokens: int
    output_tokens: int
    cost_usd: float
    """Of this request and of the re-reads induced before it (``induced_cost_usd``)."""
    truth_source: str
    truth_floored: bool
    """The request's truth is the floor (the lowest plausible scale × its plain count), not the
    anchored arithmetic, which went below it: the log recorded an input below the run's fitted
    line there, and the replay removed more than that (``replay.engine.truth.floored``)."""
    induced_rereads: int
    """Model calls the replay inserted before this request: re-reads of content the policy had
    removed and the recorded run needs here (``replay.engine.induced``; 0 without)."""
    induced_tokens: int
    """True tokens those re-reads put back into the context (call and result)."""
    induced_cost_usd: float
    """What those inserted calls cost (included in ``cost_usd``)."""


class RequestMeasured(NamedTuple):
    """The values of ``requests`` the engine's loop measures at each request, in table order
    (``replay.engine.measured``); the other columns are the run's and the policy's."""

    est_tokens: int
    truth_tokens: int
    overshoot_tokens: int
    n_messages: int
    n_blocks: int
    bytes_args: int
    bytes_args_write: int
    bytes_results: int
    bytes_other: int
    cached_tokens: int
    cache_write_tokens: int
    fresh_tokens: int
    invalidated_tokens: int
    cost_usd: float


class ActionRow(NamedTuple):
    """One row of ``actions``."""

    run_id: str
    policy: str
    action: int
    request: int
    tier: str
    kind: str
    when: str
    trigger_tokens: int
    threshold_tokens: int
    n_blocks: int
    first_msg: int
    last_msg: int
    reclaimed_tokens: int
    """True tokens the action took out of the context."""
    reclaimed_est_tokens: int
    """The same by the policy's estimate."""
    invalidated_tokens: int
    undone: bool
    failed: bool
    summary_tokens: int
    context_after_tokens: int
    recorded_summary: bool
    min_reclaim_tokens: int
    protect_first_msg: int | None
    induced: bool
    """The action is an induced re-read, or acted on one (a re-read trimmed again)."""
    size_estimate: str
    """An induced re-read whose size is an estimate, and why (``replay.engine.refetch``):
    ``unapplied_edits`` — the file was edited since its newest whole content by an edit the
    replay cannot apply (a patch, an unknown tool); ``parts_only`` — the file was only ever read
    in parts (sized as the largest part read, a lower bound); ``as_lost_before`` — the last time
    the agent read the file without a copy of it in its recorded context it read a part (sized
    as that part: its habit, not the file); "" otherwise."""


class EvictionRow(NamedTuple):
    """One row of ``evictions``."""

    run_id: str
    policy: str
    msg: int
    block: int
    request: int
    tier: str
    fate: str
    induced: bool
    """The block evicted is an induced re-read of ``block`` (not the recorded block)."""


ROW_TYPES: dict[str, type[tuple[Any, ...]]] = {"requests": RequestRow, "actions": ActionRow,
                                               "evictions": EvictionRow}
"""Table name → its row type."""


class Trace:
    """One replay's tables (or several replays' concatenated).

    Built from column lists; the Arrow tables are made on first access, so a sweep
    that only reads the columns (``columns``) never pays for them.
    """

    __slots__ = ("_cols", "_tables")

    def __init__(self, requests: pa.Table | None = None, actions: pa.Table | None = None,
                 evictions: pa.Table | None = None, *,
                 columns: dict[str, dict[str, list[Any]]] | None = None) -> None:
        self._cols = columns
        self._tables: dict[str, pa.Table] = {}
        if requests is not None:
            self._tables["requests"] = requests
        if actions is not None:
            self._tables["actions"] = actions
        if evictions is not None:
            self._tables["evictions"] = evictions

    def table(self, name: str) -> pa.Table:
        """One of the three tables, built from the columns on first use."""
        if name not in self._tables:
            if self._cols is None:
                raise KeyError(name)
            self._tables[name] = pa.Table.from_pydict(self._cols[name], schema=TRACE_SCHEMAS[name])
        return self._tables[name]

    def columns(self, name: str) -> dict[str, list[Any]]:
        """One table as column lists (no Arrow conversion when built from columns)."""
        if self._cols is not None:
            return self._cols[name]
        cols: dict[str, list[Any]] = self._tables[name].to_pydict()
        return cols

    @property
    def requests(self) -> pa.Table:
        """One row per request."""
        return self.table("requests")

    @property
    def actions(self) -> pa.Table:
        """One row per tier action."""
        return self.table("actions")

    @property
    def evictions(self) -> pa.Table:
        """One row per trimmed, summarised or dropped block."""
        return self.table("evictions")

    @staticmethod
    def concat(traces: list[Trace]) -> Trace:
        """Several traces as one (row order kept)."""
        if not traces:
            return Trace(*(s.empty_table() for s in TRACE_SCHEMAS.values()))
        if all(t._cols is not None and not t._tables for t in traces):
            cols = empty_columns()
            for t in traces:
                for name, table in t._cols.items():  # type: ignore[union-attr]
                    for col, values in table.items():
                        cols[name][col].extend(values)
            return Trace(columns=cols)
        return Trace(*(pa.concat_tables([t.table(n) for t in traces]) for n in TRACE_SCHEMAS))


def empty_columns() -> dict[str, dict[str, list[Any]]]:
    """Empty column lists for every trace table."""
    # the row types' fields are the schemas' column names (checked at import, _check_rows):
    # a tuple, where Schema.names builds a list from Arrow's fields at every call
    return {name: {f: [] for f in ROW_TYPES[name]._fields} for name in ROW_TYPES}  # type: ignore[attr-defined]


def _check_vocabulary() -> None:
    """Every kind has a family and every family is named (checked at import)."""
    if (set(FAMILIES) != set(ACTION_KINDS)
            or set(FAMILIES.values()) != {*FAMILY_NAMES, INDUCED_FAMILY}):
        raise AssertionError("replay.engine.trace: action kinds and families disagree")
    groups = (TRIM_KINDS, CUT_KINDS, GROW_KINDS)
    if set().union(*groups) != set(ACTION_KINDS) or sum(map(len, groups)) != len(ACTION_KINDS):
        raise AssertionError("replay.engine.trace: every kind is trim-like, cut-like or growing, "
                             "exactly one")


_ARROW_OF = {"str": _S, "int": _I, "float": _F, "bool": _B}


def _check_rows() -> None:
    """Each row type's fields are its table's columns, in order, with the column's type and
    nullability; the loop's measured values are columns of ``requests`` in table order (checked
    at import)."""
    for name, row in ROW_TYPES.items():
        schema = TRACE_SCHEMAS[name]
        if row._fields != tuple(schema.names):  # type: ignore[attr-defined]
            raise AssertionError(f"replay.engine.trace: {row.__name__}'s fields are not the columns "
                                 f"of {name}")
        for f, hint in get_type_hints(row).items():
            nullable = hint != (base := hint.__args__[0] if hasattr(hint, "__args__") else hint)
            column = schema.field(f)
            if column.type != _ARROW_OF[base.__name__] or column.nullable != nullable:
                raise AssertionError(f"replay.engine.trace: {row.__name__}.{f} is {hint}, the column "
                                     f"is {column.type} (nullable: {column.nullable})")
    order = [REQUESTS.names.index(f) for f in RequestMeasured._fields]
    if order != sorted(order):
        raise AssertionError("replay.engine.trace: RequestMeasured is not in the order of requests")
    for f, hint in get_type_hints(RequestMeasured).items():
        if hint != get_type_hints(RequestRow)[f]:
            raise AssertionError(f"replay.engine.trace: RequestMeasured.{f} is not RequestRow's type")


_check_vocabulary()
_check_rows()
