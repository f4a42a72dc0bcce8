"""Manifests checked against pinned schemas, strictly (an unknown field is an error, as the API server's
field validation would make it): Kubernetes kinds against the OpenAPI schema of Kubernetes 1.28 (what the
paper's k3s v1.28.4 serves; the JSON schemas kubernetes-validate ships), or of 1.33 for a document that uses a
field GA only there (the watch's recursively read-only cgroup mount); Argo Workflows against the JSON schema of
Argo Workflows v3.5.0 (the paper's), vendored from its Go module (api/jsonschema/schema.json).
"""
from __future__ import annotations

import copy
import gzip
import json
from functools import lru_cache
from importlib.resources import files
from pathlib import Path

import jsonschema
import kubernetes_validate
import yaml

from ..spec import yaml_problem

KUBERNETES = "1.28.0"
# recursiveReadOnly on a volume mount: alpha in 1.30, GA in 1.33 (KEP-3857). Without it a read-only cgroupfs mount
# leaves the v1 controllers' own mounts below it writable.
RECURSIVE_READ_ONLY = "1.33.0"
KUBERNETES_SAID = f"{KUBERNETES} ({RECURSIVE_READ_ONLY} where a mount is recursively read-only)"
ARGO = "v3.5.0"
ARGO_SCHEMA = f"argo-workflows-{ARGO}.json.gz"
ARGO_KINDS = {"Workflow", "WorkflowTemplate", "ClusterWorkflowTemplate", "CronWorkflow"}


@lru_cache(maxsize=1)
def argo_definitions() -> dict:
    """Argo's definitions, made strict: every object with named properties takes no others."""
    doc = json.loads(gzip.decompress((files("contend.cluster") / "schemas" / ARGO_SCHEMA).read_bytes()))
    defs = copy.deepcopy(doc["definitions"])
    for d in defs.values():
        if "properties" in d and "additionalProperties" not in d:
            d["additionalProperties"] = False
    return defs


def problem(doc: dict) -> str | None:
    """What is wrong with one manifest document (None: valid)."""
    if not isinstance(doc, dict) or "apiVersion" not in doc or "kind" not in doc:
        return "not a Kubernetes object (apiVersion and kind are required)"
    if doc["apiVersion"].startswith("argoproj.io/") and doc["kind"] in ARGO_KINDS:
        schema = {"$ref": f"#/definitions/io.argoproj.workflow.v1alpha1.{doc['kind']}",
                  "definitions": argo_definitions()}
        err = jsonschema.exceptions.best_match(jsonschema.Draft7Validator(schema).iter_errors(doc))
        return None if err is None else f"{_where(err.absolute_path)}: {err.message} (Argo Workflows {ARGO})"
    version = kubernetes_for(doc)
    try:
        kubernetes_validate.validate(doc, version, strict=True)
    except kubernetes_validate.SchemaNotFoundError:
        return f"{doc['apiVersion']} {doc['kind']}: not a kind of Kubernetes {version}"
    except kubernetes_validate.ValidationError as e:
        return f"{_where(e.absolute_path)}: {e.message} (Kubernetes {version})"
    return None


def kubernetes_for(doc: dict) -> str:
    """The oldest Kubernetes a document needs: 1.28 unless it mounts a volume recursively read-only."""
    return RECURSIVE_READ_ONLY if "recursiveReadOnly" in _keys(doc) else KUBERNETES


def _keys(node) -> set[str]:
    if isinstance(node, dict):
        return set(node).union(*map(_keys, node.values()))
    if isinstance(node, list):
        return set().union(*map(_keys, node))
    return set()


def _where(path) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top)"


def validate_file(path: Path) -> list[str]:
    """One line per invalid document: 'file: document N (Kind name): where: what'."""
    try:
        docs = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
    except yaml.YAMLError as e:
        return [f"{path}: {yaml_problem(e)}"]
    out = []
    for i, doc in enumerate(docs, 1):
        why = problem(doc)
        if why:
            meta = doc.get("metadata", {}) if isinstance(doc, dict) else {}
            name = meta.get("name") or meta.get("generateName") or "?"
            out.append(f"{path}: document {i} ({doc.get('kind', '?') if isinstance(doc, dict) else '?'} {name}): {why}")
    return out


def validate_dir(directory: Path) -> tuple[int, list[str]]:
    """(documents checked, problems) of every *.yaml in a rendered directory."""
    n, problems = 0, []
    for p in sorted(directory.glob("*.yaml")):
        try:
            n += sum(1 for d in yaml.safe_load_all(p.read_text()) if d is not None)
        except yaml.YAMLError:
            pass
        problems += validate_file(p)
    return n, problems
