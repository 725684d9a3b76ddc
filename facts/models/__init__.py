"""Facts and their revisions, the people they are about, and the links between them.

A `Fact` is the identity that survives supersession: its tenant, type and scope (the containers
the reader guard checks). Each `Revision` is one immutable version of it: content, trust,
provenance, world-time validity, record-time invalidation, retention and expiry. At most one
approved revision of a fact is current (`invalidated_at IS NULL`, no pending review), which a
partial unique index enforces; a successor waiting for review is current beside it, and
replaces it only when approved (`facts.services.revision_approve`).

Reads go through `RevisionQuerySet`: `Revision.objects.live().readable_by(readers)` is what an
API read starts from (see DESIGN.md rule 3; the guard is `kindmem.guards.fact_guard`).

One module per model (`fact.py`, `revision.py`, `subject.py`, `link.py`) and their columns'
choices (`choices.py`); this package names them all, as Django and the other apps look for them
here.
"""

from __future__ import annotations

from facts.models.choices import AttributionKind as AttributionKind
from facts.models.choices import EmbeddingState as EmbeddingState
from facts.models.choices import FactSubjectKind as FactSubjectKind
from facts.models.choices import InvalidationReason as InvalidationReason
from facts.models.choices import Review as Review
from facts.models.choices import ReviewState as ReviewState
from facts.models.choices import Trust as Trust
from facts.models.fact import Fact as Fact
from facts.models.fact import FactQuerySet as FactQuerySet
from facts.models.link import Link as Link
from facts.models.revision import UNSHOWN as UNSHOWN
from facts.models.revision import Revision as Revision
from facts.models.revision import RevisionQuerySet as RevisionQuerySet
from facts.models.revision import attach_subjects as attach_subjects
from facts.models.revision import subject_rows as subject_rows
from facts.models.revision import unshown as unshown
from facts.models.subject import Subject as Subject
from facts.policies import DedupScope as DedupScope

# Per-type policies and sweep reports live beside (facts/policies.py); importing them here
# registers them with the app, as Django looks for an app's models in its models module.
from facts.policies import RetentionPolicy as RetentionPolicy
from facts.policies import SweepKind as SweepKind
from facts.policies import SweepReport as SweepReport
from facts.policies import WritePolicy as WritePolicy
from facts.policies import WritePolicyKind as WritePolicyKind
