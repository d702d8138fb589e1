"""Every database constraint rejects the bad row it exists for, by name."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.db import IntegrityError, transaction

from offerings.models import (
    CatalogVersion,
    CollectiveResult,
    CorrectionReport,
    ExchangeRate,
    Fabric,
    GpuLink,
    GpuModel,
    InstanceType,
    Offer,
    PriceCheck,
    PriceObservation,
    Provider,
    ProviderReadiness,
    PurchaseMode,
    RefreshHealth,
    Region,
    ScrapeRun,
    SkuReview,
)
from tests.conftest import SOURCE, make_instance, make_offer

NOW = datetime(2026, 11, 29, tzinfo=UTC)
JS_URL = "javascript:window.__pwned=1"


def assert_violates(constraint: str, create) -> None:
    with pytest.raises(IntegrityError, match=constraint), transaction.atomic():
        create()


def _link(instance, **fields):
    GpuLink.objects.filter(instance=instance).delete()
    return GpuLink.objects.create(instance=instance, **fields)


def _fabric(instance, **fields):
    Fabric.objects.filter(instance=instance).delete()
    return Fabric.objects.create(instance=instance, **fields)


def _mode(c, **fields):
    values = {"kind": "spot", "source_url": SOURCE, "verified_at": NOW.date()} | fields
    return PurchaseMode.objects.create(instance=c["instance"], **values)


def _fact(c, **fields):
    values = {
        "fact": "sharp",
        "flag": True,
        "basis": "provider",
        "source_url": SOURCE,
        "verified_at": NOW.date(),
    } | fields
    return ProviderReadiness.objects.create(provider=c["provider"], **values)


def _result(c, **fields):
    values = {
        "collective": "all_reduce",
        "nodes": 2,
        "gpus": 16,
        "message_bytes": 2**30,
        "busbw_gbytes_per_s": Decimal("455.85"),
        "basis": "third-party",
        "source_url": SOURCE,
        "verified_at": NOW.date(),
    } | fields
    return CollectiveResult.objects.create(instance=c["instance"], **values)


BAD_ROWS = {
    "provider_slug_one_word": lambda c: Provider.objects.create(
        slug="two-words", name="x", website="https://x.example", kind="specialist"
    ),
    "provider_home_currency_iso": lambda c: Provider.objects.create(
        slug="x", name="x", website="https://x.example", kind="specialist", home_currency="usd"
    ),
    "provider_kind_valid": lambda c: Provider.objects.create(
        slug="x", name="x", website="https://x.example", kind="reseller"
    ),
    "region_unique_code": lambda c: Region.objects.create(provider=c["provider"], code="us-east-1"),
    "region_geo_valid": lambda c: Region.objects.create(
        provider=c["provider"], code="x", geo="mars"
    ),
    "region_code_not_empty": lambda c: Region.objects.create(provider=c["provider"], code=""),
    "gpu_slug_format": lambda c: GpuModel.objects.create(
        slug="H100_SXM", vendor="nvidia", name="x", form_factor="sxm", memory_gib=80
    ),
    "gpu_memory_positive": lambda c: GpuModel.objects.create(
        slug="x", vendor="nvidia", name="x", form_factor="sxm", memory_gib=0
    ),
    "gpu_tflops_positive": lambda c: GpuModel.objects.create(
        slug="x", vendor="nvidia", name="x", form_factor="sxm", memory_gib=8, bf16_dense_tflops=0
    ),
    "gpu_nvlink_generation_range": lambda c: GpuModel.objects.create(
        slug="x", vendor="nvidia", name="x", form_factor="sxm", memory_gib=8, nvlink_generation=9
    ),
    "gpu_pcie_generation_range": lambda c: GpuModel.objects.create(
        slug="x", vendor="nvidia", name="x", form_factor="pcie", memory_gib=8, pcie_generation=0
    ),
    "instance_gpu_count_positive": lambda c: InstanceType.objects.create(
        provider=c["provider"], gpu=c["gpu"], name="zero", slug="zero", gpu_count=0
    ),
    "instance_slug_format": lambda c: InstanceType.objects.create(
        provider=c["provider"], gpu=c["gpu"], name="p5.48xlarge", slug="p5.48xlarge", gpu_count=8
    ),
    "instance_unique_slug": lambda c: InstanceType.objects.create(
        provider=c["provider"], gpu=c["gpu"], name="other", slug="hgx-8x", gpu_count=8
    ),
    "instance_unique_name": lambda c: InstanceType.objects.create(
        provider=c["provider"], gpu=c["gpu"], name="hgx.8x", slug="other", gpu_count=8
    ),
    "instance_gpu_basis_valid": lambda c: InstanceType.objects.create(
        provider=c["provider"], gpu=c["gpu"], name="b", slug="b", gpu_count=8, gpu_basis="rumour"
    ),
    "instance_vcpus_positive": lambda c: InstanceType.objects.create(
        provider=c["provider"], gpu=c["gpu"], name="v", slug="v", gpu_count=8, vcpus=0
    ),
    "instance_ram_positive": lambda c: InstanceType.objects.create(
        provider=c["provider"], gpu=c["gpu"], name="r", slug="r", gpu_count=8, ram_gib=0
    ),
    "gpulink_technology_valid": lambda c: _link(c["instance"], technology="pcie", topology="mesh"),
    "gpulink_topology_valid": lambda c: _link(c["instance"], technology="nvlink", topology="ring"),
    "gpulink_none_has_no_details": lambda c: _link(
        c["instance"], technology="none", bandwidth_gbytes_per_s=900
    ),
    "gpulink_topology_set_unless_none": lambda c: _link(
        c["instance"], technology="nvlink", topology=""
    ),
    "gpulink_domain_at_least_two": lambda c: _link(
        c["instance"], technology="nvlink", topology="nvswitch", domain_size=0
    ),
    "gpulink_bandwidth_positive": lambda c: _link(
        c["instance"], technology="nvlink", topology="nvswitch", bandwidth_gbytes_per_s=0
    ),
    "gpulink_generation_range": lambda c: _link(
        c["instance"], technology="nvlink", topology="nvswitch", generation=0
    ),
    "fabric_technology_valid": lambda c: _fabric(c["instance"], technology="myrinet"),
    "fabric_generation_matches_technology": lambda c: _fabric(
        c["instance"], technology="infiniband", generation="efa-v2"
    ),
    "fabric_bandwidth_positive": lambda c: _fabric(c["instance"], bandwidth_gbits_per_s=0),
    "fabric_port_speed_positive": lambda c: _fabric(c["instance"], port_speed_gbits_per_s=0),
    "fabric_nics_positive": lambda c: _fabric(c["instance"], nics=0),
    "fabric_max_nodes_positive": lambda c: _fabric(c["instance"], max_nodes=0),
    "fabric_non_rdma_has_no_rdma": lambda c: _fabric(
        c["instance"], technology="tcpx", gpudirect_rdma=True
    ),
    "fabric_rdma_technology_is_rdma": lambda c: _fabric(
        c["instance"], technology="infiniband", rdma=False
    ),
    "fabric_single_node_max_one": lambda c: _fabric(c["instance"], multi_node=False, max_nodes=4),
    "fabric_network_positive": lambda c: _fabric(c["instance"], network_gbits_per_s=0),
    "fabric_ethernet_has_no_backend": lambda c: _fabric(
        c["instance"], technology="ethernet", bandwidth_gbits_per_s=100
    ),
    "fabric_ethernet_shares_nothing": lambda c: _fabric(
        c["instance"], technology="ethernet", network_gbits_per_s=100, network_shared=True
    ),
    "exchangerate_unique": lambda c: [
        ExchangeRate.objects.create(
            currency="CNY", rate_date=NOW.date(), usd_per_unit=Decimal("0.14"), source_url=SOURCE
        )
        for _ in range(2)
    ],
    "exchangerate_currency_iso": lambda c: ExchangeRate.objects.create(
        currency="cny", rate_date=NOW.date(), usd_per_unit=1, source_url=SOURCE
    ),
    "exchangerate_rate_positive": lambda c: ExchangeRate.objects.create(
        currency="CNY", rate_date=NOW.date(), usd_per_unit=0, source_url=SOURCE
    ),
    "offer_natural_key": lambda c: [make_offer(c["instance"], c["region"]) for _ in range(2)],
    "offer_price_nonneg": lambda c: make_offer(
        c["instance"], c["region"], price="-1", per_gpu=None
    ),
    "offer_gpu_hour_price_nonneg": lambda c: make_offer(
        c["instance"], c["region"], per_gpu=Decimal(-1)
    ),
    "offer_currency_iso": lambda c: make_offer(c["instance"], c["region"], currency=""),
    "offer_kind_valid": lambda c: make_offer(c["instance"], c["region"], kind="interrupt"),
    "offer_term_only_reserved": lambda c: make_offer(
        c["instance"], c["region"], kind="reserved", term_months=0
    ),
    "offer_has_source": lambda c: Offer.objects.create(
        instance=c["instance"],
        region=c["region"],
        kind="spot",
        price_per_hour=1,
        currency="USD",
        observed_at=NOW,
        origin="scraper",
        source_url="",
    ),
    "priceobservation_unique_time": lambda c: [
        PriceObservation.objects.create(
            offer=c["offer"], price_per_hour=1, currency="USD", observed_at=NOW
        )
        for _ in range(2)
    ],
    "priceobservation_price_nonneg": lambda c: PriceObservation.objects.create(
        offer=c["offer"], price_per_hour=-5, currency="USD", observed_at=NOW
    ),
    "pricecheck_one_per_source": lambda c: [
        PriceCheck.objects.create(
            offer=c["offer"],
            source="skypilot",
            price_per_hour=1,
            currency="USD",
            source_url="https://github.com/skypilot-org/skypilot-catalog",
        )
        for _ in range(2)
    ],
    "offer_basis_valid": lambda c: Offer.objects.filter(pk=c["offer"].pk).update(
        source="skypilot", basis="provider"
    ),
    "pricecheck_price_positive": lambda c: PriceCheck.objects.create(
        offer=c["offer"],
        source="skypilot",
        price_per_hour=0,
        currency="USD",
        source_url="https://github.com/skypilot-org/skypilot-catalog",
    ),
    "priceobservation_currency_iso": lambda c: PriceObservation.objects.create(
        offer=c["offer"], price_per_hour=5, currency="", observed_at=NOW
    ),
    "scraperun_status_valid": lambda c: ScrapeRun.objects.create(
        provider=c["provider"], status="exploded"
    ),
    "scraperun_finish_after_start": lambda c: ScrapeRun.objects.create(
        provider=c["provider"], started_at=NOW, finished_at=datetime(2020, 1, 1, tzinfo=UTC)
    ),
    "refreshhealth_state_valid": lambda c: RefreshHealth.objects.create(
        provider=c["provider"], state="grumpy", stale_after=timedelta(hours=12), checked_at=NOW
    ),
    "skureview_unique_sku": lambda c: [
        SkuReview.objects.create(provider=c["provider"], sku="gpu_9x_mystery") for _ in range(2)
    ],
    "skureview_mapped_has_target": lambda c: SkuReview.objects.create(
        provider=c["provider"], sku="x", status="mapped"
    ),
    "catalogversion_single_row": lambda c: CatalogVersion.objects.create(id=2),
    "correction_topic_valid": lambda c: CorrectionReport.objects.create(
        instance=c["instance"], topic="vibes", message="wrong", source_url=SOURCE
    ),
    "correction_status_valid": lambda c: CorrectionReport.objects.create(
        instance=c["instance"], topic="price", message="wrong", source_url=SOURCE, status="maybe"
    ),
    "correction_has_message": lambda c: CorrectionReport.objects.create(
        instance=c["instance"], topic="price", message="", source_url=SOURCE
    ),
    # Every stored URL is http(s): a link never runs script (see tests/security/).
    "provider_source_url_http": lambda c: Provider.objects.update(source_url=JS_URL),
    "provider_website_http": lambda c: Provider.objects.update(website="ftp://x.example/"),
    "gpu_source_url_http": lambda c: GpuModel.objects.update(source_url=JS_URL),
    "instance_source_url_http": lambda c: InstanceType.objects.update(source_url=JS_URL),
    "gpulink_source_url_http": lambda c: GpuLink.objects.update(source_url="data:text/html,x"),
    "fabric_source_url_http": lambda c: Fabric.objects.update(source_url=JS_URL),
    "fabric_cluster_source_url_http": lambda c: Fabric.objects.update(cluster_source_url=JS_URL),
    "exchangerate_source_url_http": lambda c: ExchangeRate.objects.create(
        currency="EUR", rate_date=NOW.date(), usd_per_unit=1, source_url=JS_URL
    ),
    "offer_source_url_http": lambda c: Offer.objects.update(source_url=JS_URL),
    "correction_source_url_http": lambda c: CorrectionReport.objects.create(
        instance=c["instance"], topic="price", message="wrong", source_url=JS_URL
    ),
    # Purchase modes: one per kind and term, a term only on reserved, sourced and dated.
    "purchasemode_source_url_http": lambda c: _mode(c, source_url=JS_URL),
    "purchasemode_one_per_kind_and_term": lambda c: [
        _mode(c, kind="reserved", term_months=None) for _ in range(2)
    ],
    "purchasemode_kind_valid": lambda c: _mode(c, kind="lease"),
    "purchasemode_term_only_reserved": lambda c: _mode(c, kind="spot", term_months=None),
    "purchasemode_hours_ordered": lambda c: _mode(c, min_hours=48, max_hours=24),
    "purchasemode_min_gpus_positive": lambda c: _mode(c, min_gpus=0),
    "purchasemode_sourced": lambda c: _mode(c, verified_at=None),
    # Readiness: one row per fact, its value in its own field, known fabric kinds, sourced.
    "readiness_source_url_http": lambda c: _fact(c, source_url=JS_URL),
    "readiness_one_per_fact": lambda c: [_fact(c) for _ in range(2)],
    "readiness_fact_valid": lambda c: _fact(c, fact="vibes"),
    "readiness_basis_valid": lambda c: _fact(c, basis="rumour"),
    "readiness_value_fits_fact": lambda c: _fact(c, fact="max_self_serve_gpus", flag=None),
    "readiness_fabrics_known": lambda c: _fact(c, fact="fabrics", flag=None, fabrics=["nvlink"]),
    "readiness_sourced": lambda c: _fact(c, source_url=""),
    # Published collective results: one per run and source, positive figures, sourced and dated.
    "collectiveresult_source_url_http": lambda c: _result(c, source_url=JS_URL),
    "collectiveresult_one_per_run": lambda c: [_result(c) for _ in range(2)],
    "collectiveresult_collective_valid": lambda c: _result(c, collective="all_the_things"),
    "collectiveresult_basis_valid": lambda c: _result(c, basis="platform"),
    "collectiveresult_gpus_cover_nodes": lambda c: _result(c, nodes=4, gpus=2),
    "collectiveresult_message_positive": lambda c: _result(c, message_bytes=0),
    "collectiveresult_busbw_positive": lambda c: _result(c, busbw_gbytes_per_s=Decimal("0")),
    "collectiveresult_sourced": lambda c: _result(c, verified_at=None),
}


@pytest.fixture
def context(provider, region, gpu, instance):
    return {
        "provider": provider,
        "region": region,
        "gpu": gpu,
        "instance": instance,
        "offer": make_offer(instance, region, kind="spot"),
    }


@pytest.mark.parametrize("constraint", sorted(BAD_ROWS))
def test_each_constraint_rejects_its_bad_row(context, constraint):
    assert_violates(constraint, lambda: BAD_ROWS[constraint](context))


def test_every_named_constraint_has_a_bad_row_test():
    from django.apps import apps

    names = {
        c.name
        for model in apps.get_app_config("offerings").get_models()
        for c in model._meta.constraints
    }
    assert names == set(BAD_ROWS)


def test_valid_rows_are_accepted(context):
    instance = make_instance(
        context["provider"],
        context["gpu"],
        name="gb200.4x",
        gpu_count=4,
        link={
            "technology": "nvlink",
            "topology": "nvswitch",
            "domain_size": 72,
            "generation": 5,
            "bandwidth_gbytes_per_s": 1800,
        },
        fabric={"technology": "tcpx", "rdma": False, "gpudirect_rdma": False},
    )
    make_offer(instance, context["region"], kind="reserved", term_months=12)
    assert instance.gpu_link.domain_size == 72


@pytest.mark.parametrize(
    "fields",
    [
        {"fact": "sharp", "flag": None},  # a yes/no fact without its yes or no
        {"fact": "sharp", "flag": True, "gpus": 8},  # a second value in another field
        {"fact": "egress_usd_per_gb", "flag": None},  # a price fact without a price
        {"fact": "fabrics", "flag": None, "fabrics": []},  # no fabric kind at all
    ],
    ids=["flag-missing", "two-values", "price-missing", "no-fabrics"],
)
def test_a_readiness_value_in_the_wrong_field_is_refused(context, fields):
    assert_violates("readiness_value_fits_fact", lambda: _fact(context, **fields))


def test_valid_purchase_modes_and_readiness_facts_are_accepted(context):
    _mode(context, kind="reserved", term_months=36)
    _mode(context, kind="reserved", term_months=None)
    _mode(context, kind="capacity-block", min_hours=24, max_hours=24, min_gpus=8)
    _fact(context, fact="fabrics", flag=None, fabrics=["infiniband", "roce"])
    _fact(context, fact="egress_usd_per_gb", flag=None, usd_per_gb=Decimal("0"))
    _fact(context, fact="max_self_serve_gpus", flag=None, gpus=64)
    assert PurchaseMode.objects.count() == 3


def test_valid_collective_results_are_accepted(context):
    _result(context)
    _result(context, message_bytes=8 * 2**30)  # another size of the same run
    _result(context, source_url="https://other.example/nccl")  # the same run, another source
    _result(context, nodes=1, gpus=8, basis="provider", collective="all_gather")
    assert CollectiveResult.objects.count() == 4
