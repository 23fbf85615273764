"""The CI gate (`replay check`): baselines (baseline), tolerances, the comparison (gate), the
JUnit/Markdown outputs (report) and the command's library function (run)."""
