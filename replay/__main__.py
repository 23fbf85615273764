"""The ``replay`` command's entry point (the console script and ``python -m replay``).

Process-wide effects happen here and only here, before anything loads pyarrow or numpy: the
system allocator as Arrow's default pool (``replay.memory``; ``ARROW_DEFAULT_MEMORY_POOL`` set by
the user wins), and no OpenBLAS thread pool (``BLAS_THREADS``).  Importing ``replay`` or
``replay.cli`` as a library changes nothing in the process.
"""

from __future__ import annotations

import os

from replay.memory import use_system_allocator

BLAS_THREADS = {"OPENBLAS_NUM_THREADS": "1"}
"""Set for the command's process (and the workers it starts) unless the user set it: numpy's
OpenBLAS starts a thread per core when it loads, which spins for a while (0.03-0.10 s of CPU a
process here, more than a small file's whole ingest) and is never used: nothing in ctxreplay
calls BLAS (no matrix product, no ``numpy.linalg``)."""


def main() -> None:
    """Choose Arrow's allocator and no BLAS thread pool, then run the command line."""
    use_system_allocator()
    for name, value in BLAS_THREADS.items():
        os.environ.setdefault(name, value)
    # after use_system_allocator: the commands import pyarrow when they run, and its memory pool
    # is chosen when it is first imported
    from replay.cli import app

    app()


if __name__ == "__main__":
    main()
