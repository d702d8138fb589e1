"""Providers' network readiness: `GET /api/providers` and the comparison page `/providers/`.

Each provider carries the facts a buyer checks before renting a cluster (`READINESS_FACTS`),
each with its basis, source and date, or unknown (no row). These are sourced facts, not scores:
unknown is never shown as no. The provider page's card is drawn by the `purchase_readiness`
template tags from the same `readiness_facts()`.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from django.db.models import Prefetch, QuerySet
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_safe

from offerings.models import FabricTechnology, Provider, ProviderReadiness, ReadinessFact
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


def _rows_of(provider: Provider) -> dict[str, ProviderReadiness]:
    rows = getattr(provider, "facts", None)
    if rows is None:
        rows = provider.readiness.all()
    return {row.fact: row for row in rows}


def json_value(row: ProviderReadiness):
    value = row.value
    if isinstance(value, Decimal):
        return money(value)
    return value


def serialize_readiness(provider: Provider) -> dict[str, dict | None]:
    """`readiness` of one provider: every fact, `null` when unknown."""
    rows = _rows_of(provider)
    return {
        fact: (
            {
                "value": json_value(rows[fact]),
                "basis": rows[fact].basis,
                "source_url": rows[fact].source_url,
                "verified_at": rows[fact].verified_at.isoformat()
                if rows[fact].verified_at
                else None,
            }
            if fact in rows
            else None
        )
        for fact in READINESS_FACTS
    }


def provider_path(provider: Provider) -> str:
    return reverse("offerings:provider-detail", kwargs={"slug": provider.slug})


@require_safe
@cached_response()
def api_providers(request: HttpRequest) -> JsonResponse:
    """`GET /api/providers`: every provider with its readiness facts."""
    results = [
        {
            "slug": provider.slug,
            "name": provider.name,
            "url": absolute_url(request, provider_path(provider)),
            "readiness": serialize_readiness(provider),
        }
        for provider in listed_providers()
    ]
    return JsonResponse({"results": results}, json_dumps_params={"ensure_ascii": False})


# -- what the pages show -------------------------------------------------------------------------


@dataclass(frozen=True)
class ShownFact:
    """One readiness fact as a page shows it; `row` is None when unknown."""

    fact: str
    label: str
    row: ProviderReadiness | None

    @property
    def known(self) -> bool:
        return self.row is not None

    @property
    def text(self) -> str:
        """The value in words of the active language ("" when unknown)."""
        row = self.row
        if row is None:
            return ""
        value = row.value
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


def readiness_facts(provider: Provider) -> list[ShownFact]:
    rows = _rows_of(provider)
    labels = dict(ReadinessFact.choices)
    return [ShownFact(fact, str(labels[fact]), rows.get(fact)) for fact in READINESS_FACTS]


@require_safe
@cached_response()
def provider_comparison(request: HttpRequest) -> HttpResponse:
    """`/providers/`: every provider's readiness facts side by side, unknowns said so."""
    providers = list(listed_providers())
    table = [(provider, readiness_facts(provider)) for provider in providers]
    known = sum(1 for _provider, facts in table for fact in facts if fact.known)
    context = {
        "table": table,
        "labels": [str(label) for _value, label in ReadinessFact.choices],
        "known": known,
        "total": len(providers) * len(READINESS_FACTS),
    }
    return render(request, "offerings/providers.html", context)
