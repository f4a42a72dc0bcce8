"""A pytest plugin for tests/test_layout.py: after collection, one line per test with the tiers it is in
(`pytest --collect-only -q -p tests.tierlist`)."""
from __future__ import annotations

TIERS = ("unit", "host", "all")


def pytest_collection_finish(session):
    for item in session.items:
        print(f"tier\t{item.nodeid}\t{','.join(m.name for m in item.iter_markers() if m.name in TIERS)}")
