"""diskfill: the disk-fill attack (Kim et al. WISA 2025): three containers write large files with ordinary
buffered writes while the fourth measures the disk, under every runtime. What it shares with oltp (the
windows, the pairing, the page) is in metrics/victim.py and report/victim.py."""
