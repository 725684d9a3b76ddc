"""How the keyword leg reads a reader's text (`kindmem.fulltext.KeywordQuery.parse`)."""

from __future__ import annotations

from kindmem.fulltext import MAX_TERMS, KeywordQuery


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
