"""kind: parallel, the parallel isolation suite (CoPTS, Middleware 2023): benchmarks in 1..N concurrent
containers. Its spec, benchmarks (and the C tools they build), trials, metrics (scaling, Jain's fairness) and
report."""
