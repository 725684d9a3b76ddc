"""How the keyword leg reads a reader's text (`retrieval.fulltext.KeywordQuery.parse`)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from retrieval.fulltext import MAX_TERMS, KeywordQuery, keyword_matches


def test_plain_words_are_optional_terms_lowercased_once_each() -> None:
    query = KeywordQuery.parse("When did Melanie paint a sunrise? melanie")
    assert query.words == ("when", "did", "melanie", "paint", "a", "sunrise?")
    assert query.phrases == ()


def test_quotes_make_required_phrases_and_minus_excludes() -> None:
    query = KeywordQuery.parse('morning "green tea" -decaf -"black coffee" tea-time')
    assert query.words == ("morning", "tea-time")
    assert query.phrases == ("green tea",)
    assert query.excluded_words == ("decaf",)
    assert query.excluded_phrases == ("black coffee",)


def test_or_is_a_no_op_and_an_unclosed_quote_runs_to_the_end() -> None:
    query = KeywordQuery.parse('coffee or tea OR "green tea')
    assert query.words == ("coffee", "tea")
    assert query.phrases == ("green tea",)


def test_nothing_to_search_with_has_no_match() -> None:
    assert KeywordQuery.parse('  "" - ').match() is None


def test_a_long_text_counts_its_first_words_only() -> None:
    query = KeywordQuery.parse(" ".join(f"w{i}" for i in range(100)))
    assert len(query.words) == MAX_TERMS
    assert query.words[0] == "w0"


# ---- the builder against the database, fuzzed -------------------------------------------------

# What readers type: words, stop words, operators, quotes, punctuation, tsquery syntax and
# characters outside ASCII (but no NUL or lone surrogate, which the API refuses where they enter)
_PIECES = st.sampled_from(
    [
        "tea",
        "Tea",
        "teas",
        "the",
        "of",
        "or",
        "OR",
        "and",
        "-",
        "--",
        '"',
        '""',
        "'",
        "&",
        "|",
        "!",
        "<->",
        ":*",
        "(",
        ")",
        "\\",
        "?",
        "ümlaut",
        "日本",
        "🙂",
        "green tea",
        "-tea",
        '"tea',
    ]
)
_TEXTS = st.lists(
    st.one_of(_PIECES, st.text(st.characters(exclude_categories=("Cs", "Cc")), max_size=6)),
    max_size=8,
).map(" ".join)


@pytest.mark.django_db
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_TEXTS)
def test_any_text_is_a_keyword_query_for_facts_and_recall_alike(text: str) -> None:
    # given: the facts' and the messages' search columns, when any text is their keyword query
    from facts.models import Revision
    from recall.models import Message

    for model in (Revision, Message):
        rows = keyword_matches(
            model.objects.all(), "search_vector" if model is Revision else "search", text
        )
        # then: it compiles, runs, and orders by its score without an error
        list(rows.order_by("-score")[:5])
