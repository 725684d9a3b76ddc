from django.apps import AppConfig


class ApprovalsConfig(AppConfig):
    name = "approvals"

    def ready(self) -> None:
        # facts writes an agent's fact that must wait `review: pending`; the approval it waits
        # on is opened here, through the one queue facts knows (facts/review_queue.py).
        from approvals.services import approval_open_for_fact
        from facts.review_queue import review_queue_connect

        review_queue_connect(approval_open_for_fact)
