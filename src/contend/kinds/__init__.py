"""The kinds of study contend runs, registered once: a spec's `kind` → its Study (which carries its spec model,
its plan and trials, and its report). Adding a kind is its own package and one line in registry.py
(docs/architecture.md).

The top of the stack: only the CLI and what fans a study out (contend trial, contend cluster) import this.
"""
from .registry import KINDS, MODELS, directions, headlines, kind_of, load, open_store, parse, refresh, study_for

__all__ = ["KINDS", "MODELS", "directions", "headlines", "kind_of", "load", "open_store", "parse", "refresh",
           "study_for"]
