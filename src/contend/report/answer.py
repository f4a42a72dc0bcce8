"""The answer first: one line per cell that says, in words and one number, what the study found (issue 97), for
the terminal, report.html's first screen and `--json`. Pure.

Every kind's answer is one `Answer`: what was asked about (runtime, resource, scenario, ...), a word (isolated /
NOT isolated / unsure, or a kind's own: found, MISSED, quiet, FALSE BLAME, fair), its tone (good, bad, unsure),
the number it rests on, and at most one short phrase of why it is less than sure. The rule that turns a figure
with its interval into a word is `judge`, the same for every kind that measures what a victim kept:
- isolated: the victim kept at least RETAINED of its own level (the mean), and the interval's low end is at least
  SURE: the change-point band of the isolation metrics (5 % of the baseline: metrics/isolation.py) held, sure;
- NOT isolated: even the interval's high end is below RETAINED;
- unsure: the interval straddles the line (more repetitions decide it), or there is no figure.
With one repetition there is no interval: the mean alone decides, and the answer says so.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

RETAINED = 0.95  # 1 − the isolation metrics' band (threshold 0.05): within 5 % of its own level
SURE = 0.90  # the lowest an isolated cell's interval may reach

GOOD, BAD, UNSURE = "good", "bad", "unsure"
ISOLATED, NOT_ISOLATED, NOT_SURE = "isolated", "NOT isolated", "unsure"


@dataclass(frozen=True)
class Answer:
    subject: tuple[str, ...]  # what was asked about, e.g. ("runc", "cpu", "escape")
    word: str
    tone: str  # GOOD, BAD or UNSURE
    number: str  # the figure it rests on, e.g. "I_intFree 0.99 ± 0.02, n=3"
    why: str = ""  # one short phrase: why it is less than sure, or what to know beside it
    card: tuple[str, ...] = ()  # the report's summary card it goes on (runtime × resource); () = subject[:-1]
    curve: tuple[tuple[float, float], ...] = field(default=(), compare=False)  # a sparkline's points, if any

    def line(self) -> str:
        return f"{'  '.join(self.subject)}  {self.word} ({self.number}{'; ' + self.why if self.why else ''})"

    def as_json(self) -> dict:
        return {"subject": list(self.subject), "answer": self.word, "tone": self.tone, "number": self.number,
                "why": self.why}


def finite(x: object) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)


def judge(mean: float, low: float = math.nan, high: float = math.nan, n: int = 0, retained: float = RETAINED,
          sure: float = SURE) -> tuple[str, str, str]:
    """(word, tone, why) for a share of its own level a victim kept, with its 95 % interval over n."""
    if not finite(mean):
        return NOT_SURE, UNSURE, "nothing measured"
    if n < 2 or not (finite(low) and finite(high)):
        word, tone = (ISOLATED, GOOD) if mean >= retained else (NOT_ISOLATED, BAD)
        return word, tone, "one repetition: no interval" if n < 2 else "no interval"
    if mean >= retained and low >= sure:
        return ISOLATED, GOOD, ""
    if high < retained:
        return NOT_ISOLATED, BAD, ""
    return NOT_SURE, UNSURE, f"its interval {low:.2f}-{high:.2f} spans {retained:g}: more repetitions decide it"


def interval(r: dict | None, places: int = 2) -> str:
    """A metrics row as `0.99 ± 0.02, n=3` ([low, high] where clipped; the mean alone for n < 2)."""
    if r is None or not finite(r.get("value")):
        return "n/a"
    v, lo, hi, n = r["value"], r.get("ci_low", math.nan), r.get("ci_high", math.nan), r.get("n", 0)
    if n >= 2 and finite(lo) and finite(hi):
        below, above = round(v - lo, places), round(hi - v, places)
        spread = f" ± {below:.{places}f}" if below == above else f" [{lo:.{places}f}, {hi:.{places}f}]"
    else:
        spread = ""
    return f"{v:.{places}f}{spread}, n={n}"


def retained_answer(subject: tuple[str, ...], name: str, r: dict | None, why: str = "",
                    card: tuple[str, ...] = (), curve: Sequence[tuple[float, float]] = ()) -> Answer:
    """The answer of a share kept (metrics row `r`, 1 = all of it), named `name` in its number."""
    if r is None:
        word, tone, said = judge(math.nan)
    else:
        word, tone, said = judge(r["value"], r.get("ci_low", math.nan), r.get("ci_high", math.nan), r.get("n", 0))
    return Answer(subject, word, tone, f"{name} {interval(r)}", "; ".join(x for x in (said, why) if x), card,
                  tuple(curve))


def as_kept(r: dict | None, percent: bool = True) -> dict | None:
    """A loss row (D, a drop: % of the base, lower is better) as the share kept: 1 − loss (its interval turned)."""
    if r is None or not finite(r.get("value")):
        return None
    k = 100.0 if percent else 1.0
    return {**r, "value": 1 - r["value"] / k, "ci_low": 1 - r.get("ci_high", math.nan) / k,
            "ci_high": 1 - r.get("ci_low", math.nan) / k}


def counts(answers: Iterable[Answer]) -> str:
    """`4 answers: 2 isolated, 1 NOT isolated, 1 unsure`, in the order words first appear."""
    got: dict[str, int] = {}
    for a in answers:
        got[a.word] = got.get(a.word, 0) + 1
    return f"{sum(got.values())} answers: " + ", ".join(f"{n} {w}" for w, n in got.items())


SPARK_W, SPARK_H = 120, 34  # a sparkline's box, px; y from 0 to SPARK_TOP of the victim's own level
SPARK_TOP = 1.2


def spark_points(curve: Sequence[tuple[float, float]]) -> str:
    """An SVG polyline's points for a curve (x scaled to the box, y from 0 to SPARK_TOP, clipped)."""
    if len(curve) < 2:
        return ""
    x0, x1 = min(x for x, _ in curve), max(x for x, _ in curve)
    span = (x1 - x0) or 1.0

    def y(v: float) -> float:
        return SPARK_H * (1 - min(max(v, 0.0), SPARK_TOP) / SPARK_TOP)
    return " ".join(f"{SPARK_W * (x - x0) / span:.1f},{y(v):.1f}" for x, v in curve)


def cards(answers: Sequence[Answer]) -> list[dict]:
    """The report's first screen: a card per runtime × resource (an answer's `card`, or its subject but the
    last), each with its answers (the rest of the subject as the line's label, the word, the number, why, and the
    sparkline's points and the y of the victim's own level)."""
    out: dict[tuple, dict] = {}
    for a in answers:
        key = a.card or a.subject[:-1] or a.subject
        c = out.setdefault(key, {"title": " · ".join(key), "rows": []})
        label = " · ".join(s for s in a.subject if s not in key) or " · ".join(a.subject)
        c["rows"].append({"label": label, "word": a.word, "tone": a.tone, "number": a.number, "why": a.why,
                          "spark": spark_points(a.curve), "level_y": f"{SPARK_H * (1 - 1 / SPARK_TOP):.1f}"})
    return list(out.values())
