"""Fuzzed specs: every generated document either validates or is an exit-2 error of one line; never a
traceback, never a started study. 2,000 documents here (hypothesis), more with `python fuzz/specs.py`.

Each document goes through the command line as a user's would (`contend run SPEC --dry-run`, in process): the
spec's loading, the quick pass and repetitions where asked, and the host's preflight are all run; nothing is
started, so no root is needed."""
from __future__ import annotations

from pathlib import Path

from fuzz.specs import check_document, documents
from hypothesis import HealthCheck, given, settings

PRESETS = Path(__file__).parent.parent / "presets"


@settings(max_examples=2000, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(doc=documents())
def test_every_generated_spec_validates_or_is_one_line_exit_2(doc, tmp_path_factory):
    check_document(doc, tmp_path_factory.mktemp("fuzz"))


def test_the_fuzzer_makes_valid_specs_and_invalid_ones():
    """It is not only noise: it makes valid studies too (the 5,000-document run: 1,844 valid, 3,156 refused)."""
    import tempfile

    from hypothesis import find as hfind
    valid = hfind(documents(), lambda d: check_document(d, Path(tempfile.mkdtemp())) == 0,
                  settings=settings(max_examples=300, database=None))
    assert valid is not None
