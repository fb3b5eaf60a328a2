"""Experiments on the simulator: a scenario run once per profile, sweeps, Virtue's trials, runs in parallel
processes or on Dask, the calibration set-ups, run-time estimates, and the no-policy runs behind `sova place`
and `sova predict`. They drive the MAPE-K loop of ``sova.control`` on the simulator's clock."""
