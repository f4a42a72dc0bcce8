"""What fails a trial, in one place: contend's own failures (a runtime's, a tool's, a link's, a database
client's, a benchmark's, a guard target's) share one base class, and TRIAL_FAILURES is the one list of
exceptions that make a trial "failed" with a reason rather than end the whole study. Anything else (a
RuntimeError, a KeyError: a bug of contend's) ends the study with its traceback, the finished trials kept."""
from __future__ import annotations

import subprocess


class Failure(Exception):
    """A failure of something contend drives; str() is the one line a user reads. `prefix` names the part
    of the trial it came from where the message alone would not say."""

    prefix = ""


# a cgroup or data-directory write (OSError), a reading that makes no sense (ValueError), a command that
# timed out or could not run (SubprocessError)
TRIAL_FAILURES: tuple[type[BaseException], ...] = (Failure, OSError, ValueError, subprocess.SubprocessError)


def reason(e: BaseException) -> str:
    """The reason a trial records for `e`: contend's own failures say it themselves; the rest by type."""
    if isinstance(e, Failure):
        return f"{e.prefix}{e}"
    return f"{type(e).__name__}: {e}"
