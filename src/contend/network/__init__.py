"""network: the network tenants' namespaces, veth links to a sink and tbf shaping (link.py); a container's
sending shaped from the host side of its veth (shape.py: contend protect's network actuator)."""
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
from .shape import IFB_NAME, ShapeError, peers, shape, shaped, unshape

__all__ = ["counter", "FIRST_PORT", "Link", "NETNS_DIR", "NetworkError", "Port", "remove_netns", "SINK_IP", "SUBNET",
           "tbf", "IFB_NAME", "ShapeError", "peers", "shape", "shaped", "unshape"]
