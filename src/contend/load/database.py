"""A real database server inside a tenant, and its client at a fixed rate of transactions (PDP 2015's victim).

PostgreSQL with pgbench (its built-in scripts as the transaction types, each with its own TPS and latency)
and MariaDB with sysbench's OLTP script (transactions, and its read, write and other queries). Both come
from the host's Debian packages through the read-only /usr bind; the data directory is the tenant's /data,
on the experiment device. The client runs inside the tenant too (it reaches the server's unix socket under
every runtime, gVisor's included), so its CPU is part of the tenant's share. Parsers are pure.
"""
from __future__ import annotations

import re
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..failures import Failure
from ..paths import open_existing
from ..runtimes import RuntimeFailed


class DatabaseError(Failure):
    """A client's output without the figures it should hold."""


@dataclass
class ClientResult:
    """What the client reported: per transaction type its TPS and mean latency (ms), and TPS per second."""

    types: dict[str, dict[str, float]] = field(default_factory=dict)
    per_second: list[tuple[float, float]] = field(default_factory=list)  # (seconds since start, TPS)


class Database(ABC):
    name = ""
    ready_timeout_s = 90.0

    def __init__(self, scale):
        self.scale = scale  # spec.victim.OltpScale

    @abstractmethod
    def init(self) -> list[str]:
        """Create the data directory (a shell command)."""

    @abstractmethod
    def server(self) -> list[str]:
        """The server, in the foreground, logging to /data."""

    @abstractmethod
    def ping(self) -> list[str]: ...

    @abstractmethod
    def prepare(self) -> list[str]:
        """Load the benchmark's data."""

    @abstractmethod
    def client(self, clients: int, rate: float, seconds: float) -> list[str]:
        """The client for `seconds`; rate 0: as fast as it goes (the calibration)."""

    @abstractmethod
    def parse(self, out: str) -> ClientResult: ...

    @abstractmethod
    def shutdown(self) -> list[str]: ...

    log = "/data/server.log"
    caps: tuple[str, ...] = ()  # what the server needs beyond a container's default capabilities

    def start(self, tenants, tenant: str) -> None:
        """Init, start and wait for the server, then load the data; RuntimeFailed with the server's last
        log line if it does not come up."""
        tenants.run(tenant, ["sh", "-c", " ".join(self.init())], timeout=300, what=f"{self.name} init")
        self.proc = tenants.exec(tenant, ["sh", "-c", f"exec {' '.join(self.server())} >>{self.log} 2>&1"])
        deadline = time.monotonic() + self.ready_timeout_s
        while True:
            if tenants.run(tenant, self.ping(), timeout=30, check=False).returncode == 0:
                break
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeFailed(f"{self.name} did not start in {tenant}: {last_log_line(tenants.data[tenant])}")
            time.sleep(0.3)
        tenants.run(tenant, self.prepare(), timeout=1800, what=f"{self.name} prepare")

    def stop(self, tenants, tenant: str) -> None:
        """A clean shutdown, waited for."""
        tenants.run(tenant, self.shutdown(), timeout=120, what=f"{self.name} shutdown")
        self.proc.communicate(timeout=120)


def last_log_line(data: Path) -> str:
    """The server log's reason: its last FATAL or ERROR line, else its last line."""
    try:
        with open_existing(data / "server.log", errors="replace") as f:  # the container's: no link followed
            lines = f.read().strip().splitlines()
    except OSError:
        return "no server log"
    bad = [x for x in lines if "FATAL" in x or "ERROR" in x]
    return (bad or lines or ["empty server log"])[-1][:200]


def pg_bin(tool: str) -> str:
    """Debian keeps the server's tools in /usr/lib/postgresql/<version>/bin (the newest installed)."""
    found = sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{tool}"), key=lambda p: int(p.parts[-3]))
    return str(found[-1]) if found else tool


PG_SCRIPTS = ("tpcb-like", "select-only", "simple-update")  # pgbench's built-ins, equal weights
AS_POSTGRES = "setpriv --reuid=postgres --regid=postgres --init-groups"  # the server refuses to run as root


class PostgreSQL(Database):
    name = "postgresql"
    caps = ("CAP_CHOWN", "CAP_SETUID", "CAP_SETGID")  # chown its directories, setpriv to its own user
    socket = "/data/run"  # owned by the server's uid (it creates its lock file there)

    def init(self) -> list[str]:
        return [f"mkdir -p /data/pg {self.socket} && chown postgres:postgres /data/pg {self.socket} &&", AS_POSTGRES,
                pg_bin("initdb"),
                "-D /data/pg -A trust -U postgres >/data/init.log 2>&1"]

    def server(self) -> list[str]:
        return [AS_POSTGRES, pg_bin("postgres"), "-D /data/pg", f"-k {self.socket}", "-c listen_addresses=''",
                "-c max_connections=200"]

    def ping(self) -> list[str]:
        return ["pg_isready", "-q", "-h", self.socket, "-U", "postgres"]

    def prepare(self) -> list[str]:
        return ["pgbench", "-h", self.socket, "-U", "postgres", "-i", "-q", "-s", str(self.scale.pgbench_scale),
                "postgres"]

    def client(self, clients: int, rate: float, seconds: float) -> list[str]:
        argv = ["pgbench", "-h", self.socket, "-U", "postgres", "-n", "-c", str(clients),
                "-j", str(min(clients, 4)), "-T", str(max(1, round(seconds))), "-P", "1"]
        argv += [f"-b{s}@1" for s in PG_SCRIPTS]
        return argv + (["-R", f"{rate:.1f}"] if rate > 0 else []) + ["postgres"]

    def parse(self, out: str) -> ClientResult:
        return parse_pgbench(out)

    def shutdown(self) -> list[str]:
        return ["sh", "-c", f"{AS_POSTGRES} {pg_bin('pg_ctl')} -D /data/pg stop -m fast -w"]


class MariaDB(Database):
    name = "mariadb"
    socket = "/tmp/mariadb.sock"
    # gVisor offers neither io_uring nor Linux AIO to InnoDB: plain I/O threads, the same under every runtime
    common = ["--no-defaults", "--innodb-use-native-aio=0"]

    def init(self) -> list[str]:
        return ["mariadb-install-db", *self.common, "--datadir=/data/db", "--user=root",
                "--auth-root-authentication-method=normal", "--skip-test-db", ">/data/init.log 2>&1"]

    def server(self) -> list[str]:
        return ["mariadbd", *self.common, "--datadir=/data/db", "--user=root", f"--socket={self.socket}",
                "--skip-networking", "--innodb-buffer-pool-size=256M", "--max-connections=500"]

    def ping(self) -> list[str]:
        return ["mariadb-admin", "--no-defaults", f"--socket={self.socket}", "-uroot", "ping"]

    def sysbench(self) -> list[str]:
        return ["sysbench", "oltp_read_write", "--db-driver=mysql", f"--mysql-socket={self.socket}",
                "--mysql-user=root", "--mysql-db=sbtest", f"--tables={self.scale.sysbench_tables}",
                f"--table-size={self.scale.sysbench_table_size}"]

    def prepare(self) -> list[str]:
        return ["sh", "-c", f"mariadb --no-defaults --socket={self.socket} -uroot -e 'CREATE DATABASE sbtest' && "
                            f"{' '.join(self.sysbench())} prepare >/dev/null"]

    def client(self, clients: int, rate: float, seconds: float) -> list[str]:
        return [*self.sysbench(), f"--threads={clients}", f"--time={max(1, round(seconds))}", "--report-interval=1",
                f"--rate={round(rate)}", "run"]

    def parse(self, out: str) -> ClientResult:
        return parse_sysbench(out)

    def shutdown(self) -> list[str]:
        return ["mariadb-admin", "--no-defaults", f"--socket={self.socket}", "-uroot", "shutdown"]


DATABASES: dict[str, Callable[[Any], Database]] = {"postgresql": PostgreSQL, "mariadb": MariaDB}  # (its scale)


# ------------------------------------------------------------------ parsers (pure)
PG_SCRIPT = re.compile(r"^SQL script (\d+): <builtin: ([^>]+)>\n(.*?)(?=^SQL script|\Z)", re.M | re.S)
PG_PROGRESS = re.compile(r"^progress: ([\d.]+) s, ([\d.]+) tps", re.M)


def parse_pgbench(out: str) -> ClientResult:
    """pgbench with several -b scripts: per script its TPS and mean latency; -P 1's TPS per second."""
    res = ClientResult(per_second=[(float(t), float(v)) for t, v in PG_PROGRESS.findall(out)])
    for num, _, body in PG_SCRIPT.findall(out):
        i = int(num) - 1
        name = PG_SCRIPTS[i] if i < len(PG_SCRIPTS) else f"script{num}"
        tps = re.search(r"tps = ([\d.]+)", body)
        lat = re.search(r"latency average = ([\d.]+) ms", body)
        if tps:
            res.types[name] = {"tps": float(tps.group(1))}
            if lat:
                res.types[name]["lat_ms"] = float(lat.group(1))
    if not res.types:
        raise DatabaseError("pgbench printed no per-script results")
    return res


SB_PROGRESS = re.compile(r"^\[ *(\d+)s \] thds: \d+ tps: ([\d.]+) qps: [\d.]+ "
                         r"\(r/w/o: ([\d.]+)/([\d.]+)/([\d.]+)\)", re.M)


def parse_sysbench(out: str) -> ClientResult:
    """sysbench OLTP: transactions per second and mean latency; its read, write and other queries per second
    as types of their own (sysbench cannot tell transaction types apart: PDP 2015 §IV)."""
    tx = re.search(r"transactions:\s+\d+\s+\(([\d.]+) per sec", out)
    total = re.search(r"total time:\s+([\d.]+)s", out)
    lat = re.search(r"avg:\s+([\d.]+)", out)
    if not (tx and total):
        raise DatabaseError("sysbench printed no transaction rate")
    res = ClientResult(per_second=[(float(m[0]), float(m[1])) for m in SB_PROGRESS.findall(out)])
    res.types["oltp_read_write"] = {"tps": float(tx.group(1))}
    if lat:
        res.types["oltp_read_write"]["lat_ms"] = float(lat.group(1))
    for kind in ("read", "write", "other"):
        n = re.search(rf"^\s+{kind}:\s+(\d+)", out, re.M)
        if n:
            res.types[kind] = {"tps": int(n.group(1)) / float(total.group(1))}
    return res
