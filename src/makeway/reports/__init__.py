"""Rendering of simulation results: HTML report, side-by-side comparison, per-workload explanation."""
