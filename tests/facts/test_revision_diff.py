"""The fact page's word diff (facts/revision_diff.py): words, not characters; escaped."""

from __future__ import annotations

from facts.revision_diff import MAX_TOKENS, revision_text, word_diff


def test_a_changed_word_is_deleted_and_inserted_and_the_rest_stays():
    diff = word_diff("Ada prefers tea in the morning.", "Ada prefers tea in the evening.")
    assert diff.html == "Ada prefers tea in the <del>morning</del><ins>evening</ins>."
    assert (diff.added, diff.removed) == (1, 1)
    assert not diff.unchanged


def test_neighbouring_changes_read_as_one_change_not_word_by_word():
    diff = word_diff("a b c d", "x y z d")
    assert diff.html == "<del>a b c</del><ins>x y z</ins> d"
    assert (diff.added, diff.removed) == (3, 3)


def test_markup_in_either_version_is_escaped():
    diff = word_diff('say <b onclick="x">hi</b>', "say <script>alert(1)</script>")
    assert "<script" not in diff.html
    assert "<b " not in diff.html
    assert "&lt;" in diff.html
    assert diff.html.count("<ins>") == diff.html.count("</ins>")


def test_the_same_words_are_unchanged():
    diff = word_diff("Ada prefers tea", "Ada prefers tea")
    assert diff.unchanged
    assert diff.html == "Ada prefers tea"


def test_a_text_too_long_to_compare_word_by_word_is_not_compared():
    long = "word " * MAX_TOKENS
    diff = word_diff(long, long + "more")
    assert not diff.compared
    assert not diff.unchanged


def test_structured_content_is_compared_field_by_field_as_people_read_it():
    assert revision_text({"text": "Ada", "plan": "Pro", "seats": 5}) == "Ada\nplan: Pro\nseats: 5"
    assert revision_text("just text") == "just text"
    diff = word_diff(revision_text({"plan": "Pro"}), revision_text({"plan": "Team"}))
    assert diff.html == "plan: <del>Pro</del><ins>Team</ins>"
