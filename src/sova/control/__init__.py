"""The MAPE-K loop on any driver's clock: the runtime, profiles, the executor with its safety rails, the arbiter,
the audit log, the admission stage, and `sova manage`'s loop on the wall clock. Experiments on the simulator
(runs per profile, sweeps, trials) are ``sova.experiments``, one floor up."""
