"""What the run-index tests share: a store's index replaced by another table, as an index an
older ctxreplay wrote (the manifest's ``index_sha256`` made to match, so only its schema tells
it apart)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from replay.ingest import store, store_index


def write_older_index(out: Path, older: pa.Table) -> None:
    """``older`` as the store ``out``'s run index, the manifest recording its sha256."""
    pq.write_table(older, out / store_index.INDEX_FILE)
    manifest = out / "manifest.json"
    doc = json.loads(manifest.read_text())
    doc["index_sha256"] = hashlib.sha256((out / store_index.INDEX_FILE).read_bytes()).hexdigest()
    manifest.write_text(json.dumps(doc))
    assert store.manifest_index_sha256(out) == doc["index_sha256"]
