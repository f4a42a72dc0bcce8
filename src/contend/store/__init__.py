"""store: one DuckDB file per results directory (database.py), metrics.csv beside it."""
from .cells import Cell
from .database import (
    CSV_COLUMNS,
    DB,
    METRICS_CSV,
    SCHEMA,
    Store,
    TrialRecord,
    read_metrics_csv,
    write_metrics_csv,
)

__all__ = ["Cell", "CSV_COLUMNS", "DB", "METRICS_CSV", "read_metrics_csv", "SCHEMA", "Store", "TrialRecord",
           "write_metrics_csv"]
