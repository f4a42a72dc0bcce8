"""kind: guard: the guard judged on Aridac's workloads (Yang et al.): each workload under each policy, the
victim and the neighbour in Tenants with the guard under test beside them (trial.py); protection metrics
(metrics.py, pure) and the policies side by side (report.py). The guard itself is contend.guard."""
