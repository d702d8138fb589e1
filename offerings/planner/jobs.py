"""A job for the planner: the estimator's parameters, and its figures for each shape.

The planner takes the estimator's job parameters as they are (`params_b`, `mode`, ...; its
`nodes` is ignored: a shape's node count is what the request needs) and asks the estimator's
core for each shape at that shape's node count and price, so the page and `/api/estimate`
agree on every number.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.http import QueryDict

from offerings.estimator import core as estimator
from offerings.estimator.estimation import estimate_inference, estimate_training
from offerings.estimator.views import instance_spec, rounded
from offerings.money import RateTable
from offerings.planner.core import Shape

Job = estimator.Job
# The estimator's names; its `nodes` is accepted and ignored: the planner decides the node count.
JOB_PARAMETERS = frozenset(estimator.JOB_KEYS)


def parse_job(query: QueryDict) -> tuple[Job | None, dict[str, list[str]]]:
    """No job unless one of its parameters is given; then the estimator's own validation (which
    asks for `params_b` and `mode`)."""
    if not any(query.get(name, "").strip() for name in JOB_PARAMETERS - {"nodes"}):
        return None, {}
    params = {name: query.getlist(name) for name in query if name != "nodes"}
    return estimator.parse_job(params)


def estimate_shapes(shapes: Iterable[Shape], job: Job) -> None:
    """Give each shape the estimator's step time, efficiency and cost per billion tokens."""
    rates = RateTable()
    for shape in shapes:
        shape.instance.row_offer = shape.offer
        spec = instance_spec(shape.instance, rates, lambda path: path)
        if job.is_training:
            row = estimate_training(spec, job, shape.nodes)
        else:
            row = estimate_inference(spec, job, shape.nodes)
        # Rounded as /api/estimate rounds, so the two answers show the same numbers.
        shape.estimate = rounded(
            {
                "step_s": row.step_s,
                "efficiency": row.efficiency,
                "cost_per_billion_tokens_usd": row.cost_per_billion_tokens_usd,
            }
        )
