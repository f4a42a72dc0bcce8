"""Sizes as specs and tools write them ("4G"), read the one way sysbench and fio read them."""
from __future__ import annotations

SIZE = r"^[0-9]+[KMGT]?$"


def size_bytes(text: str) -> int:
    """"4G" -> 4 GiB in bytes (K, M, G, T: powers of 1024, as sysbench and fio read them)."""
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    return int(text[:-1]) * mult[text[-1]] if text[-1] in mult else int(text)
