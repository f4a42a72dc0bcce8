"""network: the network tenants' namespaces, veth links to a sink and tbf shaping (link.py)."""
from .link import (
    FIRST_PORT,
    NETNS_DIR,
    SINK_IP,
    SUBNET,
    Link,
    NetworkError,
    Port,
    counter,
    remove_netns,
    tbf,
)

__all__ = ["counter", "FIRST_PORT", "Link", "NETNS_DIR", "NetworkError", "Port", "remove_netns", "SINK_IP", "SUBNET",
           "tbf"]
