"""victim: studies of one measuring tenant next to noisy neighbours. The disk-fill attack (Kim et al. WISA
2025: three containers write large files with ordinary buffered writes, the fourth measures the disk) and a
database under a CPU, memory or disk bomb (Xavier et al. PDP 2015). Each runs under every runtime and
measures; the metrics are metrics.py's, the report report.py's."""
