"""kind: isolation (the default), Volpert et al.: host setup → containers up → probes on → baseline → ramped
disruptive load → down (trial.py); the plan (plan.py) and the study that runs it (study.py); the rows per trial
(rows.py) and the report (report.py), both read from the store."""
