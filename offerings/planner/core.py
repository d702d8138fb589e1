"""The cluster planner: every way to get N GPUs on one fabric, as shapes of the catalog's types.

A shape is one instance type bought one way (price kind and term) at that kind's cheapest
matching region, with the smallest node count whose GPUs reach the request. It is feasible when
one node is enough, or when the type's fabric is known to be self-serve multi-node and the node
count is within its stated limit (an unknown limit is a warning, not a reason). A type with no
matching price gives one shape without a price, unless a price filter is given. Infeasible shapes
are listed after the feasible ones with their reason, never hidden.

Pure: it takes rows and their offers (already filtered by the listing's filters) and returns
shapes; the view does the database work and the estimator adds a job's figures.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal

from django.utils.translation import gettext as _

from offerings.estimator.core import nodes_for
from offerings.models import FabricTechnology, InstanceType, LinkTechnology, Offer, OfferKind
from offerings.money import RateTable

MAX_GPUS = 100_000
LINKED = frozenset({LinkTechnology.NVLINK, LinkTechnology.INFINITY_FABRIC})


@dataclass(frozen=True)
class PlanRegion:
    code: str


@dataclass(frozen=True, slots=True)
class PlanFabric:
    technology: str | None
    bandwidth_gbits_per_s: Decimal | None
    multi_node: bool | None
    max_nodes: int | None
    sales_only: bool | None
    network_gbits_per_s: int | None = None


@dataclass(frozen=True, slots=True)
class PlanRow:
    """The fields of a type that its shapes' feasibility and ranking read (rows, not model
    instances, as PlanOffer: the planner ranks thousands; the page's rows are then loaded in
    full, `views.with_page_rows`)."""

    pk: int
    gpu_count: int
    provider_id: int
    fabric: PlanFabric

    FIELDS = (
        "pk",
        "gpu_count",
        "provider_id",
        "fabric__technology",
        "fabric__bandwidth_gbits_per_s",
        "fabric__multi_node",
        "fabric__max_nodes",
        "fabric__sales_only",
        "fabric__network_gbits_per_s",
    )

    @classmethod
    def of(cls, row: tuple) -> PlanRow:
        return cls(*row[:3], fabric=PlanFabric(*row[3:]))


@dataclass(frozen=True)
class PlanOffer:
    """The fields of a current offer the planner reads (rows, not model instances: at catalog
    scale the planner reads thousands of them)."""

    pk: int
    instance_id: int
    kind: str
    term_months: int
    price_per_hour: Decimal
    currency: str
    exchange_rate_date: object
    price_per_gpu_hour_usd: Decimal | None
    available: bool | None
    observed_at: object
    region: PlanRegion

    FIELDS = (
        "pk",
        "instance_id",
        "kind",
        "term_months",
        "price_per_hour",
        "currency",
        "exchange_rate_date",
        "price_per_gpu_hour_usd",
        "available",
        "observed_at",
        "region__code",
    )

    @classmethod
    def of(cls, row: tuple) -> PlanOffer:
        return cls(*row[:-1], region=PlanRegion(row[-1]))

    def get_kind_display(self) -> str:
        return str(OfferKind(self.kind).label)

    @property
    def is_stale(self) -> bool:
        """Offer.is_stale's rule: dated and read longer ago than PRICE_STALE_AFTER_HOURS."""
        return Offer.stale_at(self.observed_at)


@dataclass
class Shape:
    """One way to buy the request: a type, how it is bought, and how many nodes it takes."""

    instance: InstanceType | PlanRow  # a PlanRow until the page's rows are loaded in full
    nodes: int
    gpus: int
    offer: PlanOffer | None
    price_per_hour_usd: Decimal | None
    price_per_gpu_hour_usd: Decimal | None
    reason: str | None = None
    warnings: list[str] = field(default_factory=list)
    # The reason is that no source says whether it can be booked (shown as unknown, not no).
    booking_unknown: bool = False
    # The job's fit is not known (a figure it needs, such as the GPU's TFLOPS, is unknown).
    job_unknown: bool = False
    # Filled by the estimator when a job is given: its figures (the API's fields), why the job
    # does not fit (in the page's language), and the figure the ranking uses.
    estimate: dict | None = None
    job_reason: str | None = None
    job_figure: float | None = None
    # The ways the type can be bought (offerings.purchase), for the page.
    modes: list = field(default_factory=list)

    @property
    def feasible(self) -> bool:
        return self.reason is None

    @property
    def bookable(self) -> bool | None:
        """Bookable self-serve: yes, no, or None when no source says."""
        return None if self.booking_unknown else self.feasible

    def _per_gpu(self, total: float | None) -> float | None:
        return None if total is None else total / self.instance.gpu_count

    @property
    def fabric_gbits_per_s_per_gpu(self) -> float | None:
        return self._per_gpu(self.instance.fabric.bandwidth_gbits_per_s)

    @property
    def network_gbits_per_s_per_gpu(self) -> float | None:
        """The general network per GPU: what nodes with plain Ethernet only talk over."""
        return self._per_gpu(self.instance.fabric.network_gbits_per_s)

    @property
    def one_nvlink_domain(self) -> bool | None:
        """Whether all the shape's GPUs share one NVLink (or Infinity Fabric) domain."""
        link = getattr(self.instance, "gpu_link", None)
        if link is None or link.technology == LinkTechnology.UNKNOWN:
            return None
        if link.technology not in LINKED:
            return self.gpus == 1
        if link.domain_size is None:
            return None
        return link.domain_size >= self.gpus

    @property
    def cost_per_billion_tokens(self) -> float | None:
        return (self.estimate or {}).get("cost_per_billion_tokens_usd")


def feasibility(
    instance: InstanceType | PlanRow, nodes: int, provider_gpus: int | None = None
) -> tuple[str | None, list[str], bool]:
    """Why a shape of `nodes` nodes cannot be booked self-serve (None if it can), warnings, and
    whether that is only not known (no source says whether it can: the page says "unknown",
    never "no"; the shape still counts as infeasible).

    `provider_gpus` is the provider's stated largest self-serve cluster (its readiness fact
    `max_self_serve_gpus`), which holds for one node too; a type's own `max_nodes` comes first.
    """
    fabric = instance.fabric
    gpus = nodes * instance.gpu_count
    warnings: list[str] = []
    if fabric.sales_only:
        return _("sold through sales only"), warnings, False
    if provider_gpus is not None and gpus > provider_gpus:
        return (
            (
                _(
                    "needs %(n)s GPUs; the provider states that a new account runs at most %(max)s "
                    "without asking it for more"
                )
                % {"n": gpus, "max": provider_gpus}
            ),
            warnings,
            False,
        )
    if nodes == 1:
        return None, warnings, False
    if fabric.multi_node is False:
        return _("no self-serve multi-node booking (one node, or sales only)"), warnings, False
    if fabric.multi_node is None:
        return _("self-serve multi-node booking is not stated for this type"), warnings, True
    if fabric.technology == FabricTechnology.UNKNOWN:
        return _("the network between nodes is unknown"), warnings, True
    if fabric.max_nodes is not None and nodes > fabric.max_nodes:
        return (
            (
                _("needs %(n)s nodes; the largest self-serve cluster is %(max)s")
                % {"n": nodes, "max": fabric.max_nodes}
            ),
            warnings,
            False,
        )
    if fabric.max_nodes is None and provider_gpus is None:
        warnings.append(
            _("The largest self-serve cluster is not stated: %(n)s nodes may need a quota request.")
            % {"n": nodes}
        )
    return None, warnings, False


def cheapest_by_way(offers: Iterable[PlanOffer]) -> dict[tuple[str, int], PlanOffer]:
    """(kind, term) -> the dated offer with the lowest USD price per GPU-hour, else the undated
    one (ties: region code), as a row's headline is chosen."""
    best: dict[tuple[str, int], PlanOffer] = {}

    def key(offer: PlanOffer) -> tuple:
        undated = offer.observed_at is None
        return undated, offer.price_per_gpu_hour_usd, offer.region.code, offer.pk

    for offer in offers:
        if offer.price_per_gpu_hour_usd is None:
            continue
        way = (offer.kind, offer.term_months)
        held = best.get(way)
        if held is None or key(offer) < key(held):
            best[way] = offer
    return best


def shapes_for(
    rows: Iterable[InstanceType | PlanRow],
    offers: dict[int, list[PlanOffer]],
    gpus: int,
    rates: RateTable,
    *,
    priced_only: bool = False,
    max_price_per_hour: Decimal | None = None,
    provider_gpus: dict[int, int] | None = None,
) -> list[Shape]:
    """Every shape of the rows: one per (type, kind, term) at its cheapest region, or one unpriced
    shape for a type with no matching price (unless `priced_only`). `provider_gpus`: each
    provider's stated largest self-serve cluster in GPUs, by provider id."""
    shapes: list[Shape] = []
    limits = provider_gpus or {}
    for row in rows:
        nodes = nodes_for(gpus, row.gpu_count)
        reason, warnings, unknown = feasibility(row, nodes, limits.get(row.provider_id))
        ways = cheapest_by_way(offers.get(row.pk, ()))
        if not ways and not priced_only and max_price_per_hour is None:
            shapes.append(
                Shape(
                    row,
                    nodes,
                    nodes * row.gpu_count,
                    None,
                    None,
                    None,
                    reason,
                    warnings,
                    booking_unknown=unknown,
                )
            )
            continue
        for offer in ways.values():
            usd = rates.usd(offer.price_per_hour, offer.currency, offer.exchange_rate_date)
            if usd is None:
                continue
            total = usd * nodes
            if max_price_per_hour is not None and total > max_price_per_hour:
                continue
            shapes.append(
                Shape(
                    row,
                    nodes,
                    nodes * row.gpu_count,
                    offer,
                    total,
                    offer.price_per_gpu_hour_usd,
                    reason,
                    list(warnings),
                    booking_unknown=unknown,
                )
            )
    return shapes


def ranked(shapes: list[Shape], by_job: bool) -> list[Shape]:
    """Feasible first; then by the job's figure (training: cost per billion tokens; inference:
    the price per hour of shapes the model fits) or, without a job, by price per hour; a missing
    figure last; ties by instance id, then price kind and term."""

    def key(shape: Shape):
        figure = shape.job_figure if by_job else shape.price_per_hour_usd
        way = (shape.offer.kind, shape.offer.term_months) if shape.offer else ("", 0)
        return (not shape.feasible, figure is None, figure or 0, shape.instance.pk, way)

    return sorted(shapes, key=key)
