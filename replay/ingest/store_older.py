"""An older ctxreplay's store: found, so that an ingest rebuilds it instead of refusing it.

Not here: the store's layout and manifest (``replay.ingest.store``), the rebuild
(``replay.ingest.batch``).
"""

from __future__ import annotations

import json
from pathlib import Path

from replay.ingest.input_files import Unreadable, read_document
from replay.ingest.schema import SCHEMA_VERSION
from replay.ingest.store import KEY


def older_store(root: Path) -> tuple[str, dict[str, str]] | None:
    """``(its schema version, source -> key of its entries)`` when ``root`` holds a store an older
    ctxreplay wrote (a lower ``schema_version``), else None.  An ingest rebuilds such a store
    instead of refusing it: its entries cannot be read by this version, and ``read_manifest``
    refuses them.  Only keys of the shape ctxreplay gives its keys (``store.KEY``) are returned
    (``remove_entry`` deletes those files and folders under ``root/data`` and nothing else: a
    crafted manifest's key ``thesis`` never names the user's ``data/thesis``); a manifest that is not a
    ctxreplay manifest, or from a newer ctxreplay, gives None (``read_manifest`` then says why).
    """
    path = root / "manifest.json"
    if path.is_symlink() or not path.is_file():
        return None
    try:
        doc = json.loads(read_document(path))
        version = doc["schema_version"]
        if not isinstance(version, str) or not version.isdigit() or \
                int(version) >= int(SCHEMA_VERSION):
            return None
        keys = {str(s): e["key"] for s, e in doc["entries"].items()
                if isinstance(e, dict) and isinstance(e.get("key"), str)}
    except (Unreadable, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return None
    return version, {s: k for s, k in keys.items() if KEY.fullmatch(k)}
