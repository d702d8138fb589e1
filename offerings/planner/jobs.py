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
from offerings.estimator.estimation import estimate_inference, estimate_training, rounded
from offerings.estimator.page import PAGE_LANGUAGE, field_errors
from offerings.estimator.phrases import gettext_noop
from offerings.estimator.ranking import instance_spec
from offerings.money import RateTable
from offerings.planner.core import Shape

Job = estimator.Job
# The estimator's names; its `nodes` is accepted and ignored: the planner decides the node count.
JOB_PARAMETERS = frozenset(estimator.JOB_KEYS)


def parse_job(query: QueryDict, *, page: bool = False) -> tuple[Job | None, dict[str, list[str]]]:
    """No job unless one of its parameters is given; then the estimator's own validation (which
    asks for `params_b` and `mode`), its messages in the active language. On the page, an empty
    `mode` is the form's "no job" choice, whatever else the form still holds."""
    if not any(query.get(name, "").strip() for name in JOB_PARAMETERS - {"nodes"}):
        return None, {}
    if page and not query.get("mode", "").strip():
        return None, {}
    params = {name: query.getlist(name) for name in query if name != "nodes"}
    job, errors = estimator.parse_job(params)
    return job, field_errors(errors)


def estimate_shapes(shapes: Iterable[Shape], job: Job) -> None:
    """Give each shape the estimator's figures for the job at the shape's node count and price.

    Training: step time, efficiency and cost per billion tokens (none when the job does not fit
    in GPU memory or cannot be booked at that size). Inference: whether the model's weights and
    KV cache fit one NVLink domain, and the shape's price per hour when they do. `job_reason`
    says, in the page's language, why the job does not fit.
    """
    rates = RateTable()
    for shape in shapes:
        shape.instance.row_offer = shape.offer
        spec = instance_spec(shape.instance, rates, lambda path: path)
        if job.is_training:
            row = estimate_training(spec, job, shape.nodes)
            figures = {
                "step_s": row.step_s,
                "efficiency": row.efficiency,
                "cost_per_billion_tokens_usd": row.cost_per_billion_tokens_usd,
            }
        else:
            row = estimate_inference(spec, job, shape.nodes)
            figures = {"cost_per_hour_usd": row.cost_per_hour_usd if row.fits else None}
        # Rounded as /api/estimate rounds, so the two answers show the same numbers.
        shape.estimate = rounded({"fits": row.fits, **figures, "job_reason": row.reason})
        shape.job_reason = None if row.fits else PAGE_LANGUAGE.reasons(row.reason_phrases)
        if row.fits and job.is_training and row.step_s is None:
            shape.job_reason = PAGE_LANGUAGE.message(
                gettext_noop("a figure it needs is unknown: %(figures)s"),
                {"figures": PAGE_LANGUAGE.figures(row.missing)},
            )
        shape.job_figure = (
            shape.estimate["cost_per_billion_tokens_usd"]
            if job.is_training
            else shape.estimate["cost_per_hour_usd"]
        )
