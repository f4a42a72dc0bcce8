"""report.html of any results directory: the template rendered with the spec's name and description, the
host's facts and the figures embedded (the page opens offline)."""
from __future__ import annotations

import base64
import json
import time
from pathlib import Path

import jinja2
import yaml


def write_page(directory: Path, template: str, embedded: list[dict], **context) -> Path:
    """embedded: the figures, dicts with a "png" path each; they get their "data" (base64) here."""
    for f in embedded:
        f["data"] = base64.b64encode(f["png"].read_bytes()).decode()
    env = jinja2.Environment(loader=jinja2.PackageLoader("contend.report", "templates"), autoescape=True)
    spec = read_yaml(directory / "spec.yaml")
    html = env.get_template(template).render(
        name=spec.get("name", directory.name), description=spec.get("description", ""),
        host=read_json(directory / "host.json"), written=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        **context)
    out = directory / "report.html"
    out.write_text(html)
    return out


def read_yaml(p: Path) -> dict:
    try:
        return yaml.safe_load(p.read_text()) or {}
    except (OSError, yaml.YAMLError):
        return {}


def read_json(p: Path) -> dict:
    try:
        return json.loads(p.read_text())
    except (OSError, json.JSONDecodeError):
        return {"host": {}, "cgroups": {}}
