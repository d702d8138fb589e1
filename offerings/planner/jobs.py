"""A job for the planner: the estimator's parameters, and its figures for each shape.

The planner takes the estimator's job parameters as they are (`params_b`, `mode`, ...; its
`nodes` is ignored: a shape's node count is what the request needs) and asks the estimator's
core for each shape at that shape's node count and price, so the page and `/api/estimate`
agree on every number.

Two questions stay apart: whether the shape can be booked self-serve is the planner's own
(`core.feasibility`, the shape's `reason`), whether the job fits it is the estimator's, asked as
if the shape were booked (its memory, or a figure it needs that is unknown: `job_reason`). A
shape sold only through sales still says what the job would cost on it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import replace
from decimal import Decimal

from django.http import QueryDict

from offerings.estimator import core as estimator
from offerings.estimator.core import InstanceSpec
from offerings.estimator.estimation import estimate_inference, estimate_training, rounded
from offerings.estimator.page import PAGE_LANGUAGE, field_errors
from offerings.estimator.phrases import gettext_noop
from offerings.estimator.ranking import instance_spec
from offerings.money import RateTable
from offerings.planner.core import Shape
from offerings.table.rows import money

Job = estimator.Job
# The estimator's names; its `nodes` is accepted and ignored: the planner decides the node count
# (`gpus` is the planner's own: the GPUs of the request).
JOB_PARAMETERS = frozenset(estimator.JOB_KEYS) - {"gpus"}


def parse_job(query: QueryDict, *, page: bool = False) -> tuple[Job | None, dict[str, list[str]]]:
    """No job unless one of its parameters is given; then the estimator's own validation (which
    asks for `params_b` and `mode`), its messages in the active language. On the page, an empty
    `mode` is the form's "no job" choice, whatever else the form still holds."""
    if not any(query.get(name, "").strip() for name in JOB_PARAMETERS - {"nodes"}):
        return None, {}
    if page and not query.get("mode", "").strip():
        return None, {}
    params = {name: query.getlist(name) for name in query if name not in ("nodes", "gpus")}
    job, errors = estimator.parse_job(params)
    return job, field_errors(errors)


#: The most tokens a run may name (a quadrillion: far beyond any published training run).
TOKENS_TOTAL_MAX = 10**15


def as_booked(spec: InstanceSpec) -> InstanceSpec:
    """The spec as if the shape were booked: the estimator asks only whether the job fits it
    (booking is the planner's `reason`, never the job's)."""
    return replace(spec, fabric=replace(spec.fabric, multi_node=True, max_nodes=None))


def run_figures(
    step_s: float | None, price_per_hour_usd: float | None, job: Job, tokens_total: int
) -> dict[str, float | None]:
    """A whole training run of `tokens_total` tokens: ceil(tokens_total / tokens_per_step) steps
    of `step_s` each, and that time at the shape's price per hour (null where unknown)."""
    if step_s is None:
        return {"run_hours": None, "run_cost_usd": None}
    steps = math.ceil(tokens_total / job.tokens_per_step)
    hours = steps * step_s / 3600
    cost = None if price_per_hour_usd is None else hours * price_per_hour_usd
    return {"run_hours": hours, "run_cost_usd": cost}


def estimate_shapes(shapes: Iterable[Shape], job: Job, tokens_total: int | None = None) -> None:
    """Give each shape the estimator's figures for the job at the shape's node count and price.

    Training: step time, efficiency and cost per billion tokens (none when the job does not fit
    in GPU memory), and with `tokens_total` the run's hours and cost. Inference: whether the
    model's weights and KV cache fit one NVLink domain, and the shape's price per hour when they
    do. Whether the shape can be booked is not the job's question (`as_booked`); `job_reason`
    says, in the page's language, why the job does not fit.
    """
    rates = RateTable()
    for shape in shapes:
        shape.instance.row_offer = shape.offer
        spec = as_booked(instance_spec(shape.instance, rates))
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
        if job.is_training and tokens_total is not None:
            # The run's money in cents (half-even, as every price), not to the estimator's six
            # significant digits, which would write $31,419,000.00 for $31,418,900.00.
            price = row.cost_per_hour_usd if row.fits else None
            run = run_figures(row.step_s if row.fits else None, price, job, tokens_total)
            shape.estimate["run_hours"] = rounded(run["run_hours"])
            cost = run["run_cost_usd"]
            shape.estimate["run_cost_usd"] = None if cost is None else money(Decimal(str(cost)))
        shape.job_reason = None if row.fits else PAGE_LANGUAGE.reasons(row.reason_phrases)
        # Not known rather than no: only unknown figures stand in the way.
        shape.job_unknown = not row.fits and all(p.code == "unknown" for p in row.reason_phrases)
        if row.fits and job.is_training and row.step_s is None:
            shape.job_unknown = True
            shape.job_reason = PAGE_LANGUAGE.message(
                gettext_noop("a figure it needs is unknown: %(figures)s"),
                {"figures": PAGE_LANGUAGE.figures(row.missing)},
            )
        shape.job_figure = (
            shape.estimate["cost_per_billion_tokens_usd"]
            if job.is_training
            else shape.estimate["cost_per_hour_usd"]
        )
