"""The HTML/Markdown report (build, pages, timeline) and policy comparisons (diff, compare)."""
