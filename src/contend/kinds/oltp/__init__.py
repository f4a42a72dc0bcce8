"""oltp: a database victim under a CPU, memory or disk bomb (Xavier et al. PDP 2015), under every runtime. What it
shares with diskfill (the windows, the pairing, the page) is in metrics/victim.py and report/victim.py."""
