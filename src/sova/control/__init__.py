"""The MAPE-K runtime: loops, profiles, the executor with its safety rails, the audit log."""
