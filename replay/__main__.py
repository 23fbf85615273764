"""The ``replay`` command's entry point (the console script and ``python -m replay``).

Process-wide effects happen here and only here, before anything loads pyarrow: the system
allocator as Arrow's default pool (``replay.memory``; ``ARROW_DEFAULT_MEMORY_POOL`` set by the
user wins).  Importing ``replay`` or ``replay.cli`` as a library changes nothing in the process.
"""

from __future__ import annotations

from replay.memory import use_system_allocator


def main() -> None:
    """Choose Arrow's allocator, then run the command line."""
    use_system_allocator()
    # after use_system_allocator: the commands import pyarrow when they run, and its memory pool
    # is chosen when it is first imported
    from replay.cli import app

    app()


if __name__ == "__main__":
    main()
