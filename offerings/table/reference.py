"""What the filter table needs from the catalog besides its rows: the choice lists of the GPU,
provider and region fields and the reference exchange rates.

They are four small tables read in one statement (a UNION ALL), kept in the response cache's
store under the data version (`versioned_value`) and on the request, so a cold page reads them
once and a render under a version already seen not at all."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from decimal import Decimal

from django.conf import settings
from django.db.models import CharField, F, Value
from django.db.models.functions import Cast
from django.http import HttpRequest
from django.utils.translation import get_language

from offerings.models import ExchangeRate, GpuModel, Provider, Region, localized
from offerings.money import RateTable
from offerings.web.caching import versioned_value

# The fields whose choices come from the catalog's data, in the form's order of each list.
CHOICE_FIELDS = ("gpu", "provider", "region")


@dataclass(frozen=True)
class ListingReference:
    # language -> field name -> [(value, label)], in display order
    choices_by_language: dict[str, dict[str, list[tuple[str, str]]]]
    rates: RateTable

    @property
    def choices(self) -> dict[str, list[tuple[str, str]]]:
        """The choice lists labelled in the active language."""
        return self.choices_by_language.get(get_language(), self.choices_by_language["en"])


COLUMNS = 6


def _rows(kind: str, queryset, *columns):
    """`queryset` as (kind, c1, ..., c6) text rows, so the four tables share one statement."""
    text = CharField()
    named = {"ref_kind": Value(kind, output_field=text)}
    for i in range(COLUMNS):
        named[f"ref_{i}"] = Cast(columns[i], text) if i < len(columns) else Value("", text)
    return queryset.order_by().annotate(**named).values_list(*named)


def read_reference() -> ListingReference:
    """The three choice lists and every reference rate, in one statement."""
    rows = list(
        _rows("gpu", GpuModel.objects.all(), F("slug"), F("name"))
        .union(
            _rows(
                "provider",
                Provider.objects.exclude(kind=Provider.Kind.PRICE_SOURCE),
                F("slug"),
                F("name"),
                F("name_zh"),
            ),
            _rows(
                "region",
                Region.objects.all(),
                F("provider__slug"),
                F("code"),
                F("provider__name"),
                F("name"),
                F("provider__name_zh"),
                F("name_zh"),
            ),
            _rows(
                "rate",
                ExchangeRate.objects.all(),
                F("currency"),
                F("rate_date"),
                F("usd_per_unit"),
                F("source_url"),
            ),
            all=True,
        )
        .order_by()
    )
    by_kind: dict[str, list[tuple[str, ...]]] = {
        "gpu": [],
        "provider": [],
        "region": [],
        "rate": [],
    }
    for kind, *columns in rows:
        by_kind[kind].append(tuple(columns))
    # Sorted here, not by the database, so the order is the same under any collation.
    gpus = sorted(by_kind["gpu"], key=lambda row: row[0])  # by slug
    providers = sorted(by_kind["provider"], key=lambda row: row[1].casefold())  # by name
    regions = sorted(by_kind["region"], key=lambda row: (row[2].casefold(), row[1]))
    rates = [
        ExchangeRate(
            currency=currency,
            rate_date=date.fromisoformat(rate_date),
            usd_per_unit=Decimal(usd_per_unit),
            source_url=source_url,
        )
        for currency, rate_date, usd_per_unit, source_url, *_ in by_kind["rate"]
    ]
    return ListingReference(
        choices_by_language={
            language: {
                "gpu": [(slug, name) for slug, name, *_ in gpus],
                "provider": [
                    (slug, localized(name, name_zh, language))
                    for slug, name, name_zh, *_ in providers
                ],
                "region": [
                    (f"{slug}:{code}", region_label(code, *names, language))
                    for slug, code, *names in regions
                ],
            }
            for language, _name in settings.LANGUAGES
        },
        rates=RateTable(rates),
    )


def region_label(
    code: str, provider: str, name: str, provider_zh: str, name_zh: str, language: str
) -> str:
    """`Alibaba Cloud: cn-shanghai (China East 2 (Shanghai))`, or on a Chinese page the Chinese
    names where the provider gives them."""
    shown = localized(name, name_zh, language)
    label = f"{localized(provider, provider_zh, language)}: {code}"
    return f"{label} ({shown})" if shown else label


def listing_reference(request: HttpRequest | None) -> ListingReference:
    """The reference data for this request: read once per data version, and once per request
    where nothing is cached (the cache off, or outside a cached view)."""
    if request is None:
        return read_reference()
    kept = getattr(request, "_listing_reference", None)
    if kept is None:
        kept = versioned_value(request, "listing-reference", read_reference)
        request._listing_reference = kept
    return kept
