"""The policies' regression suite (guard/scenes.py): pure, no root. The scorer against answers worked by hand, and
contend's policy held to every scene's floor through the public API alone (scores, never the policy's state)."""
from __future__ import annotations

from dataclasses import replace

import pytest

from contend.guard.policy import NoPolicy, StaticPolicy, make
from contend.guard.scenes import FLOORS, SCENES, VICTIM, C, Scene, Score, burst, score, short_of
from contend.guard.simulate import simulate

STEADY = next(s for s in SCENES if s.name == "steady")


def test_without_a_policy_the_disk_shares_in_proportion_to_the_asks_and_the_neighbour_takes_the_whole_spare():
    """0.2 C beside 2 C on a disk of C: the victim gets C × 0.2 / 2.2, 0.4545 of its ask, every period from the
    burst; the neighbour gets all the victim leaves; the victim is never protected again."""
    s = score(NoPolicy(), STEADY)
    assert s.isolation == pytest.approx(1 / 2.2) and s.p05 == pytest.approx(1 / 2.2)
    assert s.spare == pytest.approx(1.0) and s.reaction is None


def test_an_even_split_protects_a_small_victim_at_once_and_wastes_what_it_leaves():
    """Static told C caps each at C/2: the victim gets its 0.2 C from the burst's first period (reaction 0), the
    neighbour 0.5 C of the 0.8 C the victim leaves (spare 0.625)."""
    s = score(StaticPolicy(), STEADY)
    assert (s.isolation, s.p05, s.reaction) == (pytest.approx(1.0), pytest.approx(1.0), 0)
    assert s.spare == pytest.approx(0.5 / 0.8, abs=0.002)


def test_a_fixed_depth_writer_slows_with_the_queue_and_collapses_beside_an_unbounded_neighbour():
    """simulate's depth: alone on a disk with room, such a writer gets its ask; from the period after the disk
    saturates, its ask is scaled by the calm latency over the saturated one (10 × asked / delivered)."""
    alone = simulate(NoPolicy(), lambda k: {"w": 0.5 * C}, 5, C, lambda k: C, queue=True, depth=frozenset({"w"}))
    assert [g["w"] for g, _, _ in alone] == [pytest.approx(0.5 * C)] * 5
    lat_bound = next(s for s in SCENES if s.name == "latency-bound")
    assert score(NoPolicy(), lat_bound).isolation < 0.05 < score(NoPolicy(), STEADY).isolation / 5


def test_a_reaction_counts_the_periods_until_the_victim_is_whole_five_in_a_row():
    """A victim squeezed for the first 7 periods after onset, whole from then: reaction 7; the 0.95 level is
    inclusive."""
    class LateStatic(StaticPolicy):
        def decide(self, inp):
            d = super().decide(inp)
            if len(inp.targets[0].usage) < 20 + 7:
                return replace(d, caps={n: None for n in d.caps})
            return d
    assert score(LateStatic(), STEADY).reaction == 7


def test_a_score_below_its_floor_is_said_figure_by_figure():
    floor = Score(0.99, 0.95, 2, 0.9)
    assert short_of(Score(1.0, 0.96, 0, 0.95), floor) == []
    assert short_of(Score(0.9, 0.96, None, 0.5), floor) == ["isolation 0.900 < 0.990", "spare 0.500 < 0.900",
                                                              "reaction None > 2 periods"]
    assert short_of(Score(0.9, 0.5, None, 0.1), Score(0.8, 0.4, None, 0.0)) == []  # no reaction asked


def test_every_scene_has_a_floor_and_a_victim():
    assert {s.name for s in SCENES} == set(FLOORS)
    assert all(VICTIM in s.demand(0) and len(s.demand(s.onset)) >= 2 for s in SCENES)


@pytest.mark.parametrize("scene", SCENES, ids=lambda s: s.name)
def test_contend_holds_every_scene_to_its_floor(scene: Scene):
    """The suite bench/policy_scenes.py prints, held: contend's default policy at or above each scene's floor."""
    assert short_of(score(make("contend"), scene), FLOORS[scene.name]) == [], scene.about


def test_a_scene_not_in_the_suite_a_victim_beside_three_neighbours_bursting_in_turn():
    """Beyond the suite's scenes: three neighbours joining one by one at periods 20, 60 and 100, told nothing. The
    victim stays whole after a reaction of a few periods, and the neighbours get most of the spare."""
    def demand(k):
        return {VICTIM: 0.15 * C, **{f"n{i}": (1.2 if k >= 20 + 40 * i else 0.05) * C for i in range(3)}}
    s = score(make("contend"), Scene("three", "", demand, told=float("inf"), periods=300))
    assert s.isolation >= 0.98 and s.p05 >= 0.95 and s.reaction is not None and s.reaction <= 5, s
    assert s.spare >= 0.85, s


def test_burst_builds_the_suites_two_tenant_scene():
    d = burst(0.3, 1.5, onset=10)
    assert d(9) == {VICTIM: 0.3 * C, "neighbour": 0.3 * C} and d(10) == {VICTIM: 0.3 * C, "neighbour": 1.5 * C}
