"""The one FilterSet behind the filter page, the JSON API, the exports and the feed.

It owns parsing, validation and the ordering whitelist (the README's public interface section).
`parse_listing_query()` applies the contract's rules about names and repeated keys first, then
hands the remaining values to `InstanceFilterSet`.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
from dataclasses import dataclass
from typing import Any

import django_filters
from django import forms
from django.core.exceptions import ValidationError
from django.core.paginator import Page, Paginator
from django.db.models import (
    Exists,
    F,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
)
from django.db.models.lookups import GreaterThanOrEqual
from django.http import JsonResponse, QueryDict
from django.utils.translation import gettext, gettext_lazy, ngettext

from offerings.models import (
    FabricTechnology,
    FactBasis,
    Geo,
    GpuModel,
    InstanceType,
    LinkTechnology,
    LinkTopology,
    Offer,
    OfferKind,
    Provider,
    Region,
)
from offerings.money import DISPLAY_CURRENCIES
from offerings.schemas import NON_RDMA_FABRICS, RDMA_FABRICS
from offerings.table.reference import read_reference

ASCII_SPACE = " \t\n\r\x0b\x0c"
REPEATABLE = frozenset({"gpu", "provider", "region", "fabric", "price_kind", "basis"})
PAGE_SIZE_DEFAULT = 50
PAGE_SIZE_MAX = 200

SORT_FIELDS = {
    "price_gpu_hour": "row_price_gpu_hour",
    "gpu_count": "gpu_count",
    "nvlink_bw": "gpu_link__bandwidth_gbytes_per_s",
    "fabric_gbps": "fabric__bandwidth_gbits_per_s",
    "provider": "provider__slug",
    "gpu": "gpu__slug",
}
# What the "Sort by" menu says for each key (the keys themselves are the contract's).
SORT_CHOICES = [
    ("price_gpu_hour", gettext_lazy("Price per GPU-hour, lowest first")),
    ("-price_gpu_hour", gettext_lazy("Price per GPU-hour, highest first")),
    ("gpu_count", gettext_lazy("GPUs, fewest first")),
    ("-gpu_count", gettext_lazy("GPUs, most first")),
    ("nvlink_bw", gettext_lazy("NVLink GB/s, lowest first")),
    ("-nvlink_bw", gettext_lazy("NVLink GB/s, highest first")),
    ("fabric_gbps", gettext_lazy("Fabric Gb/s, lowest first")),
    ("-fabric_gbps", gettext_lazy("Fabric Gb/s, highest first")),
    ("provider", gettext_lazy("Provider, A to Z")),
    ("-provider", gettext_lazy("Provider, Z to A")),
    ("gpu", gettext_lazy("GPU model, A to Z")),
    ("-gpu", gettext_lazy("GPU model, Z to A")),
]
NVLINK_TECHNOLOGIES = (LinkTechnology.NVLINK, LinkTechnology.INFINITY_FABRIC)
PARTIAL_TOPOLOGIES = (LinkTopology.BRIDGE, LinkTopology.MESH, LinkTopology.HYBRID_CUBE_MESH)


def _link_basis(*fields: str):
    return lambda bases: Q(**{f"gpu_link__basis__{f}__in": bases for f in fields})


def _fabric_basis(*fields: str):
    return lambda bases: Q(**{f"fabric__basis__{f}__in": bases for f in fields})


def _nvswitch_basis(bases: list[str]) -> Q:
    # A verified absence of a link rests on its technology alone; a switch on all three facts.
    return _link_basis("technology")(bases) & (
        Q(gpu_link__technology=LinkTechnology.NONE) | _link_basis("topology", "domain_size")(bases)
    )


# Each interconnect filter and the facts it rests on (the `basis` filter restricts these).
# `interconnect` is not here: `either` rests on one fact or the other, so that filter weighs the
# bases itself (`interconnect_condition`).
BASIS_CONDITIONS = {
    "nvlink": _link_basis("technology"),
    "nvswitch": _nvswitch_basis,
    "nvlink_bw_min": _link_basis("bandwidth_gbytes_per_s"),
    "fabric": _fabric_basis("technology"),
    "rdma": _fabric_basis("technology"),
    "fabric_gbps_min": _fabric_basis("bandwidth_gbits_per_s"),
    "gpudirect_rdma": _fabric_basis("gpudirect_rdma"),
    "multi_node": _fabric_basis("multi_node"),
}


# `interconnect`: which of the two interconnects a row is known to have (README, public interface).
INTERCONNECT_CHOICES = [
    ("nvlink", gettext_lazy("NVLink or Infinity Fabric inside the node")),
    ("rdma", gettext_lazy("An RDMA fabric between nodes")),
    ("both", gettext_lazy("Both")),
    ("either", gettext_lazy("Either of the two")),
    ("nvlink-or-infiniband", gettext_lazy("NVLink, or InfiniBand between nodes")),
    ("neither", gettext_lazy("Neither (known)")),
]


def _known(condition: Q, basis: Q | None) -> Q:
    """A fact known from one of the chosen bases (any basis when `basis` is None)."""
    return condition if basis is None else condition & basis


def interconnect_condition(value: str, bases: list[str] | None = None) -> Q:
    """The rows known to have (or, for `neither`, known to lack) the interconnects of `value`.

    With `bases`, only facts of those bases count: a link or fabric technology of another basis
    is as good as unknown, and an unknown fact satisfies no value that needs it.
    """
    link_basis = _link_basis("technology")(bases) if bases else None
    fabric_basis = _fabric_basis("technology")(bases) if bases else None
    nvlink = _known(Q(gpu_link__technology__in=NVLINK_TECHNOLOGIES), link_basis)
    rdma = _known(Q(fabric__technology__in=RDMA_FABRICS), fabric_basis)
    if value == "nvlink":
        return nvlink
    if value == "rdma":
        return rdma
    if value == "both":
        return nvlink & rdma
    if value == "either":
        return nvlink | rdma
    if value == "nvlink-or-infiniband":
        return nvlink | _known(Q(fabric__technology=FabricTechnology.INFINIBAND), fabric_basis)
    no_link = _known(Q(gpu_link__technology=LinkTechnology.NONE), link_basis)
    no_rdma = _known(Q(fabric__technology__in=NON_RDMA_FABRICS), fabric_basis)
    return no_link & no_rdma


def region_choices() -> list[tuple[str, str]]:
    """Every provider's regions as `provider:code`, labelled with the provider's name (the
    listing's pages take them from `listing_reference`, read once per data version)."""
    return read_reference().choices["region"]


def resolve_regions(values: list[str]) -> tuple[list[Region], list[str]]:
    """The regions `values` name, and the values that name none.

    `provider:code` is that provider's region (`verda` stands for `datacrunch`); a bare code is
    every provider's region of that code. A value with a colon that is no provider's region is
    also tried as a bare code, in case a provider's own code holds a colon.
    """
    condition = Q(code__in=values)
    pairs: dict[str, tuple[str, str]] = {}
    for value in values:
        prefix, sep, code = value.partition(":")
        if sep and prefix and code:
            pairs[value] = (Provider.ALIASES.get(prefix, prefix), code)
            condition |= Q(provider__slug=pairs[value][0], code=code)
    found = list(Region.objects.filter(condition).select_related("provider"))
    regions: dict[int, Region] = {}
    unknown = []
    for value in values:
        matched = [
            region
            for region in found
            if region.code == value or (region.provider.slug, region.code) == pairs.get(value)
        ]
        if not matched:
            unknown.append(value)
        regions.update((region.pk, region) for region in matched)
    return list(regions.values()), unknown


class RegionField(forms.MultipleChoiceField):
    """`region`: `provider:code` or a bare code (README, public interface), many allowed."""

    def __init__(self, **kwargs):
        kwargs.setdefault("choices", region_choices)  # a callable: read when the form shows
        super().__init__(**kwargs)

    def clean(self, value) -> list[Region]:
        values = list(dict.fromkeys(self.to_python(value)))  # a repeated value counts once
        if not values:
            return []
        regions, unknown = resolve_regions(values)
        if unknown:
            raise ValidationError(
                self.error_messages["invalid_choice"],
                code="invalid_choice",
                params={"value": unknown[0]},
            )
        return regions


class RegionFilter(django_filters.MultipleChoiceFilter):
    field_class = RegionField


class StrictBooleanField(forms.ChoiceField):
    """Exactly `true` or `false`; anything else is an error, empty means absent."""

    def __init__(self, **kwargs):
        # The words every form and message uses for the two values.
        kwargs.setdefault(
            "choices", [("true", gettext_lazy("yes")), ("false", gettext_lazy("no (known)"))]
        )
        super().__init__(**kwargs)

    def clean(self, value):
        value = super().clean(value)
        return {"true": True, "false": False}.get(value)


class StrictBooleanFilter(django_filters.Filter):
    field_class = StrictBooleanField


class ListingForm(forms.Form):
    """Listing options that are not filters: paging, export format and display currency."""

    page = forms.IntegerField(min_value=1, max_value=1_000_000, required=False)
    page_size = forms.IntegerField(
        min_value=1, max_value=PAGE_SIZE_MAX, required=False, label=gettext_lazy("Rows per page")
    )
    format = forms.ChoiceField(choices=[("csv", "CSV"), ("json", "JSON")], required=False)
    currency = forms.ChoiceField(
        choices=[(c, c) for c in DISPLAY_CURRENCIES], required=False, label=gettext_lazy("Currency")
    )


SEARCH_WORDS_MAX = 12


def at_most_words(value: str) -> None:
    """A search of many words costs a condition per word on every row: a dozen is plenty."""
    if len(value.split()) > SEARCH_WORDS_MAX:
        raise ValidationError(
            gettext_lazy("Search for at most %(n)s words."),
            code="too_many_words",
            params={"n": SEARCH_WORDS_MAX},
        )


class InstanceFilterSet(django_filters.FilterSet):
    """Parses and validates the listing's parameters (its form); which rows and offers match is
    decided by the pure functions below, from `ListingParameters`."""

    q = django_filters.CharFilter(
        max_length=200, validators=[at_most_words], label=gettext_lazy("Search")
    )
    gpu = django_filters.ModelMultipleChoiceFilter(
        queryset=GpuModel.objects.order_by("slug"),
        to_field_name="slug",
        label=gettext_lazy("GPU model"),
    )
    provider = django_filters.ModelMultipleChoiceFilter(
        queryset=Provider.objects.exclude(kind=Provider.Kind.PRICE_SOURCE).order_by("name"),
        to_field_name="slug",
        label=gettext_lazy("Provider"),
    )
    region = RegionFilter(label=gettext_lazy("Region"))
    geo = django_filters.ChoiceFilter(choices=Geo.choices, label=gettext_lazy("Continent"))
    available = StrictBooleanFilter(label=gettext_lazy("Available now"))
    gpu_count_min = django_filters.NumberFilter(
        min_value=0, max_value=100_000, label=gettext_lazy("GPUs per instance, at least")
    )
    gpu_memory_min = django_filters.NumberFilter(
        min_value=0, max_value=1_000_000, label=gettext_lazy("GiB per GPU, at least")
    )
    node_memory_min = django_filters.NumberFilter(
        min_value=0, max_value=100_000_000, label=gettext_lazy("GPU GiB per instance, at least")
    )
    nvlink = StrictBooleanFilter(label=gettext_lazy("NVLink or Infinity Fabric"))
    nvswitch = StrictBooleanFilter(label=gettext_lazy("All GPUs on one NVSwitch"))
    nvlink_bw_min = django_filters.NumberFilter(
        min_value=0, max_value=1_000_000, label=gettext_lazy("NVLink GB/s per GPU, at least")
    )
    fabric = django_filters.MultipleChoiceFilter(
        choices=FabricTechnology.choices, label=gettext_lazy("Fabric")
    )
    fabric_gbps_min = django_filters.NumberFilter(
        min_value=0, max_value=10_000_000, label=gettext_lazy("Back-end Gb/s per node, at least")
    )
    rdma = StrictBooleanFilter(label=gettext_lazy("RDMA fabric"))
    interconnect = django_filters.ChoiceFilter(
        choices=INTERCONNECT_CHOICES, label=gettext_lazy("NVLink inside, RDMA between nodes")
    )
    gpudirect_rdma = StrictBooleanFilter(label=gettext_lazy("GPUDirect RDMA"))
    multi_node = StrictBooleanFilter(label=gettext_lazy("Self-serve multi-node"))
    price_kind = django_filters.MultipleChoiceFilter(
        choices=OfferKind.choices, label=gettext_lazy("Price kind")
    )
    max_gpu_hour = django_filters.NumberFilter(
        min_value=0, max_value=1_000_000, label=gettext_lazy("USD per GPU-hour, at most")
    )
    sort = django_filters.ChoiceFilter(choices=SORT_CHOICES, label=gettext_lazy("Sort by"))
    basis = django_filters.MultipleChoiceFilter(
        choices=FactBasis.choices, label=gettext_lazy("Count interconnect facts that are")
    )

    class Meta:
        model = InstanceType
        fields: list[str] = []
        form = ListingForm

    @functools.cached_property
    def parameters(self) -> ListingParameters:
        return ListingParameters.of(self.form.cleaned_data)

    def filter_queryset(self, queryset: QuerySet) -> QuerySet:
        return ordered_rows(queryset, self.parameters)


# -- the parameters and what they match ----------------------------------------------------------

# Parameters that are not conditions on rows or offers: how the rows are shown.
OPTIONS = frozenset({"sort", "page", "page_size", "format", "currency", "basis"})


def _absent(value: Any) -> bool:
    """An empty value means the parameter was not given (False and 0 are values)."""
    if value is None or value == "":
        return True
    return isinstance(value, QuerySet | list | tuple) and len(value) == 0


@dataclass(frozen=True)
class ListingParameters:
    """The filters a request gave, validated: each by name (no empty one), the bases the
    interconnect facts are restricted to (None: every basis counts), the listing's sort, and the
    regions of a continent, read once."""

    given: dict[str, Any]
    bases: tuple[str, ...] | None = None
    sort: str = "price_gpu_hour"
    geo_regions: tuple[int, ...] = ()

    @classmethod
    def of(cls, data: dict[str, Any]) -> ListingParameters:
        given = {
            name: tuple(value) if isinstance(value, QuerySet | list) else value
            for name, value in data.items()
            if name not in OPTIONS and not _absent(value)
        }
        chosen = tuple(data.get("basis") or ())
        bases = None if not chosen or set(chosen) >= set(FactBasis.values) else chosen
        geo = given.get("geo")
        regions = tuple(Region.objects.filter(geo=geo).values_list("pk", flat=True)) if geo else ()
        return cls(given, bases, data.get("sort") or "price_gpu_hour", regions)

    def without(self, name: str | None) -> dict[str, Any]:
        return {key: value for key, value in self.given.items() if key != name}

    def dropping(self, name: str) -> ListingParameters:
        """These parameters as if `name` had not been given (`basis`: every basis counts)."""
        if name == "basis":
            return dataclasses.replace(self, bases=None)
        return dataclasses.replace(self, given=self.without(name))


def text_condition(value: str) -> Q:
    """Every word of `q` in the type's name, slug or other names (aliases), its provider's
    (English or Chinese) or its GPU's name or slug."""
    condition = Q()
    for term in value.split():
        condition &= (
            Q(name__icontains=term)
            | Q(slug__icontains=term)
            | Q(aliases__icontains=term)
            | Q(provider__name__icontains=term)
            | Q(provider__name_zh__icontains=term)
            | Q(provider__slug__icontains=term)
            | Q(gpu__name__icontains=term)
            | Q(gpu__slug__icontains=term)
        )
    return condition


def nvswitch_condition(value: bool) -> Q:
    """All GPUs of the type in one switched domain (True), or known not to be (False)."""
    switched = Q(
        gpu_link__technology__in=NVLINK_TECHNOLOGIES,
        gpu_link__topology=LinkTopology.NVSWITCH,
        gpu_link__domain_size__gte=F("gpu_count"),
    )
    if value:
        return switched
    return (
        Q(gpu_link__technology=LinkTechnology.NONE)
        | Q(
            gpu_link__technology__in=NVLINK_TECHNOLOGIES,
            gpu_link__topology__in=PARTIAL_TOPOLOGIES,
        )
        | Q(
            gpu_link__technology__in=NVLINK_TECHNOLOGIES,
            gpu_link__topology=LinkTopology.NVSWITCH,
            gpu_link__domain_size__lt=F("gpu_count"),
        )
    )


def _boolean(yes: Q, no: Q):
    return lambda value, bases: yes if value else no


# Each row parameter and the rows it keeps; `bases` is for the one that weighs bases itself.
ROW_RULES: dict[str, Any] = {
    "q": lambda value, bases: text_condition(value),
    "gpu": lambda value, bases: Q(gpu__in=[gpu.pk for gpu in value]),
    "provider": lambda value, bases: Q(provider__in=[provider.pk for provider in value]),
    "gpu_count_min": lambda value, bases: Q(gpu_count__gte=value),
    "gpu_memory_min": lambda value, bases: Q(gpu__memory_gib__gte=value),
    "node_memory_min": lambda value, bases: Q(
        GreaterThanOrEqual(F("gpu_count") * F("gpu__memory_gib"), value)
    ),
    "nvlink": _boolean(
        Q(gpu_link__technology__in=NVLINK_TECHNOLOGIES),
        Q(gpu_link__technology=LinkTechnology.NONE),
    ),
    "nvswitch": lambda value, bases: nvswitch_condition(value),
    "nvlink_bw_min": lambda value, bases: Q(gpu_link__bandwidth_gbytes_per_s__gte=value),
    "fabric": lambda value, bases: Q(fabric__technology__in=value),
    "fabric_gbps_min": lambda value, bases: Q(fabric__bandwidth_gbits_per_s__gte=value),
    "rdma": _boolean(
        Q(fabric__technology__in=RDMA_FABRICS), Q(fabric__technology__in=NON_RDMA_FABRICS)
    ),
    "interconnect": lambda value, bases: interconnect_condition(value, bases),
    "gpudirect_rdma": lambda value, bases: Q(fabric__gpudirect_rdma=value),
    "multi_node": lambda value, bases: Q(fabric__multi_node=value),
}


def parameter_condition(parameters: ListingParameters, name: str) -> Q:
    """The rows one row parameter keeps (everything when it is not given)."""
    if name not in parameters.given:
        return Q()
    return row_condition(dataclasses.replace(parameters, given={name: parameters.given[name]}))


def row_condition(parameters: ListingParameters, without: str | None = None) -> Q:
    """The rows the row parameters keep (all but `without`), each interconnect fact resting on
    the chosen bases: a fact of another basis is as good as unknown."""
    condition = Q()
    for name, value in parameters.without(without).items():
        if name in ROW_RULES:
            condition &= ROW_RULES[name](value, parameters.bases)
            if parameters.bases and name in BASIS_CONDITIONS:
                condition &= BASIS_CONDITIONS[name](list(parameters.bases))
    return condition


# Each price parameter and what the one current offer meeting them all must be.
OFFER_RULES: dict[str, Any] = {
    "price_kind": lambda value, parameters: Q(kind__in=value),
    "max_gpu_hour": lambda value, parameters: Q(price_per_gpu_hour_usd__lte=value),
    "region": lambda value, parameters: Q(region__in=value),
    # The continent's region ids as constants: a join to regions inside the per-row price
    # subquery costs a region scan per row.
    "geo": lambda value, parameters: Q(region_id__in=parameters.geo_regions),
    "available": lambda value, parameters: Q(available=value),
}


def offer_condition(parameters: ListingParameters, without: str | None = None) -> Q | None:
    """What one and the same current offer must meet (all but `without`), or None without any."""
    conditions = [
        OFFER_RULES[name](value, parameters)
        for name, value in parameters.without(without).items()
        if name in OFFER_RULES
    ]
    if not conditions:
        return None
    return functools.reduce(operator.and_, conditions)


def matching_offers(condition: Q) -> QuerySet:
    """A row's current offers that meet `condition` (a correlated subquery)."""
    return Offer.objects.current().filter(instance=OuterRef("pk")).filter(condition)


def match_condition(parameters: ListingParameters, without: str | None = None) -> Q:
    """The rows every parameter but `without` keeps: the row conditions, and an offer meeting
    every price condition when there is one."""
    condition = row_condition(parameters, without)
    offers = offer_condition(parameters, without)
    if offers is not None:
        condition &= Exists(matching_offers(offers))
    return condition


def ordered_rows(queryset: QuerySet, parameters: ListingParameters) -> QuerySet:
    """The matching rows in the listing's order, each with its price (`row_offer_id`,
    `row_price_gpu_hour`): the cheapest matching offer per GPU-hour, on-demand first when no
    price kind is chosen."""
    queryset = queryset.filter(match_condition(parameters))
    offers = offer_condition(parameters)
    if offers is None:
        # Without a price filter the row price is the default one, which the database keeps on
        # the row (InstanceType.best_offer, migration 0006): no subquery per row.
        # It is read with the row (attach_row_offers finds it there).
        queryset = queryset.select_related("best_offer__region").annotate(
            row_offer_id=F("best_offer_id"), row_price_gpu_hour=F("best_price_gpu_hour_usd")
        )
        return queryset.order_by(*ordering(parameters.sort))
    best = matching_offers(offers).headline_first(any_kind="price_kind" in parameters.given)
    queryset = queryset.annotate(
        row_offer_id=Subquery(best.values("pk")[:1], output_field=IntegerField()),
        row_price_gpu_hour=Subquery(best.values("price_per_gpu_hour_usd")[:1]),
    )
    return queryset.order_by(*ordering(parameters.sort))


def ordering(key: str) -> list:
    descending = key.startswith("-")
    expression = F(SORT_FIELDS[key.lstrip("-")])
    expression = expression.desc(nulls_last=True) if descending else expression.asc(nulls_last=True)
    return [expression, "pk"]


# What the feed and the drop-a-filter links leave out: how the page is shown, not what it lists.
LISTING_OPTIONS = ("sort", "page", "page_size", "format", "currency", "compare")


@dataclass
class ListingQuery:
    """A parsed listing request: the FilterSet (when valid) and the contract's errors."""

    filterset: InstanceFilterSet | None
    errors: dict[str, list[str]]
    default_currency: str = "USD"  # shown when the query names no currency

    @property
    def is_valid(self) -> bool:
        return not self.errors

    @property
    def parameters(self) -> ListingParameters:
        """The validated filters (only for a valid query)."""
        return self.filterset.parameters

    def page_of(self, items, errors: dict[str, list[str]]) -> Page | None:
        """The requested page of `items` (rows, results or shapes), or None with an error for a
        page past the last, written into `errors` (the caller's, which it reports)."""
        paginator = Paginator(items, self.options["page_size"])
        if self.options["page"] > paginator.num_pages:
            errors["page"] = [
                ngettext(
                    "There is only %(n)s page.", "There are only %(n)s pages.", paginator.num_pages
                )
                % {"n": paginator.num_pages}
            ]
            return None
        return paginator.page(self.options["page"])

    @property
    def options(self) -> dict:
        data = self.filterset.form.cleaned_data
        return {
            "page": data.get("page") or 1,
            "page_size": data.get("page_size") or PAGE_SIZE_DEFAULT,
            "format": data.get("format") or "",
            "currency": data.get("currency") or self.default_currency,
            "sort": data.get("sort") or "price_gpu_hour",
        }


def known_parameters() -> set[str]:
    return set(InstanceFilterSet.base_filters) | set(ListingForm.base_fields)


def _region_alias(value: str) -> str:
    """`verda:FIN-01` -> `datacrunch:FIN-01`; a bare code or another provider unchanged."""
    prefix, sep, code = value.partition(":")
    return f"{Provider.ALIASES[prefix]}:{code}" if sep and prefix in Provider.ALIASES else value


def parse_listing_query(
    query: QueryDict,
    queryset: QuerySet | None = None,
    extra: frozenset[str] = frozenset(),
    default_currency: str = "USD",
) -> ListingQuery:
    """Apply the contract's naming rules, then validate the values with the FilterSet.

    `extra` names parameters a caller handles itself (e.g. the estimator's `ids`): they pass
    through untouched and are neither errors nor filters. `default_currency`: what a page shows
    when the query names no currency (`money.page_currency`).
    """
    errors: dict[str, list[str]] = {}
    known = known_parameters()
    data = QueryDict(mutable=True)
    for name in query:
        values = query.getlist(name)
        if name.startswith("_") or "__" in name:
            errors[name] = [gettext("This parameter name is not allowed.")]
            continue
        if name not in known or name in extra:
            continue  # unknown names are ignored, so shared links with utm_* still work
        if any("\x00" in value for value in values):
            errors[name] = [gettext("Null characters are not allowed.")]
            continue
        # An empty value (spaces at most) means the parameter is absent; a value of nothing
        # but other white space (a no-break space, say) is no value and no absence either.
        given = [value.strip(ASCII_SPACE) for value in values if value.strip(ASCII_SPACE)]
        if any(not value.strip() for value in given):
            errors[name] = [gettext("Enter a value, or leave the field empty.")]
            continue
        if name not in REPEATABLE and len(values) > 1:
            errors[name] = [gettext("Give this parameter once.")]
            continue
        if name == "provider":
            given = [Provider.ALIASES.get(value, value) for value in given]
        if name == "region":
            given = [_region_alias(value) for value in given]
        if given:
            data.setlist(name, given)
    if queryset is None:
        queryset = InstanceType.objects.for_listing()
    filterset = InstanceFilterSet(data=data, queryset=queryset)
    if not filterset.is_valid():
        for name, messages in filterset.form.errors.items():
            errors.setdefault(name, []).extend(str(message) for message in messages)
    return ListingQuery(filterset=filterset, errors=errors, default_currency=default_currency)


def invalid_parameters(errors: dict[str, list[str]]) -> JsonResponse:
    """The JSON APIs' answer to bad parameters: 400, naming every bad one with its messages."""
    return JsonResponse({"error": "invalid_parameters", "fields": errors}, status=400)


#: Fewer digits than a bigint's largest value (19 digits): every id token fits the column.
ID_DIGITS_MAX = 18


def parse_id(token: str) -> int | None:
    """The database id a token names, or None: ASCII digits only (no sign, no space, no "١٢"
    or "²", which `str.isdigit` accepts) and short enough for a bigint. The one test of "is this
    token an id", for `ids` (`parse_instance_ids`) and the table's `compare` ticks."""
    if token.isascii() and token.isdigit() and len(token) <= ID_DIGITS_MAX:
        return int(token)
    return None


def parse_instance_ids(
    value: str, queryset: QuerySet | None = None, minimum: int = 1, maximum: int = 1000
) -> tuple[list[InstanceType], list[str]]:
    """Resolve `ids` (comma-separated; each an id or `provider/slug`) to visible instances.

    Returns the instances in the order given and the error messages, if any.
    """
    if queryset is None:
        queryset = InstanceType.objects.for_listing()
    tokens = [token.strip() for token in value.split(",") if token.strip()]
    if "\x00" in value:
        return [], [gettext("Null characters are not allowed.")]
    if len(dict.fromkeys(tokens)) != len(tokens):
        return [], [gettext("Each instance may be given once.")]
    if not minimum <= len(tokens) <= maximum:
        return [], [
            gettext("Give between %(min)s and %(max)s instances, separated by commas.")
            % {"min": minimum, "max": maximum}
        ]
    numeric = [pk for pk in map(parse_id, tokens) if pk is not None]
    pairs = []
    for token in tokens:
        if "/" in token:
            provider, _, slug = token.partition("/")
            pairs.append((Provider.ALIASES.get(provider, provider), slug))
    condition = Q(pk__in=numeric)
    for provider, slug in pairs:
        condition |= Q(provider__slug=provider, slug=slug)
    found = list(queryset.filter(condition)) if numeric or pairs else []
    by_key: dict[str, InstanceType] = {}
    for row in found:
        by_key[str(row.pk)] = row
        by_key[f"{row.provider.slug}/{row.slug}"] = row
    resolved, unknown = [], []
    for token in tokens:
        provider, sep, slug = token.partition("/")
        key = f"{Provider.ALIASES.get(provider, provider)}/{slug}" if sep else token
        if key in by_key:
            resolved.append(by_key[key])
        else:
            unknown.append(token)
    if unknown:
        return [], [gettext("Unknown instance: %(ids)s.") % {"ids": ", ".join(unknown[:5])}]
    if len({row.pk for row in resolved}) != len(resolved):
        return [], [gettext("Each instance may be given once.")]
    return resolved, []
