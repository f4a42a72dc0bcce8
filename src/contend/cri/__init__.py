"""Kubernetes identity through the Container Runtime Interface (what a kubelet talks to): contend watch names
a pod's cgroup `namespace/pod/container` by asking the node's runtime (containerd, CRI-O) over its socket.
`client` reads; `node` starts a containerd of contend's own with its CRI plugin, for tests and benches."""
