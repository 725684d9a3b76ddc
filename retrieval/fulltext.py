"""The keyword leg's query: a reader's text as PostgreSQL full-text queries, with OR semantics.

Agents ask questions ("When did Melanie paint a sunrise?"), and the words of a question are
rarely all in one memory: the person's name is not in their own turn, "when" is in none.
`websearch_to_tsquery` ANDs every word, so such a question used to find nothing (issue 16).
Here every plain word is optional and a row matches if it has any of them; the ranking (see
`KeywordQuery.rank`) then rewards the rows that cover more of the query, rarer words counting
more. Stop words and stemming are the text search configuration's (`TEXT_CONFIG`, the one the
search columns are built with), applied by PostgreSQL to each word.

The rest of websearch syntax keeps its meaning:

- `"a quoted phrase"` must match, as a phrase (`phraseto_tsquery`: the words in that order,
  adjacent); a quoted single word must be present. When the query has quoted parts, they alone
  decide what matches and the plain words only rank.
- `-word` and `-"a phrase"` exclude the rows that match them.
- `or` is a no-op (every plain word is already optional).

A query of stop words only ("who is it?") has no lexeme left: it matches nothing and the
keyword leg is empty (hybrid then answers from its semantic leg), never an error, since a
question is valid input even when its words are not searchable.

Shared by fact search (`facts/search.py`) and recall (`recall/search.py`); each applies its own
guard in the same query, before its LIMIT.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import reduce
from operator import and_, or_
from typing import Any

from django.contrib.postgres.expressions import ArraySubquery
from django.contrib.postgres.search import SearchQuery, SearchQueryCombinable
from django.db.models import (
    Avg,
    BooleanField,
    Case,
    Count,
    Expression,
    F,
    FloatField,
    Func,
    Q,
    QuerySet,
    Sum,
    Value,
    When,
    Window,
)
from django.db.models.functions import Cast, Ln

# The text search configuration of every search column (facts/models.py, recall/models.py) and
# of every query: stemming and stop words must be the same on both sides.
TEXT_CONFIG = "english"
# Distinct plain words that count, in order of appearance; past this a query is a document, not
# a question, and each word adds a term to every matching row's score.
MAX_TERMS = 32
# The most rows one term of a query brings to the ranking (see `KeywordQuery.candidates`).
CANDIDATES_PER_TERM = 200
# Okapi BM25's saturation and length normalisation, the textbook values.
BM25_K1 = 1.2
BM25_B = 0.75

# A quoted phrase (closed or running to the end), or a run of non-space characters; either may
# carry a leading `-`.
_TOKEN = re.compile(r'(-?)"([^"]*)(?:"|$)|(-?)([^\s"]+)')


@dataclass(frozen=True)
class KeywordQuery:
    """A reader's text, parsed: optional words, required phrases, excluded words and phrases."""

    words: tuple[str, ...] = ()
    phrases: tuple[str, ...] = ()
    excluded_words: tuple[str, ...] = ()
    excluded_phrases: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str) -> KeywordQuery:
        words: dict[str, None] = {}
        phrases: dict[str, None] = {}
        excluded_words: dict[str, None] = {}
        excluded_phrases: dict[str, None] = {}
        for match in _TOKEN.finditer(text):
            negated_phrase, phrase, negated_word, word = match.groups()
            if phrase is not None:
                if phrase.strip():
                    (excluded_phrases if negated_phrase else phrases)[phrase.strip()] = None
            elif not word or not word.strip("-"):
                continue  # a lone "-": nothing to search for
            elif negated_word:
                excluded_words[word.lower()] = None
            elif word.lower() != "or":
                words[word.lower()] = None
        return cls(
            words=tuple(words)[:MAX_TERMS],
            phrases=tuple(phrases),
            excluded_words=tuple(excluded_words),
            excluded_phrases=tuple(excluded_phrases),
        )

    def _terms(self) -> list[SearchQuery]:
        return [SearchQuery(w, config=TEXT_CONFIG, search_type="plain") for w in self.words]

    def _phrases(self) -> list[SearchQuery]:
        return [SearchQuery(p, config=TEXT_CONFIG, search_type="phrase") for p in self.phrases]

    def match(self) -> SearchQueryCombinable | None:
        """The tsquery a row must satisfy: the phrases if any, else any word; minus the
        exclusions. None when the text has nothing to search with."""
        excluded = [
            ~SearchQuery(w, config=TEXT_CONFIG, search_type="plain") for w in self.excluded_words
        ] + [
            ~SearchQuery(p, config=TEXT_CONFIG, search_type="phrase") for p in self.excluded_phrases
        ]
        required = self._phrases()
        terms = self._terms()
        if required:
            wanted: SearchQueryCombinable | None = reduce(and_, required)
        else:
            wanted = reduce(or_, terms) if terms else None
        parts = ([wanted] if wanted is not None else []) + excluded
        return reduce(and_, parts) if parts else None

    def candidates(self, qs: QuerySet, column: str) -> QuerySet:
        """The primary keys BM25 ranks, of `qs`'s rows that match: per word or phrase, at most
        CANDIDATES_PER_TERM rows that have it, and as many that have every one; a union of
        index-driven scans, each stopping at its limit.

        Ranking every match computed each term's document frequency over all of them, which
        grew with the matches: ~0.9 s for a question whose words half a million readable rows
        have (bench/README "1,000,000 facts"). Bounded per term, a rare word brings every row
        that has it (below the limit nothing changes: the candidates are every match and the
        ranking is exact), while a word too common to tell rows apart brings only some of
        them, in the table's order, and the rows with every word come on their own. What this
        costs the ranking is measured on the development set (bench/README, retrieval_quality).
        Each scan carries `qs`'s guard: an unreadable row never takes a place.
        """
        terms: list[SearchQueryCombinable] = [*self._terms(), *self._phrases()]
        if len(terms) > 1:
            terms.append(reduce(and_, terms))
        # a row with any word matches, unless phrases are required or words excluded
        constrained = self.phrases or self.excluded_words or self.excluded_phrases
        match = self.match()
        assert match is not None, "a query with nothing to search with has no candidates"
        scans = [
            qs.filter(**{column: term & match if constrained else term})
            .order_by()
            .values("pk")[:CANDIDATES_PER_TERM]
            for term in terms or [match]
        ]
        return scans[0].union(*scans[1:]) if len(scans) > 1 else scans[0]

    def rank(self, column: str) -> Expression:
        """The score of a matching row: BM25 over the query's words and phrases, each counted
        once per row (present or not; two words that stem alike count once), with document
        frequencies and the average length taken over the rows that match: a window over the
        query's own rows, so the guard has already applied and nothing the reader may not read
        weighs on a score.

        Each term is `idf * (k1 + 1) / (1 + k1 * (1 - b + b * length / avg_length))`, with
        `idf = ln(1 + (n - df + 0.5) / (df + 0.5))` over the n matching rows: a word every match
        has (the person's name among their own facts) counts for almost nothing, a word few
        have counts most, and a row with more of the query's words scores higher. Presence,
        not frequency: memories are short, a word rarely repeats in one (and the development
        set showed no difference).
        """
        terms: list[SearchQueryCombinable] = [*self._terms(), *self._phrases()]
        if not terms:
            return Value(0.0, output_field=FloatField())
        length = Cast(Func(F(column), function="length"), FloatField())
        matches = Cast(Window(Count("*")), FloatField())
        norm = Value(BM25_K1 + 1) / (
            Value(1.0)
            + Value(BM25_K1) * (Value(1.0 - BM25_B) + Value(BM25_B) * length / Window(Avg(length)))
        )
        score: Expression = Value(0.0, output_field=FloatField())
        for position, term in enumerate(terms):
            present = Case(
                When(Q(**{column: term}), then=Value(1.0)),
                default=Value(0.0),
                output_field=FloatField(),
            )
            df = Window(Sum(present))
            idf = Ln(Value(1.0) + (matches - df + Value(0.5)) / (df + Value(0.5)))
            contribution = present * idf
            if position:
                # "paint" and "painting" are one lexeme: a word that parses to the same tsquery
                # as an earlier one counts once (a comparison of constants, made at planning)
                contribution = contribution * _Unless(term, *terms[:position])
            score = score + contribution
        return score * norm


class _Unless(Func):
    """1.0 unless the first tsquery equals one of the others, then 0.0."""

    output_field = FloatField()

    def as_sql(  # type: ignore[override]  # Func.as_sql also takes function/template
        self, compiler: Any, connection: Any, **extra: Any
    ) -> tuple[str, list[Any]]:
        (first, first_params), *others = (compiler.compile(e) for e in self.source_expressions)
        sql = f"CASE WHEN {first} IN ({', '.join(o for o, _ in others)}) THEN 0.0 ELSE 1.0 END"
        return sql, [*first_params, *(p for _, params in others for p in params)]


def keyword_matches(
    qs: QuerySet, column: str, text: str | KeywordQuery, *, bounded: bool = False
) -> QuerySet:
    """`qs` narrowed to the rows whose `column` (a tsvector) matches `text` (or the query
    already parsed from it), each annotated with `score` (best first when ordered by
    `-score`); none when `text` has nothing to search with. `qs` carries the guard: the match
    joins it in one WHERE, so it applies before any LIMIT the caller adds.

    `bounded` ranks `KeywordQuery.candidates` only, for a reader of a whole tenant, whose
    matches are the tenant's. A narrower reader's matches are ranked all, exactly: each bounded
    scan walks the tenant's rows with the word until enough are readable, which for a project's
    app key (5% of 1M facts) took 500 ms where planning from the reader's own rows takes 180,
    and 45 ms against 7 for an end user (bench/README "Session 14")."""
    query = text if isinstance(text, KeywordQuery) else KeywordQuery.parse(text)
    match = query.match()
    if match is None:
        # still annotated: a caller orders by `score` whatever the text was ("-", "or", '""')
        return qs.none().annotate(score=Value(0.0, output_field=FloatField()))
    if not bounded:
        return qs.filter(**{column: match}).annotate(score=query.rank(column))
    # `pk IN (the union)` let the planner run the union once per row it scanned when it expected
    # few (a new tenant's tables, not yet analysed: 130 ms for 250 facts); an ARRAY of it is
    # computed once, before the scan (an InitPlan), which then reads the candidates by key.
    candidates = ArraySubquery(query.candidates(qs, column))
    return qs.filter(_InArray(F("pk"), candidates)).annotate(score=query.rank(column))


class _InArray(Func):
    """`value = ANY(array)`: true when the array has the value."""

    output_field = BooleanField()

    def as_sql(  # type: ignore[override]  # Func.as_sql also takes function/template
        self, compiler: Any, connection: Any, **extra: Any
    ) -> tuple[str, list[Any]]:
        (value, value_params), (array, array_params) = (
            compiler.compile(e) for e in self.source_expressions
        )
        return f"{value} = ANY({array})", [*value_params, *array_params]
