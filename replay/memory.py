"""Process memory for long batch jobs: which allocator Arrow uses, and giving freed heap back.

Replaying an archive reads thousands of small store entries one after the other.  Each is
freed when its run is done, but two allocators keep what they freed, so the process's
resident memory creeps up with the number of runs rather than staying at what the largest
run needs:

- Arrow's default pool (mimalloc in the pyarrow wheels) keeps ~30 MB of segments after the
  first Parquet read of a few hundred KB; the system allocator keeps ~10 MB.  The ``replay``
  command therefore asks Arrow for the system pool (``use_system_allocator``), unless the user
  chose one with Arrow's own ``ARROW_DEFAULT_MEMORY_POOL`` variable.
- glibc's ``malloc`` keeps freed pages inside its heap for reuse; ``malloc_trim`` returns them
  to the OS (Dask's workers do the same for their "unmanaged memory").
  ``release_freed_memory`` calls it where it exists (glibc) and does nothing elsewhere; it
  costs a few milliseconds, so batch loops call it every few hundred runs.

A third: ``collector_paused`` turns Python's cyclic garbage collector off for one burst of
allocation (a file parsed, a run replayed).

Not here: anything that changes what is computed.  All three only change where or when freed
memory goes.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import gc
import os
import sys


def use_system_allocator() -> None:
    """Make the system allocator Arrow's default pool, unless ``ARROW_DEFAULT_MEMORY_POOL``
    says otherwise.

    Arrow reads that variable once, when pyarrow loads, and its C++ readers (Parquet) use
    that pool whatever Python sets later; so this sets the variable (inherited by worker
    processes too) and must run before pyarrow is imported, as the ``replay`` command does.
    Once pyarrow is loaded it can only change the pool Python-side calls use.
    """
    if os.environ.get("ARROW_DEFAULT_MEMORY_POOL"):
        return
    if "pyarrow" not in sys.modules:
        os.environ["ARROW_DEFAULT_MEMORY_POOL"] = "system"
        return
    # only when pyarrow is loaded already: importing it earlier fixes the pool chosen above
    import pyarrow as pa

    pa.set_memory_pool(pa.system_memory_pool())


def release_freed_memory() -> bool:
    """Return the heap's free pages to the OS (glibc ``malloc_trim``); whether it could."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True


@functools.cache
def _malloc_trim() -> ctypes._CFuncPtr | None:  # type: ignore[name-defined]
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        return ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):  # not glibc (musl, macOS): nothing to trim
        return None


class collector_paused:  # a class, named as the function it replaced: ``with collector_paused():``
    """Python's cyclic garbage collector off inside the block, back on after (when it was on).

    The collector runs every few hundred new containers and, now and then, walks every live
    object; a parser decoding a log of many small records makes millions of them, all kept
    until the file's tables are built, so collecting found nothing to free and took a third of
    the parse of a 5 MB file of tiny records (``replay.ingest.parse_file``).  Memory is freed by
    reference counting as before; only garbage in reference cycles waits for the block's end.

    A class rather than a ``contextlib.contextmanager`` generator: a replay of a short run
    pauses it too (``replay.engine.fold``), and the generator's frames and the ``StopIteration``
    ending it cost more than the two calls here.
    """

    __slots__ = ("_was",)

    def __enter__(self) -> None:
        self._was = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc: object) -> None:
        if self._was:
            gc.enable()
