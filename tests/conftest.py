"""Shared test data builders. Every test runs against a real PostgreSQL database."""

from datetime import UTC, date, datetime
from decimal import Decimal

import pytest

from offerings.models import (
    Fabric,
    GpuLink,
    GpuModel,
    InstanceType,
    Offer,
    Provider,
    Region,
)

SOURCE = "https://docs.example.com/spec"


@pytest.fixture
def provider(db) -> Provider:
    return Provider.objects.create(
        slug="acme", name="Acme Cloud", website="https://acme.example", kind="specialist"
    )


@pytest.fixture
def region(provider) -> Region:
    return Region.objects.create(provider=provider, code="us-east-1", name="Virginia", geo="na")


@pytest.fixture
def gpu(db) -> GpuModel:
    return GpuModel.objects.create(
        slug="h100-sxm",
        vendor="nvidia",
        name="H100 SXM",
        form_factor="sxm",
        memory_gib=80,
        nvlink_generation=4,
        bf16_dense_tflops=Decimal("989.4"),
    )


def make_instance(provider, gpu, name="hgx.8x", gpu_count=8, link=None, fabric=None, **extra):
    """Create an instance type with its GPU link and fabric rows (unknown unless given)."""
    slug = extra.pop("slug", None) or name.lower().replace(".", "-").replace("_", "-")
    instance = InstanceType.objects.create(
        provider=provider, name=name, slug=slug, gpu=gpu, gpu_count=gpu_count, **extra
    )
    GpuLink.objects.create(instance=instance, **(link or {"topology": "unknown"}))
    Fabric.objects.create(instance=instance, **(fabric or {}))
    return instance


def make_offer(instance, region, price="10.00", kind="on-demand", term_months=0, **extra):
    price = Decimal(price)
    return Offer.objects.create(
        instance=instance,
        region=region,
        kind=kind,
        term_months=term_months,
        price_per_hour=price,
        currency=extra.pop("currency", "USD"),
        price_per_gpu_hour_usd=extra.pop("per_gpu", price / instance.gpu_count),
        observed_at=extra.pop("observed_at", datetime(2026, 11, 1, tzinfo=UTC)),
        origin="catalog",
        source_url=SOURCE,
        **extra,
    )


@pytest.fixture
def instance(provider, gpu) -> InstanceType:
    return make_instance(
        provider,
        gpu,
        link={
            "technology": "nvlink",
            "generation": 4,
            "topology": "nvswitch",
            "domain_size": 8,
            "bandwidth_gbytes_per_s": 900,
            "source_url": SOURCE,
            "verified_at": date(2026, 11, 1),
        },
        fabric={"technology": "infiniband", "bandwidth_gbits_per_s": 3200, "nics": 8},
    )
