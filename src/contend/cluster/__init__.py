"""The same study on many hosts: Kubernetes manifests and an Argo Workflow rendered from a spec (render),
checked against the pinned schemas (validate), and the trials' artifacts merged back into one results
directory (collect). Each pod runs `contend trial run`, the code path of a local trial."""
