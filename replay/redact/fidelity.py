"""Where a replay of a redacted archive can differ from the original's, for one policy.

Every block of a redacted archive reads with the original's figures (characters, bytes,
lines, tokens per tokenizer, operation, hashed path, timestamps shifted as asked), so what a
replay computes from blocks is the same: requests, the context sent, trims chosen by size,
recorded usage.  What a replay *writes* from a block's text is not: the text is a marker now.
``content_dependence`` names each place a policy does that:

* a stub summary (``summarise`` tier, or ``collapse`` with ``summary_tokens``) quotes the
  summarised blocks' first lines, the files read and edited (hashes now, of another length)
  and test figures from command output; its token count differs, and so does everything
  sent after it (and, through the window, later triggers, trims, overshoots);
* a placeholder keeping the head or tail of the trimmed text (``head_chars``, ``tail_lines``…)
  keeps part of the marker instead;
* a placeholder or write note naming ``{path}`` names the hash;
* a custom tier may read the text.

A policy with none of these replays a redacted archive exactly as the original (measured on
``logs/`` and the Claude Code and Codex samples: ``tests/replay/redact/test_redact.py``).

Not here: writing the archive (``replay.redact.archive``).
"""

from __future__ import annotations

from replay.policy import Collapse, Custom, Placeholder, Policy, Summarise, Trim


def content_dependence(policy: Policy) -> tuple[str, ...]:
    """Why a replay of a redacted archive under ``policy`` may differ from the original's
    (empty: it does not)."""
    why: list[str] = []
    for tier in policy.tiers:
        name = tier.name
        if isinstance(tier, Summarise) or isinstance(tier, Collapse) and tier.summary_tokens:
            why.append(f"{name}: stub summaries quote the summarised text (first lines, paths, "
                       f"test figures)")
        if isinstance(tier, (Trim, Collapse)):
            why += _placeholder(name, tier.placeholder)
        if isinstance(tier, Trim) and "write_args" in tier.blocks and "{path}" in tier.write_note:
            why.append(f"{name}: the write note names the path (a hash now)")
        if isinstance(tier, Custom):
            why.append(f"{name}: a custom tier may read the text")
    if policy.behaviour.rereads and policy.tiers:
        why.append("behaviour.rereads: the need rules read the assistant's messages for "
                   "file names (replay.engine.needs, mentions-file), which redaction "
                   "replaces by markers")
    return tuple(why)


def _placeholder(name: str, ph: Placeholder) -> list[str]:
    why = []
    if ph.head_chars or ph.tail_chars or ph.head_lines or ph.tail_lines:
        why.append(f"{name}: placeholders keep the head or tail of the text (the marker now)")
    if "{path}" in ph.template:
        why.append(f"{name}: placeholders name the path (a hash now)")
    return why
