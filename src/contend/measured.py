"""What a trial measured, in the shape the store keeps it and the metrics read it: its steps and its samples.
(A module of its own so that neither store/ nor metrics/ imports the other.)"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class StepWindow:
    step: int
    phase: str
    t_start: float
    t_end: float
    ideal: dict[str, float]  # tenant -> ideal level



@dataclass
class Samples:
    """Columns of the samples table for one trial."""

    t: np.ndarray
    tenant: np.ndarray
    source: np.ndarray
    quantity: np.ndarray
    value: np.ndarray

    def series(self, tenant: str, source: str, quantity: str) -> tuple[np.ndarray, np.ndarray]:
        m = (self.tenant == tenant) & (self.source == source) & (self.quantity == quantity)
        order = np.argsort(self.t[m])
        return self.t[m][order], self.value[m][order]
