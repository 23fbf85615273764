"""OpenHands V1 usage: the token counts of each model call, by response id, from a
conversation's ``base_state.json``.

The SDK keeps one ``Metrics`` per LLM usage id (``agent``, ``condenser``, ...) in
``stats.usage_to_metrics``; its ``token_usages`` list holds one ``TokenUsage`` per call
(``prompt_tokens``, ``completion_tokens``, ``cache_read_tokens``, ``cache_write_tokens``,
``reasoning_tokens``, ``response_id``: the ``llm_response_id`` of the events the call made).
``prompt_tokens`` is the whole prompt as litellm counts it, cache reads included; an ACP agent's
usage counts cache reads apart (the SDK's ``MetricsSnapshot.cache_hit_rate`` tells them by
``cache_read_tokens > prompt_tokens``): then the prompt is their sum, and the issue says how many
records were read so.  A record that is no object or names no response, and a usage id whose
``token_usages`` is not a list, is counted in an issue.  Values are as recorded: one that is not
a count is made unknown, with an issue, by ``RunBuilder.request``.

Not here: which requests they belong to (``replay.ingest.parsers.openhands_v1``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from replay.ingest.parsers.content_text import not_a_string
from replay.ingest.parsers.counts import not_a_count


@dataclass(frozen=True, slots=True)
class Usage:
    """One model call's recorded counts (as recorded: ``RunBuilder.request`` checks them)."""

    model: str
    prompt: Any
    """The whole prompt's tokens (cache reads included)."""
    cache_read: Any
    cache_write: Any
    output: Any
    reasoning: Any


def usage_by_response(base: dict[str, Any] | None) -> tuple[dict[str, Usage], list[str]]:
    """Response id -> its call's usage, and what was wrong (one line each) in ``base``, a
    ``base_state.json`` (None: none read)."""
    found: dict[str, Usage] = {}
    problems: list[str] = []
    if base is None:
        return found, problems
    stats = base.get("stats")
    per_id = stats.get("usage_to_metrics") if isinstance(stats, dict) else None
    if not isinstance(per_id, dict):
        problems.append("no stats.usage_to_metrics: every request's usage is unknown")
        return found, problems
    repeated = summed = no_id = bad_ids = 0
    odd_models: list[Any] = []  # (models of another type: read as none, said)
    for metrics in per_id.values():
        usages = metrics.get("token_usages") if isinstance(metrics, dict) else None
        if not isinstance(usages, list):
            bad_ids += usages is not None or not isinstance(metrics, dict)
            continue
        for u in usages:
            rid = u.get("response_id") if isinstance(u, dict) else None
            if not isinstance(rid, str) or not rid:
                no_id += 1
                continue
            if rid in found:
                repeated += 1
                continue
            prompt, read = u.get("prompt_tokens"), u.get("cache_read_tokens")
            if not_a_count(prompt) is None and not_a_count(read) is None and read > prompt:
                prompt, summed = prompt + read, summed + 1
            model = u.get("model")
            if model.__class__ is not str:
                if model is not None:
                    odd_models.append(model)
                model = ""
            found[rid] = Usage(model, prompt, read,
                               u.get("cache_write_tokens"), u.get("completion_tokens"),
                               u.get("reasoning_tokens"))
    if odd_models:
        problems.append(f"{len(odd_models)} token usage record(s) name a model that is no "
                        f"string, read as none (first: {not_a_string(odd_models[0], 'model')})")
    if repeated:
        problems.append(f"{repeated} token usage record(s) repeat a response id already read "
                        "(the first kept)")
    if summed:
        problems.append(f"{summed} token usage record(s) count cache reads apart from "
                        "prompt_tokens (an ACP agent's): the prompt is read as their sum")
    if no_id:
        problems.append(f"{no_id} token usage record(s) not read (not an object, or no "
                        "response_id): not matched to any request")
    if bad_ids:
        problems.append(f"{bad_ids} usage id(s) of stats.usage_to_metrics not read (not an "
                        "object, or token_usages not a list)")
    return found, problems
