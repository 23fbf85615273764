"""A secret-scanner-style check: well-known shapes of secrets, looked for in bytes.

``replay redact`` runs it over every file it writes (a file where it finds one is not written)
and the tests run it over a whole archive.  The shapes are the common ones scanners such as
gitleaks and GitHub's secret scanning look for first; a redacted archive should hold none,
nor any e-mail address.

Not here: what is redacted (``replay.redact.leaves``).
"""

from __future__ import annotations

import re

PATTERNS: dict[str, re.Pattern[bytes]] = {
    "AWS access key id": re.compile(rb"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    "GitHub token": re.compile(rb"\bgh[pousr]_[A-Za-z0-9]{36,}\b"),
    "GitHub fine-grained token": re.compile(rb"\bgithub_pat_[A-Za-z0-9_]{40,}\b"),
    "private key": re.compile(rb"-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----"),
    "Slack token": re.compile(rb"\bxox[baprs]-[A-Za-z0-9-]{10,}\b"),
    "OpenAI/Anthropic key": re.compile(rb"\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}\b"),
    "e-mail address": re.compile(rb"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b"),
    "Google API key": re.compile(rb"\bAIza[0-9A-Za-z_-]{35}"),
    "Hugging Face token": re.compile(rb"\bhf_[A-Za-z0-9]{30,}\b"),
    "GitLab token": re.compile(rb"\bglpat-[A-Za-z0-9_-]{20,}"),
    "Stripe key": re.compile(rb"\b[sr]k_live_[A-Za-z0-9]{16,}\b"),
    "npm token": re.compile(rb"\bnpm_[A-Za-z0-9]{36}\b"),
    "JSON Web Token": re.compile(rb"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
}
"""What a secret looks like, by name."""

HELD: dict[str, tuple[bytes, ...]] = {
    "AWS access key id": (b"AKIA", b"ASIA"),
    "GitHub token": (b"ghp_", b"gho_", b"ghu_", b"ghs_", b"ghr_"),
    "GitHub fine-grained token": (b"github_pat_",),
    "private key": (b"PRIVATE KEY-----",),
    "Slack token": (b"xoxb-", b"xoxa-", b"xoxp-", b"xoxr-", b"xoxs-"),
    "OpenAI/Anthropic key": (b"sk-",),
    "e-mail address": (b"@",),
    "Google API key": (b"AIza",),
    "Hugging Face token": (b"hf_",),
    "GitLab token": (b"glpat-",),
    "Stripe key": (b"k_live_",),
    "npm token": (b"npm_",),
    "JSON Web Token": (b"eyJ",),
}
"""Bytes every match of a shape holds, one of them: where none is in the data, the shape's
pattern is not run.  A pattern starting at a word boundary is tried at every word of the
data (~15 ms a MB each); looking for plain bytes is far faster, and most shapes' bytes are in
no log."""


def scan(data: bytes) -> list[str]:
    """The names of the secret shapes found in ``data`` (empty: none)."""
    return [name for name, pattern in PATTERNS.items()
            if any(held in data for held in HELD[name]) and pattern.search(data)]
