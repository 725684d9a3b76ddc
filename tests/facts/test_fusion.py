"""`fuse_by_rank` is the seed's `fuseByRank`: reciprocal rank fusion with k = 60, ties in the
order items were first seen, the first leg's copy kept."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from retrieval.fusion import RRF_K, fuse_by_rank


def key(item: dict) -> str:
    return item["id"]


def test_one_leg_keeps_its_order_and_scores_by_reciprocal_rank() -> None:
    # given one ranked leg
    leg = [{"id": "a"}, {"id": "b"}, {"id": "c"}]
    # when it is fused alone
    fused = fuse_by_rank({"keyword": leg}, key)
    # then the order stands and each score is 1 / (60 + rank)
    assert [f.item["id"] for f in fused] == ["a", "b", "c"]
    assert [f.score for f in fused] == [1 / 61, 1 / 62, 1 / 63]
    assert [f.ranks for f in fused] == [{"keyword": 1}, {"keyword": 2}, {"keyword": 3}]
    assert RRF_K == 60


def test_agreement_between_legs_beats_one_legs_first_place() -> None:
    # given x first in one leg only, and y second in both
    legs = {"keyword": [{"id": "x"}, {"id": "y"}], "semantic": [{"id": "z"}, {"id": "y"}]}
    # when fused
    fused = fuse_by_rank(legs, key)
    # then y wins with both ranks, and x and z follow in first-seen order
    assert [f.item["id"] for f in fused] == ["y", "x", "z"]
    assert fused[0].ranks == {"keyword": 2, "semantic": 2}
    assert fused[0].score == 1 / 62 + 1 / 62


def test_ties_keep_the_first_legs_order() -> None:
    # given two legs whose items tie rank for rank
    legs = {"keyword": [{"id": "k1"}, {"id": "k2"}], "semantic": [{"id": "s1"}, {"id": "s2"}]}
    # when fused
    fused = fuse_by_rank(legs, key)
    # then at equal scores the first leg's item comes first
    assert [f.item["id"] for f in fused] == ["k1", "s1", "k2", "s2"]


def test_the_first_legs_copy_of_an_item_is_kept_and_a_repeat_counts_once() -> None:
    # given the same item in both legs with different payloads, and a repeat in the second leg
    legs = {
        "keyword": [{"id": "a", "from": "keyword"}],
        "semantic": [{"id": "a", "from": "semantic"}, {"id": "a", "from": "again"}],
    }
    # when fused
    [only] = fuse_by_rank(legs, key)
    # then the keyword copy is kept, and the repeat adds nothing
    assert only.item["from"] == "keyword"
    assert only.ranks == {"keyword": 1, "semantic": 1}
    assert only.score == 2 / 61


def test_a_custom_k_changes_the_scores() -> None:
    fused = fuse_by_rank({"a": [{"id": "x"}]}, key, k=1)
    assert fused[0].score == 1 / 2


leg_items = st.lists(st.sampled_from("abcdefgh"), max_size=8)


@settings(max_examples=500, deadline=None)
@given(first=leg_items, second=leg_items)
def test_fusion_matches_a_literal_reading_of_the_seed(first: list[str], second: list[str]) -> None:
    # given two legs of ids (repeats allowed)
    legs = {"keyword": [{"id": i} for i in first], "semantic": [{"id": i} for i in second]}
    # when fused
    fused = fuse_by_rank(legs, key)
    # then each item's score is the sum over legs of 1 / (60 + its first rank there) ...
    expected: dict[str, float] = {}
    order: list[str] = []
    for leg in (first, second):
        firsts: dict[str, int] = {}
        for rank, i in enumerate(leg, start=1):
            firsts.setdefault(i, rank)
        for i, rank in firsts.items():
            if i not in expected:
                order.append(i)
                expected[i] = 0.0
            expected[i] += 1 / (60 + rank)
    assert {f.item["id"]: f.score for f in fused} == expected
    # ... sorted best first, ties in first-seen order
    assert [f.item["id"] for f in fused] == sorted(
        order, key=lambda i: (-expected[i], order.index(i))
    )
