"""Ranking a catalog's worth of instances, building full records only for the page shown.

`/api/estimate` and `/estimate/` rank every (instance, node count) the filters match but show one
page. The ranking (`rank_key`) needs only each result's tier and its cost as the API rounds it,
and those follow from two things: the hardware (GPU model, count, NVLink and fabric), which many
types share, and the row's own price. So each distinct hardware is estimated once per node count
with no price, the price is then applied to every row with the very arithmetic of
`estimation._training_row` (and the inference row's price per hour), and the full record
(verdicts, phrases, every figure) is built by `estimate()` for the rows of the page only: the
numbers on a page are the ones a full run gives, in the same order.

The rows come from the database as plain values (no model instances): at catalog scale, building
a model per type and per offer would cost more than all of the estimator's arithmetic.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from decimal import Decimal
from typing import Any

from django.db.models import QuerySet

from offerings.estimator.core import (
    DEFAULT_CONSTANTS,
    Constants,
    EstimateResult,
    FabricSpec,
    GpuLinkSpec,
    InstanceSpec,
    Job,
)
from offerings.estimator.estimation import (
    _training_row as training_row,
)
from offerings.estimator.estimation import (
    choose_inference_row,
    estimate_inference,
    rank_key,
)
from offerings.models import Offer
from offerings.money import RateTable

# The columns a ranking reads of each matching type (its chosen offer comes in one more query).
SPEC_FIELDS = (
    "pk",
    "gpu_count",
    "gpu__memory_gib",
    "gpu__bf16_dense_tflops",
    "gpu__pcie_generation",
    "gpu_link__technology",
    "gpu_link__topology",
    "gpu_link__generation",
    "gpu_link__domain_size",
    "gpu_link__bandwidth_gbytes_per_s",
    "fabric__technology",
    "fabric__bandwidth_gbits_per_s",
    "fabric__multi_node",
    "fabric__max_nodes",
    "row_offer_id",
)


def as_float(value: Decimal | float | int | None) -> float | None:
    return None if value is None else float(value)


def link_spec(technology, topology, generation, domain_size, bandwidth) -> GpuLinkSpec:
    """A GPU link row's fields as the estimator's data (no row: all unknown)."""
    if technology is None:
        return GpuLinkSpec()
    return GpuLinkSpec(
        technology=technology,
        topology=topology or None,
        generation=generation,
        domain_size=domain_size,
        bandwidth_gbytes_per_s=as_float(bandwidth),
    )


def fabric_spec(technology, bandwidth, multi_node, max_nodes) -> FabricSpec:
    """A fabric row's fields as the estimator's data (no row: all unknown)."""
    if technology is None:
        return FabricSpec()
    return FabricSpec(
        technology=technology,
        bandwidth_gbits_per_s=as_float(bandwidth),
        multi_node=multi_node,
        max_nodes=max_nodes,
    )


def usd_per_hour(price_per_hour: Decimal, currency: str, rate_date, rates: RateTable):
    """The offer's price in USD per hour as the estimator takes it (listing.offer_usd's)."""
    rate = rates.usd_per_unit(currency, rate_date)
    return None if rate is None else as_float(price_per_hour * rate)


def lean_specs(rows: QuerySet, rates: RateTable) -> list[InstanceSpec]:
    """Every matching type as an InstanceSpec with its chosen offer's price, in two queries; the
    name, provider and address are left out (only the page's rows need them)."""
    values = list(rows.values_list(*SPEC_FIELDS))
    chosen = {row[-1] for row in values} - {None}
    prices = {
        pk: usd_per_hour(price, currency, date, rates)
        for pk, price, currency, date in Offer.objects.filter(pk__in=chosen).values_list(
            "pk", "price_per_hour", "currency", "exchange_rate_date"
        )
    }
    return [
        InstanceSpec(
            id=pk,
            name="",
            gpu_count=gpu_count,
            gpu_memory_gib=as_float(memory),
            bf16_dense_tflops=as_float(tflops),
            pcie_generation=pcie,
            link=link_spec(*link),
            fabric=fabric_spec(*fabric),
            price_per_hour_usd=prices.get(offer_id),
        )
        for pk, gpu_count, memory, tflops, pcie, *rest in values
        for link, fabric, offer_id in [(rest[0:5], rest[5:9], rest[9])]
    ]


def hardware(spec: InstanceSpec) -> InstanceSpec:
    """The spec without what is the row's own (id, name, price, provider, address)."""
    return replace(spec, id=0, name="", price_per_hour_usd=None, provider="", url="")


def _round(value: float | None, rounded) -> float | None:
    return rounded(value) if value is not None else None


def ranked_results(
    specs: Iterable[InstanceSpec],
    job: Job,
    rounded,
    constants: Constants = DEFAULT_CONSTANTS,
) -> list[dict[str, Any]]:
    """Every result the full estimate would give, in its order, as small dicts: the instance id,
    the node count and the figures the ranking, the counts and the page's summary read, each
    rounded as the API rounds it (`rounded`)."""
    inference = not job.is_training
    memo: dict[InstanceSpec, list[EstimateResult]] = {}
    results: list[dict[str, Any]] = []
    for spec in specs:
        base = hardware(spec)
        rows = memo.get(base)
        if rows is None:
            if inference:
                chosen = [estimate_inference(base, job, n, constants) for n in job.nodes]
                rows = [choose_inference_row(chosen)]
            else:
                rows = [training_row(base, job, n, constants) for n in job.nodes]
            memo[base] = rows
        price = spec.price_per_hour_usd
        for row in rows:
            # The price-dependent figures, by the same arithmetic as the full record's.
            cost_hour = cost_billion = None
            if price is not None:
                cost_hour = row.nodes * price
                if not inference and row.fits and row.step_s is not None:
                    cost_step = cost_hour * row.step_s / 3600
                    cost_billion = cost_step / job.tokens_per_step * 1e9
            results.append(
                {
                    "instance": {"id": spec.id},
                    "nodes": row.nodes,
                    "fits": row.fits,
                    "step_s": _round(row.step_s, rounded),
                    "efficiency": _round(row.efficiency, rounded),
                    "inter_gbytes_per_s_per_gpu": _round(row.inter_gbytes_per_s_per_gpu, rounded),
                    "cost_per_hour_usd": _round(cost_hour, rounded),
                    "cost_per_billion_tokens_usd": _round(cost_billion, rounded),
                }
            )
    results.sort(key=lambda result: rank_key(result, inference))
    return results
