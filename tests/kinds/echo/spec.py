"""The echo study's spec (kind: echo)."""
from __future__ import annotations

from typing import Literal

from pydantic import Field

from contend.spec.base import Runtimes, StudyKind


class EchoSpec(StudyKind):
    kind: Literal["echo"]
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    description: str = ""
    runtimes: Runtimes
    repetitions: int = Field(default=2, gt=0, le=100)
    words: int = Field(default=3, gt=0, le=1000)  # what echo says: this many words

    def quickened(self) -> "EchoSpec":
        return self.quick_with(repetitions=1)
