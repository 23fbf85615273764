"""A table's Arrow IPC stream put together from its parts (``ipc_stream``): what a store keeps
its small tables as (an entry file's footer tables, ``replay.ingest.entry_file``; a worker's
run-index rows, ``replay.ingest.store_index``).

Not here: reading a stream back (``pa.ipc.open_stream``, where the stream is read).
"""

from __future__ import annotations

import pyarrow as pa

IPC_END = b"\xff\xff\xff\xff\x00\x00\x00\x00"
"""The end of an Arrow IPC stream: a continuation marker and a message length of 0."""


def ipc_stream(table: pa.Table, schema: pa.Schema) -> bytes:
    """The Arrow IPC stream of ``table`` under ``schema``: the bytes ``pa.ipc.new_stream(sink,
    schema, options=pa.ipc.IpcWriteOptions())`` writes for it (the schema's message, each record
    batch's, the end), put together without a stream writer, whose set-up was most of a small
    table's stream (a one-row ``runs``: ~12 -> ~7 µs).  Arrow's current stream format
    (``IpcWriteOptions``' defaults, whatever the environment: ``serialize`` reads no
    ``ARROW_PRE_0_15_IPC_FORMAT``, as a writer made without options does).  The schema's message
    is made once a schema object (give a module's: ``SCHEMAS``, ``RUN_INDEX``).

    Raises:
        ValueError: ``table``'s schema is not ``schema`` (as the stream writer refuses it), or
            has a dictionary field (its dictionaries are not written here; no footer or index
            table has one).
    """
    if not table.schema.equals(schema):
        raise ValueError(f"a table of another schema than the stream's: {table.schema}")
    message = _SCHEMA_MESSAGES.get(id(schema))
    if message is None or message[0] is not schema:
        if any(isinstance(f.type, pa.DictionaryType) for f in schema):
            raise ValueError(f"no IPC stream of a dictionary field here: {schema}")
        if len(_SCHEMA_MESSAGES) >= _SCHEMA_MESSAGES_MAX:
            _SCHEMA_MESSAGES.clear()
        message = _SCHEMA_MESSAGES[id(schema)] = (schema, schema.serialize().to_pybytes())
    return b"".join([message[1], *[b.serialize().to_pybytes() for b in table.to_batches()],
                     IPC_END])


_SCHEMA_MESSAGES: dict[int, tuple[pa.Schema, bytes]] = {}
"""id of a schema -> (the schema, its IPC message): ``ipc_stream``'s (the schema held, so that
its id is not reused); emptied when it holds ``_SCHEMA_MESSAGES_MAX``."""
_SCHEMA_MESSAGES_MAX = 64
