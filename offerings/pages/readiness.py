"""Providers' network readiness: `GET /api/providers` and the comparison page `/providers/`.

Each provider carries the facts a buyer checks before renting a cluster (`READINESS_FACTS`),
each with its basis, source and date, or unknown (no row). These are sourced facts, not scores:
unknown is never shown as no. The provider page's card is drawn by the `purchase_readiness`
template tags from the same `readiness_facts()`.

Two facts are facts of instance types, not of the provider: the fabric kinds and GPUDirect RDMA.
A provider's summary of them is computed from its listed types (`TypeSummary`), so the provider
page and a type's page cannot disagree: the kinds its types have, and GPUDirect RDMA as its RDMA
types have it, or "varies" when they differ or some are unknown. A curated statement of the
provider that says otherwise (about a family the catalog does not list, say) is kept beside it
(`stated`), never in its place. A provider with no listed type keeps its curated fabric kinds,
one with no RDMA type its curated GPUDirect RDMA.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal

from django.db.models import Prefetch, QuerySet
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_safe

from offerings.models import (
    Fabric,
    FabricTechnology,
    InstanceType,
    Provider,
    ProviderReadiness,
    ReadinessFact,
)
from offerings.platform import weakest
from offerings.schemas import READINESS_FACTS
from offerings.table.rows import money
from offerings.web.caching import absolute_url, cached_response


def listed_providers() -> QuerySet[Provider]:
    """Every provider with a page (price sources have none), with its readiness rows."""
    return (
        Provider.objects.exclude(kind=Provider.Kind.PRICE_SOURCE)
        .order_by("slug")
        .prefetch_related(
            Prefetch("readiness", queryset=ProviderReadiness.objects.all(), to_attr="facts")
        )
    )


#: The fabrics whose types can have GPUDirect RDMA (the others are not RDMA at all).
RDMA_FABRICS = frozenset({"infiniband", "roce", "efa", "erdma"})
#: The value of a type fact whose types differ, or are partly unknown.
VARIES = "varies"


@dataclass(frozen=True)
class TypeFact:
    """One listed type's fabric, as far as the provider's summary reads it."""

    technology: str
    gpudirect_rdma: bool | None
    basis: dict
    verified_at: date | None


@dataclass
class TypeSummary:
    """A readiness fact computed from the provider's listed types; shaped like a curated row
    (`fact`, `value`, `flag`, `basis`, `source_url`, `verified_at`) so the pages and the API
    read both alike.

    `value`: the fabric kinds the types have; or GPUDirect RDMA as every RDMA type has it, else
    `VARIES`. `basis`: the weakest of the types' facts it rests on; `verified_at`: the oldest of
    their checks; `source_url`: the provider's list of those types on this site (a path; the
    API makes it absolute), each with its own source. `counts`: how many types have each value
    ("yes", "no", "unknown"; or each fabric kind). `stated`: the provider's curated row, when
    it says something else.
    """

    fact: str
    value: object
    basis: str | None
    verified_at: date | None
    source_url: str
    types: int
    counts: dict[str, int] = field(default_factory=dict)
    stated: ProviderReadiness | None = None

    @property
    def flag(self) -> bool | None:
        return self.value if isinstance(self.value, bool) else None


def listed_types_path(provider: Provider) -> str:
    """The provider's listed types on this site (the API makes it absolute, as every URL)."""
    return f"{reverse('offerings:instance-list')}?provider={provider.slug}"


def type_facts(providers: Iterable[Provider]) -> dict[int, list[TypeFact]]:
    """Each provider's listed types' fabrics, in one query."""
    ids = [provider.pk for provider in providers]
    rows = Fabric.objects.filter(
        instance__in=InstanceType.objects.visible().filter(provider_id__in=ids)
    ).values_list("instance__provider_id", "technology", "gpudirect_rdma", "basis", "verified_at")
    facts: dict[int, list[TypeFact]] = {pk: [] for pk in ids}
    for provider_id, technology, gpudirect, basis, verified_at in rows:
        facts[provider_id].append(TypeFact(technology, gpudirect, basis or {}, verified_at))
    return facts


def _oldest(dates: Iterable[date | None]) -> date | None:
    known = [day for day in dates if day is not None]
    return min(known) if known else None


def summarize_types(
    provider: Provider, facts: list[TypeFact], rows: dict[str, ProviderReadiness]
) -> dict[str, TypeSummary]:
    """The type facts' summaries of one provider. The fabric kinds are its listed types' (unknown
    when none is known); GPUDirect RDMA is its RDMA types' (left out when it has none and
    states nothing, so a curated row about types it does not list stands)."""
    summaries: dict[str, TypeSummary] = {}
    url = listed_types_path(provider)
    known = [fact for fact in facts if fact.technology != FabricTechnology.UNKNOWN]
    stated = rows.get(ReadinessFact.FABRICS)
    # Every listed type counts; with none known the kinds are unknown (beside what the provider
    # states, when it states anything).
    if known or (facts and stated is not None):
        kinds = sorted({fact.technology for fact in known}, key=FabricTechnology.values.index)
        summaries[ReadinessFact.FABRICS] = TypeSummary(
            fact=ReadinessFact.FABRICS,
            value=kinds or None,
            basis=weakest(*(fact.basis.get("technology") or "provider" for fact in known))
            if known
            else None,
            verified_at=_oldest(fact.verified_at for fact in known),
            source_url=url,
            types=len(facts),
            counts=dict(Counter(fact.technology for fact in facts)),
            stated=stated if stated is not None and list(stated.value) != kinds else None,
        )
    rdma = [fact for fact in facts if fact.technology in RDMA_FABRICS]
    stated = rows.get(ReadinessFact.GPUDIRECT_RDMA)
    based = [fact for fact in rdma if fact.gpudirect_rdma is not None]
    if based or (rdma and stated is not None):
        values = {fact.gpudirect_rdma for fact in rdma}
        # Every RDMA type alike (None: every one unknown), or VARIES.
        value = values.pop() if len(values) == 1 else VARIES
        words = {True: "yes", False: "no", None: "unknown"}
        summaries[ReadinessFact.GPUDIRECT_RDMA] = TypeSummary(
            fact=ReadinessFact.GPUDIRECT_RDMA,
            value=value,
            basis=weakest(*(f.basis.get("gpudirect_rdma") or "provider" for f in based))
            if value is not None
            else None,
            verified_at=_oldest(fact.verified_at for fact in based),
            source_url=url,
            types=len(rdma),
            counts=dict(Counter(words[fact.gpudirect_rdma] for fact in rdma)),
            stated=stated if stated is not None and stated.value != value else None,
        )
    return summaries


def _rows_of(provider: Provider, facts: list[TypeFact] | None = None) -> dict:
    """The provider's readiness by fact: its curated rows, with the type facts computed from
    its listed types (`facts`, read here when not given)."""
    rows = getattr(provider, "facts", None)
    if rows is None:
        rows = provider.readiness.all()
    rows = {row.fact: row for row in rows}
    if facts is None:
        facts = type_facts([provider])[provider.pk]
    return rows | summarize_types(provider, facts, rows)


def json_value(row: ProviderReadiness):
    value = row.value
    if isinstance(value, Decimal):
        return money(value)
    return value


def _entry(row: ProviderReadiness | TypeSummary, absolute: Callable[[str], str]) -> dict:
    entry = {
        "value": json_value(row),
        "basis": row.basis,
        "source_url": row.source_url,
        "verified_at": row.verified_at.isoformat() if row.verified_at else None,
    }
    if isinstance(row, TypeSummary):
        entry["source_url"] = absolute(row.source_url)
        entry["from_types"] = {"types": row.types, "counts": row.counts}
        entry["stated"] = _entry(row.stated, absolute) if row.stated is not None else None
    return entry


def serialize_readiness(
    provider: Provider, absolute: Callable[[str], str], facts: list[TypeFact] | None = None
) -> dict[str, dict | None]:
    """`readiness` of one provider: every fact, `null` when unknown. A type fact's summary
    also says how many types it rests on and what each has (`from_types`), and what the
    provider states when that differs (`stated`)."""
    rows = _rows_of(provider, facts)
    return {
        fact: _entry(rows[fact], absolute) if fact in rows else None for fact in READINESS_FACTS
    }


def provider_path(provider: Provider) -> str:
    return reverse("offerings:provider-detail", kwargs={"slug": provider.slug})


@require_safe
@cached_response()
def api_providers(request: HttpRequest) -> JsonResponse:
    """`GET /api/providers`: every provider with its readiness facts."""
    providers = list(listed_providers())
    facts = type_facts(providers)
    results = [
        {
            "slug": provider.slug,
            "name": provider.name,
            "url": absolute_url(request, provider_path(provider)),
            "readiness": serialize_readiness(
                provider, lambda path: absolute_url(request, path), facts[provider.pk]
            ),
        }
        for provider in providers
    ]
    return JsonResponse({"results": results}, json_dumps_params={"ensure_ascii": False})


# -- what the pages show -------------------------------------------------------------------------


@dataclass(frozen=True)
class ShownFact:
    """One readiness fact as a page shows it; `row` is None when unknown (a type fact's summary
    whose types are all unknown is shown as unknown too, with what the provider states)."""

    fact: str
    label: str
    row: ProviderReadiness | TypeSummary | None

    @property
    def known(self) -> bool:
        return self.row is not None and self.row.value is not None

    @property
    def summary(self) -> TypeSummary | None:
        return self.row if isinstance(self.row, TypeSummary) else None

    @property
    def stated(self) -> ShownFact | None:
        """What the provider states, when it differs from its types' summary."""
        summary = self.summary
        if summary is None or summary.stated is None:
            return None
        return ShownFact(self.fact, self.label, summary.stated)

    @property
    def from_types(self) -> str:
        """How a summary was computed, in words: 'from its 12 types: 3 yes, 9 unknown'."""
        summary = self.summary
        if summary is None:
            return ""
        labels = {kind: str(label) for kind, label in FabricTechnology.choices}
        labels |= {"yes": _("yes"), "no": _("no"), "unknown": _("unknown")}
        parts = ", ".join(
            f"{count} {labels.get(value, value)}" for value, count in sorted(summary.counts.items())
        )
        if summary.fact == ReadinessFact.GPUDIRECT_RDMA:  # only RDMA types can have it
            message = ngettext(
                "from its %(n)s listed RDMA type: %(parts)s",
                "from its %(n)s listed RDMA types: %(parts)s",
                summary.types,
            )
        else:
            message = ngettext(
                "from its %(n)s listed type: %(parts)s",
                "from its %(n)s listed types: %(parts)s",
                summary.types,
            )
        return message % {"n": summary.types, "parts": parts}

    @property
    def text(self) -> str:
        """The value in words of the active language ("" when unknown)."""
        row = self.row
        if row is None or row.value is None:
            return ""
        value = row.value
        if value == VARIES:
            return _("varies by type")
        if row.fact == ReadinessFact.FABRICS:
            return ", ".join(str(FabricTechnology(kind).label) for kind in value)
        if row.fact == ReadinessFact.EGRESS_USD_PER_GB:
            return _("$%(price)s per GB") % {"price": format(value.normalize(), "f")}
        if row.fact == ReadinessFact.MAX_SELF_SERVE_GPUS:
            return f"{value:,}"
        return _("yes") if value else _("no")

    @property
    def negative(self) -> bool:
        return self.row is not None and self.row.flag is False


def readiness_facts(provider: Provider, facts: list[TypeFact] | None = None) -> list[ShownFact]:
    rows = _rows_of(provider, facts)
    labels = dict(ReadinessFact.choices)
    return [ShownFact(fact, str(labels[fact]), rows.get(fact)) for fact in READINESS_FACTS]


@require_safe
@cached_response()
def provider_comparison(request: HttpRequest) -> HttpResponse:
    """`/providers/`: every provider's readiness facts side by side, unknowns said so."""
    # By the name the reader sees, whatever its case ("CUDO Compute" after "CoreWeave").
    providers = sorted(listed_providers(), key=lambda provider: provider.local_name.casefold())
    facts = type_facts(providers)
    table = [(provider, readiness_facts(provider, facts[provider.pk])) for provider in providers]
    known = sum(1 for _provider, facts in table for fact in facts if fact.known)
    context = {
        "table": table,
        "labels": [str(label) for _value, label in ReadinessFact.choices],
        "known": known,
        "total": len(providers) * len(READINESS_FACTS),
    }
    return render(request, "offerings/providers.html", context)
