"""Calibration: fit the server's real token counts from the usage a log recorded.

Claude Code, Codex, mini-swe-agent and OpenHands logs carry the prompt size the
server counted for each original request.  ``calibrate`` fits

    recorded input tokens ≈ overhead_tokens + scale × (tokenizer count of the context)

by least squares over the requests before the first harness compaction (after
it, the recorded context is no longer the raw stream), and reports the fit
error.  Requests whose context holds blocks sized from redaction markers
(``Message.tokens_estimated``) are fitted too, and counted in ``n_points_estimated``: their
x is partly an estimate.  The overhead absorbs the system prompt and tool schemas the log does
not contain; the scale absorbs the difference between the provider's tokenizer
and ours.  A policy with ``truth: {method: calibrated}`` uses the fit.
"""

from __future__ import annotations

from replay.policy import Counter
from replay.prepared import Calibration, PreparedRun


def calibrate(run: PreparedRun, tokenizer: str = "o200k_base",
              message_overhead_tokens: int = 0) -> Calibration | None:
    """The fit for one run, or None when it has fewer than two usable recorded requests."""
    counts = run.counts(Counter(method="tokenizer", tokenizer=tokenizer))
    xs, ys = [], []
    total, upto, n_msgs, estimated, n_est = 0, 0, 0, False, 0
    stop = run.first_compaction_request if run.first_compaction_request is not None else run.n_requests
    for k in range(stop):
        hi = run.req_blocks[k]
        for b in range(upto, hi):
            total += counts[b]
            estimated = estimated or run.estimated[b]
            if run.msg_start[run.ordinal[b]] == b:
                n_msgs += 1
        upto = max(upto, hi)
        y = run.recorded_input[k]
        if y is not None and y > 0:
            xs.append(float(total + n_msgs * message_overhead_tokens))
            ys.append(float(y))
            n_est += estimated
    if len(xs) < 2:
        return None
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return None
    scale = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    overhead = my - scale * mx
    if scale <= 0:
        scale, overhead = my / mx if mx else 1.0, 0.0
    err = sum(abs(overhead + scale * x - y) / y for x, y in zip(xs, ys)) / n
    return Calibration(overhead_tokens=overhead, scale=scale, n_points=n, mean_abs_error_frac=err,
                       n_points_estimated=n_est)
