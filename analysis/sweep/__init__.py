"""Threshold sweeps: a grid of settings (grid), their replays and metric rows (core, cache),
the choice of a best setting (choice), Pareto fronts and plots (pareto, plots), and the
`replay sweep` files (to_files)."""
