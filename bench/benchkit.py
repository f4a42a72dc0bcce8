"""What the benchmarks share: a runc container with a data directory, removed with it afterwards."""
from __future__ import annotations

import shutil
import uuid
from contextlib import contextmanager

from contend.paths import DATA
from contend.runtimes import ContainerSpec, get


@contextmanager
def runc_container():
    """(runtime, container) of one unlimited runc container whose /data is a fresh directory on the
    experiment device; both removed on the way out."""
    rt = get("runc")
    data = DATA / f"contend-bench-{uuid.uuid4().hex[:6]}"
    data.mkdir(parents=True, exist_ok=True)
    try:
        c = rt.create(ContainerSpec(f"bench-{uuid.uuid4().hex[:6]}", data_dir=data))
        try:
            yield rt, c
        finally:
            rt.delete(c)
    finally:
        shutil.rmtree(data, ignore_errors=True)
