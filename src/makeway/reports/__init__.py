"""Rendering of simulation results (schema ``makeway.results/1``, see docs/results-schema.md).

Entry points, imported from their modules so ``explain`` does not pay for matplotlib:
``html.render_report``, ``compare.compare_rows`` / ``compare.render_compare``, ``explain.explain``.
"""
