"""How close Sova's simulator comes to the five papers: each paper's figures and tables as claims (the
paper's number or words, Sova's number from a run, the error and a verdict), the experiments that measure
them, and docs/fidelity.md rendered from their result files (`scripts/fidelity.py`)."""
