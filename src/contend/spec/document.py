"""A spec as a document: parsed from YAML into the model of its kind, each error one line naming file, field
path and rule; written back with every value it resolved to; its digest."""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Mapping

import yaml
from pydantic import ValidationError

from .base import SpecError, StudyKind

RULES = {
    "greater_than": "must be > {gt}",
    "greater_than_equal": "must be >= {ge}",
    "less_than": "must be < {lt}",
    "less_than_equal": "must be <= {le}",
    "extra_forbidden": "unknown key",
    "missing": "required",
    "too_short": "must have at least {min_length} item(s)",
    "string_pattern_mismatch": "must match {pattern}",
    "literal_error": "must be one of {expected}",
}


def _path(loc: tuple) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z0-9_-]+", str(part)):
            out += ("." if out else "") + str(part)
        else:  # a key with spaces, dots, newlines…: quoted, so the line stays one line and unambiguous
            out += f"[{str(part)!r}]"
    return out


def format_error(source: str, e: ValidationError) -> str:
    return _format_error(source, e).replace("\n", "\\n")


def _format_error(source: str, e: ValidationError) -> str:
    err = e.errors(include_url=False)[0]
    rule = RULES.get(err["type"])
    msg = rule.format(**err.get("ctx", {})) if rule else err["msg"]
    if err["type"] == "value_error":
        msg = str(err["ctx"]["error"]) if "ctx" in err else err["msg"].removeprefix("Value error, ")
        if msg.startswith("["):  # an index in a list validator's message belongs to the path
            idx, _, msg = msg.partition("] ")
            return f"{source}: {_path(err['loc'])}{idx}]: {msg}"
    path = _path(err["loc"])
    more = f" (and {len(e.errors()) - 1} more)" if len(e.errors()) > 1 else ""
    return f"{source}: {path or '(top)'}: {msg[0].lower() + msg[1:] if msg else msg}{more}"



def yaml_problem(e: yaml.YAMLError) -> str:
    """A YAML error in one line: 'line N: not valid YAML: what' (PyYAML's own text spans several)."""
    mark = getattr(e, "problem_mark", None)
    what = getattr(e, "problem", None) or getattr(e, "reason", None) or str(e).splitlines()[0]
    return f"{f'line {mark.line + 1}: ' if mark else ''}not valid YAML: {' '.join(str(what).split())}"


def parse_as(models: Mapping[str, type[StudyKind]], text: str, source: str = "spec") -> StudyKind:
    """The spec in `text` as the model of its kind (no `kind`: an isolation study); SpecError otherwise."""
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise SpecError(f"{source}: {yaml_problem(e)}") from None
    if not isinstance(doc, dict):
        raise SpecError(f"{source}: (top): must be a mapping of keys, got {type(doc).__name__}")
    kind = doc.get("kind", "isolation")
    model = models.get(kind) if isinstance(kind, str) else None
    if model is None:
        raise SpecError(f"{source}: kind: must be one of {', '.join(repr(k) for k in models)}, got {kind!r}")
    try:
        return model.model_validate(doc)
    except ValidationError as e:
        raise SpecError(format_error(source, e)) from None


def load_as(models: Mapping[str, type[StudyKind]], path: str | Path) -> StudyKind:
    p = Path(path)
    try:
        text = p.read_text()
    except FileNotFoundError:
        raise SpecError(f"{p}: no such file") from None
    except (IsADirectoryError, PermissionError, UnicodeDecodeError) as e:
        raise SpecError(f"{p}: cannot read: {e.__class__.__name__}") from None
    return parse_as(models, text, str(p))


def dump(spec: StudyKind) -> str:
    """The spec as every value it resolved to (quick pass and repetitions applied): what spec.yaml of a
    results directory holds, and what a cluster's pods are given; load() of it gives the same study."""
    return yaml.safe_dump(spec.resolved(), sort_keys=False)


def digest(spec: StudyKind) -> str:
    """Which study this is: two specs with the same digest plan the same trials with the same settings."""
    return hashlib.sha256(json.dumps(spec.resolved(), sort_keys=True, default=str).encode()).hexdigest()[:16]
