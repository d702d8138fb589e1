"""The FilterSet: every contract parameter, the buyer traps, price matching, order, bad input."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.http import QueryDict
from django.utils import timezone

from offerings.table.parameters import parse_listing_query


def slugs(params: str) -> list[str]:
    listing = parse_listing_query(QueryDict(params))
    assert listing.is_valid, listing.errors
    return [row.slug for row in listing.filterset.qs]


def errors(params: str) -> dict:
    listing = parse_listing_query(QueryDict(params))
    assert not listing.is_valid
    return listing.errors


def test_without_filters_every_visible_row_is_listed_cheapest_first_empty_last(catalog):
    # bridge 1.00 < pcie 1.50 (reserved, the only price) < ib 3.00 (on-demand preferred over
    # its 1.00 spot) < tcpx 4.00 < efa 5.00; mystery has no price and comes last
    assert slugs("") == ["2a6000-20v", "pcie-4x", "ib-8x", "tcpx-8g", "efa-8x", "mystery-8x"]


def test_nvlink_true_excludes_pcie_only_and_unknown_rows(catalog):
    assert set(slugs("nvlink=true")) == {"ib-8x", "efa-8x", "tcpx-8g", "2a6000-20v"}


def test_nvlink_false_matches_only_rows_known_to_lack_it(catalog):
    assert slugs("nvlink=false") == ["pcie-4x"]


def test_nvswitch_true_excludes_bridge_pairs(catalog):
    assert set(slugs("nvswitch=true")) == {"ib-8x", "efa-8x", "tcpx-8g"}


def test_nvswitch_false_matches_bridges_and_pcie_but_not_unknown(catalog):
    assert set(slugs("nvswitch=false")) == {"2a6000-20v", "pcie-4x"}


def test_fabric_infiniband_excludes_efa_roce_and_tcpx(catalog):
    assert slugs("fabric=infiniband") == ["ib-8x"]


def test_fabric_is_repeatable(catalog):
    assert set(slugs("fabric=infiniband&fabric=efa")) == {"ib-8x", "efa-8x"}


def test_unknown_fabric_rows_match_the_unknown_value_only(catalog):
    assert set(slugs("fabric=unknown")) == {"2a6000-20v", "mystery-8x"}


def test_gpudirect_rdma_false_is_not_the_same_as_unknown(catalog):
    assert slugs("gpudirect_rdma=false") == ["tcpx-8g"]
    assert set(slugs("gpudirect_rdma=true")) == {"ib-8x", "efa-8x"}


def test_multi_node_true_and_false(catalog):
    assert set(slugs("multi_node=true")) == {"ib-8x", "efa-8x", "tcpx-8g"}
    assert slugs("multi_node=false") == ["pcie-4x"]


def test_bandwidth_minimums(catalog):
    assert set(slugs("fabric_gbps_min=3200")) == {"ib-8x", "efa-8x"}
    assert set(slugs("nvlink_bw_min=900")) == {"ib-8x", "efa-8x", "tcpx-8g"}


def test_gpu_count_and_memory_minimums(catalog):
    assert set(slugs("gpu_count_min=4")) == {"ib-8x", "efa-8x", "tcpx-8g", "pcie-4x", "mystery-8x"}
    assert set(slugs("gpu_memory_min=80")) == {"ib-8x", "efa-8x", "tcpx-8g", "mystery-8x"}
    # 4 x 48 = 192 GiB per node; 2 x 48 = 96
    assert "pcie-4x" in slugs("node_memory_min=192")
    assert "2a6000-20v" not in slugs("node_memory_min=192")


def test_gpu_and_provider_filters_take_slugs_and_repeat(catalog):
    assert set(slugs("gpu=l40s&gpu=rtx-a6000")) == {"pcie-4x", "2a6000-20v"}
    assert set(slugs("provider=gcp")) == {"tcpx-8g"}


def test_verda_is_an_alias_of_datacrunch(catalog):
    assert slugs("provider=verda") == slugs("provider=datacrunch")


def test_text_search_covers_provider_instance_and_gpu_names(catalog):
    assert set(slugs("q=google")) == {"tcpx-8g"}
    assert set(slugs("q=L40S")) == {"pcie-4x"}
    assert set(slugs("q=a6000 verda")) == {"2a6000-20v"}


def test_price_kind_keeps_rows_with_a_price_of_that_kind(catalog):
    assert set(slugs("price_kind=spot")) == {"ib-8x"}
    assert set(slugs("price_kind=reserved")) == {"pcie-4x"}


def test_price_filters_must_hold_for_one_and_the_same_price(catalog):
    # ib has a 1.00 spot price and a 3.00 on-demand price: on-demand at most 2.00 is not a match
    assert slugs("price_kind=on-demand&max_gpu_hour=2") == ["2a6000-20v"]
    assert "ib-8x" in slugs("price_kind=spot&max_gpu_hour=2")


def test_region_geo_and_availability_narrow_the_matching_price(catalog):
    assert set(slugs("geo=eu")) == {"tcpx-8g", "2a6000-20v"}
    assert set(slugs("region=us-east-1&available=true")) == {"ib-8x"}
    assert slugs("available=false") == ["efa-8x"]


def test_the_row_price_is_the_cheapest_matching_price_preferring_on_demand(catalog):
    rows = {r.slug: r for r in parse_listing_query(QueryDict("")).filterset.qs}
    assert rows["ib-8x"].row_price_gpu_hour == Decimal("3.00")
    spot_rows = {r.slug: r for r in parse_listing_query(QueryDict("price_kind=spot")).filterset.qs}
    assert spot_rows["ib-8x"].row_price_gpu_hour == Decimal("1.00")


def test_with_a_price_filter_rows_without_a_matching_price_are_dropped(catalog):
    assert "mystery-8x" not in slugs("max_gpu_hour=100")
    assert "mystery-8x" in slugs("")


def test_stale_prices_still_match(catalog):
    offer = catalog["tcpx"].offers.get()
    offer.observed_at = timezone.now() - timedelta(days=400)
    offer.save()
    assert "tcpx-8g" in slugs("max_gpu_hour=4")


def test_sort_by_each_key_puts_empty_values_last_in_both_directions(catalog):
    assert slugs("sort=nvlink_bw")[-3:] == ["pcie-4x", "2a6000-20v", "mystery-8x"]
    assert slugs("sort=-nvlink_bw")[-3:] == ["pcie-4x", "2a6000-20v", "mystery-8x"]
    assert slugs("sort=-price_gpu_hour")[-1] == "mystery-8x"
    assert slugs("sort=-price_gpu_hour")[0] == "efa-8x"
    assert slugs("sort=gpu_count")[:2] == ["2a6000-20v", "pcie-4x"]
    assert slugs("sort=provider")[0] == "ib-8x"  # aws, then the tie by ascending id
    assert slugs("sort=-fabric_gbps")[:2] == ["ib-8x", "efa-8x"]
    assert slugs("sort=gpu")[0] in {"ib-8x", "efa-8x", "tcpx-8g", "mystery-8x"}


def test_ties_are_broken_by_ascending_id(catalog):
    ordered = slugs("sort=-gpu_count")
    eights = [s for s in ordered if s in {"ib-8x", "efa-8x", "tcpx-8g", "mystery-8x"}]
    assert eights == ["ib-8x", "efa-8x", "tcpx-8g", "mystery-8x"]


def test_hidden_and_retired_rows_never_appear(catalog):
    catalog["ib"].is_hidden = True
    catalog["ib"].save()
    catalog["efa"].is_active = False
    catalog["efa"].save()
    assert not {"ib-8x", "efa-8x"} & set(slugs(""))


def test_empty_values_mean_the_filter_is_absent(catalog):
    assert slugs("nvlink=&fabric=&q=&max_gpu_hour=&sort=") == slugs("")


def test_unknown_parameter_names_are_ignored(catalog):
    assert slugs("utm_source=newsletter&nvlink=true") == slugs("nvlink=true")


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ("nvlink=yes", "nvlink"),
        ("nvlink=True", "nvlink"),
        ("gpu_count_min=eight", "gpu_count_min"),
        ("gpu_count_min=-1", "gpu_count_min"),
        ("max_gpu_hour=1e999", "max_gpu_hour"),
        ("max_gpu_hour=NaN", "max_gpu_hour"),
        ("max_gpu_hour=" + "9" * 400, "max_gpu_hour"),
        ("fabric=myrinet", "fabric"),
        ("gpu=h200-nvl-9000", "gpu"),
        ("provider=nosuchcloud", "provider"),
        ("region=mars-1", "region"),
        ("geo=antarctica", "geo"),
        ("price_kind=lease", "price_kind"),
        ("sort=price", "sort"),
        ("sort=-id", "sort"),
        ("page=0", "page"),
        ("page_size=201", "page_size"),
        ("format=xml", "format"),
        ("currency=EUR", "currency"),
        ("nvlink=true&nvlink=false", "nvlink"),
        ("max_gpu_hour=1&max_gpu_hour=2", "max_gpu_hour"),
        ("gpu__slug__startswith=h", "gpu__slug__startswith"),
        ("_connector=OR", "_connector"),
        ("q=a%00b", "q"),
        ("gpu=h100%00", "gpu"),
        ("q=" + "x" * 10_000, "q"),
    ],
)
def test_bad_input_is_rejected_with_a_message_for_the_field(catalog, params, field):
    found = errors(params)
    assert field in found
    assert all(isinstance(message, str) and message for message in found[field])


def test_several_bad_parameters_are_all_reported(catalog):
    assert set(errors("nvlink=maybe&fabric=x&_x=1")) == {"nvlink", "fabric", "_x"}


def test_observed_times_are_timezone_aware(catalog):
    offer = catalog["ib"].offers.get(kind="on-demand")
    assert offer.observed_at == datetime(2026, 11, 1, tzinfo=UTC)
