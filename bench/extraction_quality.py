"""Extraction quality: kindmem's extraction run on a development set of its own
(bench/extraction_devset.py: 31 short conversations, the memories a careful person would write
from each, contradictions of earlier memories, small talk and instruction-like distractors),
scored for precision, recall and contradiction handling (bench/extraction_scoring.py: the key
facts matcher, the figures' definitions).

    # against your own model: any OpenAI-compatible chat-completions server
    .venv/bin/python bench/extraction_quality.py --llm-url http://127.0.0.1:11434 \\
        --llm-model qwen2.5:7b-instruct          # Ollama; vLLM: http://127.0.0.1:8000
    # (or KINDMEM_LLM_URL / KINDMEM_LLM_MODEL / KINDMEM_LLM_API_KEY in the environment)

    # no model: a scripted endpoint on 127.0.0.1 (the pipeline's figures, see below)
    .venv/bin/python bench/extraction_quality.py --scripted

Each run is a new tenant in its own database (`kindmem_bench_extraction`, kept; `--fresh`
rebuilds it) with one app, one agent declaring `preference`, `profile` and `commitment` (all
about the person) and, per conversation, one end user: their prior memories written as the
app, the messages appended through recall's service, then `extraction_request` as the app,
whose job runs as the worker runs it (the Celery task, eager in this process): kindmem's
prompt, the model's answer checked whole, the writes through `remember` and `fact_propose`,
the review detectors, the content dedup. Nothing is simulated after the HTTP call.

`--scripted` starts tests/extraction/chat_server.py (a real HTTP server speaking the API) whose
answers are the dev set's expected memories plus deliberate faults (bench/extraction_script.py:
cut-off JSON, an undeclared type, a citation outside the range, an update of a memory it was
not shown, a known memory written again, an instruction written down, an invisible character).
Its figures are therefore kindmem's PIPELINE's, not a model's: what it applied, refused whole,
deduplicated and sent to review. With a real model the same run measures the model through the
pipeline. Existing memories are found by hybrid search with the `hashing` embedder unless
KINDMEM_EMBEDDER says otherwise (nothing is downloaded).

Prints a table and writes JSON to bench/results/extraction-quality-<scripted|model>.json
(one entry per `--label`).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("KINDMEM_EMBEDDER", "hashing")

import django

django.setup()

from django.conf import settings  # noqa: E402

from bench._database import use_bench_database  # noqa: E402
from bench.extraction_devset import CONVERSATIONS, DECLARATIONS, SCRIPT_FAULTS  # noqa: E402
from bench.extraction_devset import Conversation as DevConversation  # noqa: E402
from bench.extraction_scoring import Outcome, Proposal, Scores, score  # noqa: E402
from bench.extraction_script import scripted_answer  # noqa: E402

DATABASE = "kindmem_bench_extraction"
ROOT = Path(__file__).resolve().parent
AGENT = "bench-assistant"
SCRIPTED_MODEL = "scripted-devset"


def configure(args: argparse.Namespace, url: str) -> None:
    """kindmem's chat model and the settings the run needs, before anything reads them."""
    from config.celery import app
    from extraction.provider import _configured

    settings.LLM_URL = url
    settings.LLM_MODEL = SCRIPTED_MODEL if args.scripted else args.llm_model
    settings.LLM_API_KEY = args.llm_api_key
    if args.scripted:
        settings.LLM_RETRIES = 0
    settings.EMBEDDER = os.environ["KINDMEM_EMBEDDER"]
    settings.EMBED_BUDGET_MS = 60_000  # embed in the write, so each search sees every memory
    _configured.cache_clear()
    # The job runs when the request commits, in this process, as a worker would run it.
    app.conf.task_always_eager = True
    logging.getLogger("celery.app.trace").setLevel(logging.WARNING)  # a line per task, else


def world_create(review_all: bool) -> tuple[Any, Any, Any]:
    """A tenant of its own for this run: the app key, its project and the agent."""
    from extraction.models import ExtractionSettings
    from tests import factories

    tenant = factories.tenant_create(f"extraction-{time.strftime('%Y%m%dT%H%M%S')}")
    org = factories.org_create(tenant)
    project = factories.project_create(tenant, org, name="extraction-devset")
    agent = factories.agent_create(tenant, agent_id=AGENT)
    agent.memory_declarations = DECLARATIONS
    agent.save()
    app = factories.app_key_create(tenant, [project])
    ExtractionSettings.objects.create(tenant=tenant, review_all=review_all)
    return tenant, app, project


def extract(conv: DevConversation, tenant: Any, app: Any, project: Any) -> Outcome:
    """Plant the conversation's prior memories and messages, ask for its extraction (the job
    runs on commit) and read back what it did."""
    from extraction.models import ExtractionDecision, ExtractionJob
    from extraction.services import extraction_request
    from facts.models import Revision
    from facts.services import fact_create
    from recall.services import ConversationStart, NewMessage, conversation_append

    person = f"{conv.id}-person"
    thread = f"{conv.id}-{uuid.uuid4().hex[:8]}"
    priors = [
        fact_create(
            principal=app.principal,
            type=prior.type,
            content={"text": prior.text},
            scope={"project_id": project.id, "participant_id": person},
        ).revision.pk
        for prior in conv.prior
    ]
    conversation_append(
        principal=app.principal,
        conversation_id=thread,
        messages=[NewMessage(role, text) for role, text in conv.messages],
        start=ConversationStart(agent_id=AGENT, project_id=project.id, participant_id=person),
    )
    started = time.monotonic()
    opened = extraction_request(principal=app.principal, conversation_id=thread)
    seconds = time.monotonic() - started
    assert opened.job is not None
    job = ExtractionJob.objects.get(pk=opened.job.pk)
    decisions = list(ExtractionDecision.objects.filter(job=job).order_by("index"))
    live = set(
        Revision.objects.of_tenant(tenant.id)
        .live()
        .filter(pk__in=[d.revision_id for d in decisions] + priors)
        .values_list("pk", flat=True)
    )
    prior_index = {rid: i for i, rid in enumerate(priors)}
    proposals = tuple(
        Proposal(
            action=d.action,
            type=d.type,
            text=d.text,
            outcome=d.outcome,
            readable=d.revision_id in live and d.outcome != "proposed",
            reasons=tuple(d.reasons),
            replaces=prior_index.get(d.replaces_revision_id) if d.replaces_revision_id else None,
        )
        for d in decisions
    )
    return Outcome(
        conversation=conv.id,
        status=job.status,
        error_code=job.error_code,
        proposals=proposals,
        priors_intact=tuple(rid in live for rid in priors),
        tokens_in=job.tokens_in,
        tokens_out=job.tokens_out,
        seconds=seconds,
    )


def scripted_server() -> Any:
    """The scripted chat server (a context manager), answering from the dev set."""
    from tests.extraction.chat_server import chat_server_running, completion, shown

    by_first_message = {c.messages[0][1]: c for c in CONVERSATIONS}
    server = chat_server_running()

    def answer(payload: dict[str, Any]) -> Any:
        document = shown(payload)
        conv = by_first_message[document["messages"][0]["text"]]
        text = scripted_answer(conv, document)
        prompt = sum(len(m["content"]) for m in payload["messages"])
        return completion(
            text,
            prompt_tokens=prompt // 4,  # the script's estimate: no tokenizer behind it
            completion_tokens=len(text) // 4,
            model=SCRIPTED_MODEL,
        )

    return server, answer


def run(args: argparse.Namespace, url: str) -> tuple[Scores, list[Outcome]]:
    from kindmem.row_security import tenant_context

    configure(args, url)
    use_bench_database(DATABASE, fresh=args.fresh)
    tenant, app, project = world_create(args.review_all)
    conversations = CONVERSATIONS[: args.limit] if args.limit else CONVERSATIONS
    outcomes = []
    with tenant_context(tenant.id):
        for conv in conversations:
            outcome = extract(conv, tenant, app, project)
            outcomes.append(outcome)
            print(
                f"  {conv.id} {conv.kind:13} {outcome.status:8} {outcome.error_code:20}"
                f" {len(outcome.proposals)} decisions, {outcome.seconds:.2f}s",
                flush=True,
            )
    return score(conversations, outcomes), outcomes


def fmt(value: Any) -> str:
    return "-" if value is None else f"{value}"


def print_report(scores: Scores, outcomes: list[Outcome], scripted: bool, model: str) -> None:
    if scripted:
        print(
            "\nSCRIPTED ENDPOINT: the answers are the dev set's expected memories plus deliberate"
            "\nfaults, so these are kindmem's PIPELINE figures (decisions applied, refused whole,"
            "\ndeduplicated, sent to review), not any model's extraction quality. Faults:"
        )
        for conv in CONVERSATIONS:
            if conv.script:
                print(f"  {conv.id}: {SCRIPT_FAULTS[conv.script]}")
    else:
        print(f"\nmodel {model}: its extraction through kindmem's pipeline")
    header = (
        f"\n  {'kind':14} {'expected':>8} {'written':>7} {'matched':>7} {'precision':>9}"
        f" {'recall':>6} {'dup':>4} {'dedup':>5} {'type ok':>7}"
    )
    print(header)
    rows = [*sorted(scores.by_kind.items()), ("all", scores.overall)]
    for kind, tally in rows:
        f = tally.figures()
        print(
            f"  {kind:14} {f['expected']:>8} {f['written']:>7} {f['matched']:>7}"
            f" {fmt(f['precision']):>9} {fmt(f['recall']):>6} {f['duplicates']:>4}"
            f" {f['deduplicated']:>5} {fmt(f['type_agreement']):>7}"
        )
    print(f"\n  jobs: {dict(sorted(scores.jobs.items()))}")
    print(f"  decisions: {dict(sorted(scores.decisions.items()))}")
    total = sum(scores.contradictions.values())
    print(f"  contradictions ({total} expected): {dict(scores.contradictions)}")
    print(
        f"  flagged by the review detectors: {dict(scores.flagged)};"
        f" of them readable unreviewed: {scores.flagged_readable}"
    )
    seconds = [o.seconds for o in outcomes]
    tokens_in = sum(o.tokens_in for o in outcomes)
    tokens_out = sum(o.tokens_out for o in outcomes)
    print(
        f"  tokens in/out: {tokens_in}/{tokens_out}"
        f"{' (estimated by the script)' if scripted else ''};"
        f" request + job p50 {statistics.median(seconds):.2f}s, max {max(seconds):.2f}s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--llm-url", default=os.environ.get("KINDMEM_LLM_URL", ""))
    parser.add_argument("--llm-model", default=os.environ.get("KINDMEM_LLM_MODEL", ""))
    parser.add_argument("--llm-api-key", default=os.environ.get("KINDMEM_LLM_API_KEY", ""))
    parser.add_argument(
        "--scripted", action="store_true", help="a scripted local endpoint instead of a model"
    )
    parser.add_argument(
        "--review-all", action="store_true", help="the tenant sends every extraction to review"
    )
    parser.add_argument("--limit", type=int, default=0, help="only the first N conversations")
    parser.add_argument("--fresh", action="store_true", help="rebuild the bench database")
    parser.add_argument("--label", default="", help="a name for this run in the JSON file")
    args = parser.parse_args()
    if not args.scripted and not (args.llm_url and args.llm_model):
        parser.error("name a model (--llm-url and --llm-model, or KINDMEM_LLM_*) or --scripted")

    if args.scripted:
        server_cm, answer = scripted_server()
        with server_cm as server:
            server.default = answer
            scores, outcomes = run(args, server.url)
        model = SCRIPTED_MODEL
    else:
        scores, outcomes = run(args, args.llm_url)
        model = args.llm_model
    print_report(scores, outcomes, args.scripted, model)

    name = "scripted" if args.scripted else re.sub(r"[^A-Za-z0-9._-]+", "_", model)
    out = ROOT / "results" / f"extraction-quality-{name}.json"
    out.parent.mkdir(exist_ok=True)
    previous = json.loads(out.read_text()) if out.exists() else {}
    previous[args.label or "latest"] = {
        "model": model,
        "scripted": args.scripted,
        "what": (
            "kindmem's pipeline on scripted answers (expected memories plus deliberate faults)"
            if args.scripted
            else "the model's extraction through kindmem's pipeline"
        ),
        "matcher": "key facts (bench/extraction_scoring.py)",
        "embedder": settings.EMBEDDER,
        "review_all": args.review_all,
        "conversations": len(outcomes),
        "tokens_in": sum(o.tokens_in for o in outcomes),
        "tokens_out": sum(o.tokens_out for o in outcomes),
        "seconds_p50": round(statistics.median(o.seconds for o in outcomes), 3),
        **scores.as_json(),
    }
    out.write_text(json.dumps(previous, indent=2, ensure_ascii=False) + "\n")
    print(f"\nwrote {out.relative_to(ROOT.parent)}")


if __name__ == "__main__":
    main()
