"""Network-aware VM placement (the Virtue paper): the minimax objective, its algorithms and policies."""
