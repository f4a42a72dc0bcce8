"""The parallel isolation suite (CoPTS, Middleware 2023): benchmarks in 1..N concurrent containers."""
