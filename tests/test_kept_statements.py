"""Statements kept per data version (offerings.caching.kept_statement) and the filter page's
counts in one query (offerings.facets.listing_counts): the SQL the ORM compiles for a request's
parameters is kept, never its result, and the one query of counts says what the separate
queries say."""

from datetime import timedelta

import pytest
from django.db import connection
from django.db.models import QuerySet
from django.http import QueryDict
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from django.utils.translation import override

from offerings.caching import (
    catalog_version,
    fetch_all,
    fetch_one,
    kept_statement,
    rendered_parts,
)
from offerings.facets import availability_known, facet_counts, listing_counts
from offerings.filters import InstanceFilterSet, parse_listing_query
from offerings.models import InstanceType, Offer, Provider


def test_a_kept_statement_runs_again_and_reads_the_data_of_now(db):
    runs = []

    def providers():
        runs.append(1)
        return Provider.objects.all()

    def count(version):
        return kept_statement(version, ("providers",), providers, QuerySet.count, fetch_one)

    version = catalog_version()
    assert count(version) == 0
    Provider.objects.create(slug="p", name="P", website="https://p.example", kind="specialist")
    with CaptureQueriesContext(connection) as queries:
        assert count(version) == 1
    assert len(runs) == 1  # compiled once
    assert len(queries) == 1  # and run every time
    # Another data version compiles afresh.
    assert count(catalog_version()) == 1
    assert len(runs) == 2


def test_only_the_evaluated_query_is_looked_at_not_lookups_made_while_building_it(db):
    def build():
        list(Provider.objects.values_list("pk"))  # a lookup on the way, as a continent's regions
        return Provider.objects.none()

    version = catalog_version()
    # The evaluated query sends nothing (it cannot match): nothing is kept, the lookup neither.
    assert kept_statement(version, ("empty",), build, list, fetch_all) == []
    assert ("empty",) not in rendered_parts.entries


def test_a_statement_with_a_time_in_it_is_compiled_every_time(db):
    runs = []

    def recent():
        runs.append(1)
        since = timezone.now() - timedelta(hours=1)
        return Offer.objects.filter(observed_at__gte=since).values_list("pk")

    version = catalog_version()
    kept_statement(version, ("recent",), recent, list, fetch_all)
    kept_statement(version, ("recent",), recent, list, fetch_all)
    assert len(runs) == 2
    assert ("recent",) not in rendered_parts.entries


QUERIES = [
    "",
    "gpu=h100-sxm",
    "nvlink=true&multi_node=true",
    "fabric=infiniband",
    "price_kind=spot",
    "available=true",
    "max_gpu_hour=5&geo=eu",
    "q=a",
]


@pytest.mark.parametrize("query", QUERIES)
def test_the_counts_in_one_query_are_what_the_separate_queries_count(catalog, query):
    listing = parse_listing_query(QueryDict(query), InstanceType.objects.for_table())
    counts = listing_counts(listing)
    assert counts.facets == facet_counts(listing)
    assert counts.availability == availability_known(listing)
    if counts.total is not None:
        assert counts.total == listing.filterset.qs.count()
    # Whenever a price filter or a facet's own parameter is given, the counts read other rows.
    single = not any(name in query for name in ("fabric", "price_kind", "available", "max_gpu"))
    assert (counts.total is not None) == single


def test_the_default_page_sends_the_sql_it_compiled_the_first_time(client, catalog):
    with CaptureQueriesContext(connection) as first:
        client.get("/")
    with CaptureQueriesContext(connection) as again:
        body = client.get("/").content.decode()
    compiled = [q["sql"] for q in first]  # the rows were loaded in full then, kept since
    assert again
    assert all(q["sql"] in compiled for q in again)
    # One query counts the rows, the facets and the availability: no COUNT(*) of its own.
    assert not any(q["sql"].startswith("SELECT COUNT(*)") for q in again)
    assert "<tbody>" in body


def test_each_filterset_gets_filters_of_its_own_bound_to_it():
    one, two = InstanceFilterSet(QueryDict("")), InstanceFilterSet(QueryDict(""))
    for name, declared in InstanceFilterSet.base_filters.items():
        mine = one.filters[name]
        assert mine is not declared
        assert mine is not two.filters[name]
        assert mine.parent is one
        if mine.method is not None:
            assert mine.filter.f is mine  # its method reads this FilterSet's, not the declared


def test_the_form_says_its_choices_in_its_own_language():
    def labels(language):
        with override(language):
            form = InstanceFilterSet(QueryDict("")).form
            return dict(form.fields["geo"].choices), dict(form.fields["sort"].choices)

    english, chinese = labels("en"), labels("zh-hans")
    for en, zh in zip(english, chinese, strict=True):
        assert en.keys() == zh.keys()
        assert all(isinstance(label, str) for label in en.values())
        assert any(en[key] != zh[key] for key in en if key)


def test_the_rate_table_is_read_once_per_data_version(db):
    from datetime import date
    from decimal import Decimal

    from offerings.models import ExchangeRate
    from offerings.money import RateTable

    def rate(day: int, value: str) -> None:
        ExchangeRate.objects.create(
            currency="EUR",
            rate_date=date(2026, 11, day),
            usd_per_unit=Decimal(value),
            source_url="https://rates.example/eur",
        )

    rate(1, "1.10")
    first = RateTable.of_version(3)
    with CaptureQueriesContext(connection) as queries:
        assert RateTable.of_version(3) is first
    assert not queries
    rate(2, "1.20")  # a write moves the version: the next one reads the new rate
    assert RateTable.of_version(4).usd_per_unit("EUR") == Decimal("1.20")
    assert RateTable.of_version(None).usd_per_unit("EUR") == Decimal("1.20")


def test_each_form_gets_fields_of_its_own():
    one, two = InstanceFilterSet(QueryDict("")).form, InstanceFilterSet(QueryDict("")).form
    for name, field in one.fields.items():
        other = two.fields[name]
        assert field is not other
        assert field.widget is not other.widget
        assert field.widget.attrs is not other.widget.attrs
        assert field.error_messages is not other.error_messages
    one.fields["q"].widget.attrs["data-x"] = "1"
    assert "data-x" not in two.fields["q"].widget.attrs
    assert "data-x" not in InstanceFilterSet(QueryDict("")).form.fields["q"].widget.attrs
