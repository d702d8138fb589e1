"""Ranking a catalog's worth of instances, building full records only for the page shown.

`/api/estimate` and `/estimate/` rank every (instance, node count) the filters match but show one
page. The ranking (`rank_key`) needs only each result's tier and its cost as the API rounds it,
and those follow from two things: the hardware (GPU model, count, NVLink and fabric), which many
types share, and the row's own price. So each distinct hardware is estimated once per node count
with no price, the price is then applied to every row with `estimation.training_costs`, the
arithmetic of the full record too (and the inference row's price per hour), and the full record
(verdicts, phrases, every figure) is built by `estimate()` for the rows of the page only: the
numbers on a page are the ones a full run gives, in the same order.

The rows come from the database as plain values (no model instances): at catalog scale, building
a model per type and per offer would cost more than all of the estimator's arithmetic.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Iterable, Sequence
from dataclasses import replace
from decimal import Decimal
from typing import Any, NamedTuple

from django.db import connection
from django.db.models import QuerySet

from offerings.estimator.collectives import effective_bandwidth
from offerings.estimator.core import (
    DEFAULT_CONSTANTS,
    Constants,
    FabricSpec,
    GpuLinkSpec,
    InstanceSpec,
    Job,
)
from offerings.estimator.estimation import (
    _instance_order,
    choose_inference_row,
    estimate_inference,
    training_basis,
    training_costs,
    training_figures,
)
from offerings.models import InstanceType, Offer
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
    "fabric__network_gbits_per_s",
    "fabric__generation",
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


def fabric_spec(
    technology, bandwidth, multi_node, max_nodes, network=None, generation=None
) -> FabricSpec:
    """A fabric row's fields as the estimator's data (no row: all unknown)."""
    if technology is None:
        return FabricSpec()
    return FabricSpec(
        technology=technology,
        bandwidth_gbits_per_s=as_float(bandwidth),
        network_gbits_per_s=as_float(network),
        multi_node=multi_node,
        max_nodes=max_nodes,
        generation=generation or None,
    )


def usd_per_hour(
    price_per_hour: Decimal, currency: str, rate_date, rates: RateTable
) -> float | None:
    """The offer's price in USD per hour as the estimator takes it: `RateTable.usd` (the API's
    figure, `offerings.table.rows.offer_usd`), as a float."""
    return as_float(rates.usd(price_per_hour, currency, rate_date))


def lean_rows(rows: QuerySet, rates: RateTable) -> list[tuple[Any, InstanceSpec, float | None]]:
    """(id, hardware, USD per hour) of every matching type, in two queries: the hardware (GPU,
    count, link and fabric, as `hardware()` leaves a spec) is one object for all the types that
    have it, so the estimate of each hardware is computed once."""
    values = list(rows.values_list(*SPEC_FIELDS))
    chosen = list({row[-1] for row in values} - {None})
    # One array parameter, not thousands of IN (...) placeholders, and a plain cursor: at catalog
    # scale, building, splitting and parsing those placeholders, and the ORM's row machinery,
    # cost more than reading the offers. (Joining the offers to the rows instead makes
    # PostgreSQL read the whole offers table.)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT id, price_per_hour, currency, exchange_rate_date FROM {Offer._meta.db_table}"
            " WHERE id = ANY(%s::bigint[])",
            ["{" + ",".join(map(str, chosen)) + "}"],  # the array's text: ids are integers
        )
        found = cursor.fetchall()
    prices = {pk: usd_per_hour(price, currency, date, rates) for pk, price, currency, date in found}
    shared: dict[tuple, InstanceSpec] = {}
    links: dict[tuple, GpuLinkSpec] = {}
    fabrics: dict[tuple, FabricSpec] = {}
    lean = []
    for row in values:
        key = row[1:-1]
        spec = shared.get(key)
        if spec is None:
            gpu_count, memory, tflops, pcie = key[:4]
            link, fabric = key[4:9], key[9:15]
            spec = shared[key] = InstanceSpec(
                id=0,
                name="",
                gpu_count=gpu_count,
                gpu_memory_gib=as_float(memory),
                bf16_dense_tflops=as_float(tflops),
                pcie_generation=pcie,
                link=links.get(link) or links.setdefault(link, link_spec(*link)),
                fabric=fabrics.get(fabric) or fabrics.setdefault(fabric, fabric_spec(*fabric)),
            )
        lean.append((row[0], spec, prices.get(row[-1])))
    return lean


def hardware(spec: InstanceSpec) -> InstanceSpec:
    """The spec without what is the row's own (id, name, price, provider, address)."""
    return replace(spec, id=0, name="", price_per_hour_usd=None, provider="", url="")


class Ranked(NamedTuple):
    """One result of the ranking: its `rank_key` first (so a plain sort ranks), then the
    figures the ranking, the counts and the page's summary read, rounded as the API rounds."""

    key: tuple
    id: Any
    nodes: int
    fits: bool
    step_s: float | None
    efficiency: float | None
    inter_gbytes_per_s_per_gpu: float | None
    cost_per_hour_usd: float | None
    cost_per_billion_tokens_usd: float | None

    def as_result(self) -> dict[str, Any]:
        """The result as the page's counts, summary and chart read it (the API's names)."""
        return {
            "instance": {"id": self.id},
            "nodes": self.nodes,
            "fits": self.fits,
            "step_s": self.step_s,
            "efficiency": self.efficiency,
            "inter_gbytes_per_s_per_gpu": self.inter_gbytes_per_s_per_gpu,
            "cost_per_hour_usd": self.cost_per_hour_usd,
            "cost_per_billion_tokens_usd": self.cost_per_billion_tokens_usd,
        }


def _hardware_results(
    base: InstanceSpec, job: Job, constants: Constants, scale
) -> list[tuple[int, bool, float | None, float | None, float | None, float | None]]:
    """(nodes, fits, step s, and rounded: step s, efficiency, fabric GB/s per GPU) of one
    hardware at each node count the ranking shows (inference: the one row it chooses)."""
    if not job.is_training:
        counts = job.node_counts(base.gpu_count)
        row = choose_inference_row([estimate_inference(base, job, n, constants) for n in counts])
        return [
            (
                row.nodes,
                row.fits,
                None,
                scale(row.step_s),
                scale(row.efficiency),
                scale(row.inter_gbytes_per_s_per_gpu),
            )
        ]
    figures = []
    for n in job.node_counts(base.gpu_count):
        f = training_figures(base, job, n, constants)
        bandwidth = effective_bandwidth(f.plan.inter_kind, f.plan.inter_raw, constants)
        figures.append(
            (n, f.basis.fits, f.step_s, scale(f.step_s), scale(f.efficiency), scale(bandwidth))
        )
    return figures


def _ranked(pk, order, price, figure, job: Job, scale) -> Ranked:
    """One row's result at one node count: its hardware's figures with the row's price."""
    nodes, fits, step_s, step_r, efficiency_r, bandwidth_r = figure
    if not job.is_training:
        cost_hour = scale(nodes * price) if price is not None else None
        cost_billion = None
        tier = 3 if not fits else 1 if cost_hour is not None else 2
        cost = cost_hour if tier == 1 else 0.0
    else:
        cost_hour, _, cost_billion = training_costs(price, nodes, fits, step_s, job)
        cost_hour, cost_billion = scale(cost_hour), scale(cost_billion)
        tier = 3 if not fits or step_r is None else 1 if cost_billion is not None else 2
        cost = cost_billion if tier == 1 else 0.0
    return Ranked(
        (tier, cost, order, nodes),
        pk,
        nodes,
        fits,
        step_r,
        efficiency_r,
        bandwidth_r,
        cost_hour,
        cost_billion,
    )


def _scaler(rounded):
    def scale(value: float | None) -> float | None:
        return None if value is None else rounded(value)

    return scale


def ranked_results(
    rows: Iterable[tuple[Any, InstanceSpec, float | None]],
    job: Job,
    rounded,
    constants: Constants = DEFAULT_CONSTANTS,
) -> list[Ranked]:
    """Every result the full estimate would give, in its order (`rank_key`'s), each figure
    rounded as the API rounds it (`rounded`).

    `rows` are `lean_rows`' (id, hardware, price): each hardware is estimated once per node
    count, with `training_figures` (the physics of `_training_row`, without its phrases) or
    `estimate_inference`, and each row's price is applied with `training_costs`, the full
    record's arithmetic. The key is `rank_key`'s, built here from the same rounded figures.
    """
    scale = _scaler(rounded)
    memo: dict[InstanceSpec, list[tuple]] = {}
    ranked: list[Ranked] = []
    for pk, base, price in rows:
        figures = memo.get(base)
        if figures is None:
            figures = memo[base] = _hardware_results(base, job, constants, scale)
        order = _instance_order(pk)
        ranked.extend(_ranked(pk, order, price, figure, job, scale) for figure in figures)
    ranked.sort()  # by key: (tier, cost, instance, nodes) is unique, so no tie reaches the rest
    return ranked


def first_results(
    rows: Sequence[tuple[Any, InstanceSpec, float | None]],
    job: Job,
    rounded,
    count: int,
    constants: Constants = DEFAULT_CONSTANTS,
) -> list[Ranked] | None:
    """The first `count` results of `ranked_results(rows, job, rounded)`, the same ones in the
    same order, timing collectives only for the rows that can reach them; None when they are not
    all in tier 1 (priced training results that fit), so that the caller ranks in full.

    A step is its compute time plus its exposed communication, so the cost the row would have
    with no communication at all (`training_costs` of its compute time, `TrainingBasis`) bounds
    its cost from below, and rounding keeps the order. Rows are visited cheapest bound first; once
    `count` results are known, a row whose rounded bound is above the dearest of them can neither
    enter nor reorder them, nor can any row after it.
    """
    if not job.is_training or not 0 <= job.overlap <= 1 or count <= 0:
        return None
    scale = _scaler(rounded)
    # A basis reads the GPU, its count and the fabric's booking facts only: many hardware share
    # one (and lean_rows shares each hardware, so id() finds it).
    bases: dict[tuple, list[tuple[int, float]]] = {}
    by_hardware: dict[int, list[tuple[int, float]]] = {}
    bounds = []
    for pk, base, price in rows:
        if price is None:
            continue  # tier 2 or 3
        candidates = by_hardware.get(id(base))
        if candidates is None:
            fabric = base.fabric
            key = (
                base.gpu_count,
                base.bf16_dense_tflops,
                base.gpu_memory_gib,
                fabric.multi_node,
                fabric.max_nodes,
            )
            candidates = bases.get(key)
            if candidates is None:
                candidates = bases[key] = []
                for n in job.node_counts(base.gpu_count):
                    basis = training_basis(base, job, n, constants)
                    if basis.fits and basis.compute_s is not None:
                        candidates.append((n, basis.compute_s))
            by_hardware[id(base)] = candidates
        order = _instance_order(pk)
        for n, compute_s in candidates:
            bound = training_costs(price, n, True, compute_s, job)[2]
            bounds.append((bound, order, n, pk, base, price))
    heapq.heapify(bounds)
    memo: dict[int, dict[int, tuple]] = {}
    best: list[Ranked] = []  # the `count` first results so far, in order
    while bounds:
        bound, order, n, pk, base, price = heapq.heappop(bounds)
        if len(best) == count:
            floor = scale(bound)
            if floor is None:
                return None
            if floor > best[-1].key[1]:
                break
        figures = memo.get(id(base))
        if figures is None:
            figures = memo[id(base)] = {
                figure[0]: figure for figure in _hardware_results(base, job, constants, scale)
            }
        result = _ranked(pk, order, price, figures[n], job, scale)
        if result.key[0] == 1 and (len(best) < count or result.key < best[-1].key):
            bisect.insort(best, result)
            del best[count:]
    return best if len(best) == count else None


def links_of(row: InstanceType) -> tuple[GpuLinkSpec, FabricSpec]:
    """A row's GPU link and fabric as the estimator's data (no row: all unknown)."""
    link = getattr(row, "gpu_link", None)
    fabric = getattr(row, "fabric", None)
    return (
        link_spec(
            link.technology,
            link.topology,
            link.generation,
            link.domain_size,
            link.bandwidth_gbytes_per_s,
        )
        if link is not None
        else GpuLinkSpec(),
        fabric_spec(
            fabric.technology,
            fabric.bandwidth_gbits_per_s,
            fabric.multi_node,
            fabric.max_nodes,
            fabric.network_gbits_per_s,
            fabric.generation,
        )
        if fabric is not None
        else FabricSpec(),
    )


def instance_spec(row: InstanceType, rates: RateTable, url: str = "") -> InstanceSpec:
    """One listing row (with `row_offer` attached) as the estimator's plain data: the same
    conversions as the ranking's values (`offerings.estimator.ranking`); `url` is the row's
    detail page, where a result shows it."""
    offer = row.row_offer
    link, fabric = links_of(row)
    return InstanceSpec(
        id=row.pk,
        name=row.name,
        gpu_count=row.gpu_count,
        gpu_memory_gib=as_float(row.gpu.memory_gib),
        bf16_dense_tflops=as_float(row.gpu.bf16_dense_tflops),
        pcie_generation=row.gpu.pcie_generation,
        link=link,
        fabric=fabric,
        price_per_hour_usd=usd_per_hour(
            offer.price_per_hour, offer.currency, offer.exchange_rate_date, rates
        )
        if offer is not None
        else None,
        provider=row.provider.slug,
        url=url,
    )
