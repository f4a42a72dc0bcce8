"""kind: detect: contend watch judged against ground truth: per runtime, trials in which a known antagonist
(cpu or disk) starts at a random time beside an abiding victim and a bystander, and control trials that must
produce no blame (harmony, a tenant held by its own quota or memory limit, an idle host). The watcher runs live
in each trial (trial.py); accuracy, latency and cost per trial and per cell (metrics.py, pure; report.py)."""
