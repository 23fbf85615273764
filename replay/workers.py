"""Worker processes that never outlive the process that started them.

``init_worker`` is the initializer of every worker pool ctxreplay starts (ingest, sweep): on
Linux the kernel can kill the worker when its parent dies (``PR_SET_PDEATHSIG``); everywhere a
daemon thread also checks once a second that the parent is still the same process and ends the
worker when it is not (a killed ``replay ingest`` or ``sweep`` leaves no workers running on).
Workers ignore Ctrl-C: the parent gets it too and stops them itself, without a traceback from
each.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time

_PR_SET_PDEATHSIG = 1
CHECK_SECONDS = 1.0
"""How often a worker checks that its parent is alive."""
IDLE_SECONDS = 300
"""How long the sweep's and the plots' reusable loky pool keeps an idle worker (loky's default
is 10 s: a sweep after a pause of more than 10 s started its workers and read its runs again).
An idle worker holds its interpreter with the libraries and the runs it keeps
(``analysis.sweep.unit.KEEP_LOADED_REQUESTS``): about 200 MiB each on the samples' 25 runs; a
worker still ends with its parent (``init_worker``), so only a long-lived caller (a notebook)
keeps them the while."""


def init_worker(parent_pid: int, kernel: bool = False) -> None:
    """Make this (worker) process end when the process ``parent_pid`` is gone.

    ``kernel``: also ask Linux to kill it (``PR_SET_PDEATHSIG``); only for workers forked by
    a thread that lives as long as the pool (the kernel signals when that *thread* ends).
    """
    parent = parent_pid
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if kernel and sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass  # the watchdog below still ends the worker
    if os.getppid() != parent:  # the parent died before the line above took effect
        os._exit(1)
    threading.Thread(target=_watch, args=(parent,), name="parent-watchdog", daemon=True).start()


def _watch(parent: int) -> None:
    while True:
        time.sleep(CHECK_SECONDS)
        if os.getppid() != parent:
            os._exit(1)
