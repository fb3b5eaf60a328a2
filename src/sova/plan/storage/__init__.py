"""SASLO's storage SLO enforcement (the SEE: rate limiter, PI controller, IO split) and its optimizer (AOT)."""
