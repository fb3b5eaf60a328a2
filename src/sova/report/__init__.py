"""Run outputs: summary.json, per-step metrics CSV, PNG plots, a self-contained report.html."""
