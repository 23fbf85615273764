"""What the sweep tests share: the base policy and a small grid over it."""

from __future__ import annotations

BASE = "two-tier-corrected"
SMALL = {"tiers.0.min_reclaim_frac": [0, 0.125], "tiers.1.trigger.at_tokens": [40000, 80000]}
"""A 2 × 2 grid that changes trims, summaries and the cache (checked below)."""
