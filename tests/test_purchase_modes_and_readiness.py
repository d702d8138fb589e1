"""Purchase modes of instance types and providers' network readiness: the fixture format, the
load, the database's rules, the APIs, the pages in both languages and the admin's locks."""

from __future__ import annotations

import tomllib
from datetime import date

import pytest
from pydantic import ValidationError

from offerings.models import (
    InstanceType,
    Provider,
    ProviderReadiness,
    PurchaseMode,
)
from offerings.schemas import READINESS_FACTS, GpuCatalog, ProviderCatalog
from offerings.writer.curated import LoadCounts, load_readiness
from tests.catalog_toml import ACME
from tests.conftest import SOURCE, make_offer
from tests.content.test_content import parse, visible_text
from tests.test_admin import curator, errors_of, make_world, submit  # noqa: F401
from tests.test_i18n import english_leaks, untranslated_interface_text
from tests.test_load_catalog import PROVIDER, load, write_fixtures

READINESS = """
[provider.readiness.fabrics]
value = ["infiniband", "roce"]
basis = "provider"
source_url = "https://acme.example/docs/network"
verified_at = 2026-11-01

[provider.readiness.sharp]
value = false
basis = "provider"
source_url = "https://acme.example/docs/network"
verified_at = 2026-11-01

[provider.readiness.egress_usd_per_gb]
value = "0.09"
basis = "provider"
source_url = "https://acme.example/pricing"
verified_at = 2026-11-01
"""

MODES = """
[[instances.purchase_modes]]
kind = "capacity-block"
min_hours = 24
max_hours = 4368
min_gpus = 8
source_url = "https://acme.example/docs/blocks"
verified_at = 2026-11-01

[[instances.purchase_modes]]
kind = "reserved"
term_months = 36
source_url = "https://acme.example/docs/savings"
verified_at = 2026-11-01
"""


def acme(readiness: str = READINESS, modes: str = MODES) -> str:
    """The test provider with readiness facts, and purchase modes on its last type."""
    return ACME + readiness + PROVIDER[len(ACME) :] + modes


def provider_text(readiness: str = READINESS, modes: str = MODES) -> str:
    return (
        acme(readiness, modes)
        .replace("{price}", "160")
        .replace("{observed}", "2026-11-01T00:00:00Z")
    )


def validate(text: str) -> ProviderCatalog:
    return ProviderCatalog.model_validate(tomllib.loads(text))


# -- the fixture format ------------------------------------------------------------------------


def test_the_fixture_format_reads_readiness_and_purchase_modes():
    catalog = validate(provider_text())
    assert list(catalog.provider.readiness.stated()) == ["fabrics", "sharp", "egress_usd_per_gb"]
    assert str(catalog.provider.readiness.egress_usd_per_gb.value) == "0.09"
    modes = catalog.instances[-1].purchase_modes
    assert [(m.kind, m.stored_term) for m in modes] == [("capacity-block", 0), ("reserved", 36)]


BAD_MODES = {
    "a term on a spot mode": ('kind = "spot"\nterm_months = 12', "term_months only applies"),
    "an unknown kind": ('kind = "lease"', "kind"),
    "a longest booking shorter than the shortest": (
        'kind = "capacity-block"\nmin_hours = 48\nmax_hours = 24',
        "max_hours is less than min_hours",
    ),
    "zero GPUs": ('kind = "on-demand"\nmin_gpus = 0', "min_gpus"),
}


@pytest.mark.parametrize("case", sorted(BAD_MODES))
def test_a_bad_purchase_mode_fails_validation_naming_its_field(case):
    body, expected = BAD_MODES[case]
    mode = f'\n[[instances.purchase_modes]]\n{body}\nsource_url = "{SOURCE}"\nverified_at = 2026-11-01\n'
    with pytest.raises(ValidationError, match=expected):
        validate(provider_text(modes=mode))


def test_a_purchase_mode_without_its_source_or_date_fails_validation():
    mode = '\n[[instances.purchase_modes]]\nkind = "on-demand"\nverified_at = 2026-11-01\n'
    with pytest.raises(ValidationError, match="source_url"):
        validate(provider_text(modes=mode))
    mode = f'\n[[instances.purchase_modes]]\nkind = "on-demand"\nsource_url = "{SOURCE}"\n'
    with pytest.raises(ValidationError, match="verified_at"):
        validate(provider_text(modes=mode))


def test_two_purchase_modes_of_the_same_kind_and_term_fail_validation():
    twice = MODES.split("[[instances.purchase_modes]]")[2]
    modes = MODES + "\n[[instances.purchase_modes]]" + twice
    with pytest.raises(ValidationError, match="two purchase modes of the same kind and term"):
        validate(provider_text(modes=modes))


def _fact(name: str, value: str, extra: str = 'basis = "provider"') -> str:
    return (
        f"\n[provider.readiness.{name}]\nvalue = {value}\n{extra}\n"
        f'source_url = "{SOURCE}"\nverified_at = 2026-11-01\n'
    )


BAD_FACTS = {
    "an unknown fact": (_fact("vibes", "true"), "vibes"),
    "a word for a yes/no": (_fact("sharp", '"yes"'), "sharp.value"),
    "no fabric kinds": (_fact("fabrics", "[]"), "fabrics.value"),
    "an unknown fabric kind": (_fact("fabrics", '["nvlink"]'), "fabrics.value"),
    "a fabric listed twice": (_fact("fabrics", '["roce", "roce"]'), "listed twice"),
    "zero GPUs": (_fact("max_self_serve_gpus", "0"), "max_self_serve_gpus.value"),
    "a negative egress price": (_fact("egress_usd_per_gb", '"-0.01"'), "egress_usd_per_gb"),
    "no basis": (_fact("sharp", "true", extra=""), "basis"),
    "an unknown basis": (_fact("sharp", "true", extra='basis = "rumour"'), "basis"),
}


@pytest.mark.parametrize("case", sorted(BAD_FACTS))
def test_a_bad_readiness_fact_fails_validation_naming_its_field(case):
    fact, expected = BAD_FACTS[case]
    with pytest.raises(ValidationError, match=expected):
        validate(provider_text(readiness=fact))


def test_lint_catalog_names_the_file_of_a_bad_readiness_fact(tmp_path):
    from offerings.management.commands.lint_catalog import lint_catalog

    write_fixtures(tmp_path, provider=provider_text(readiness=_fact("sharp", '"maybe"')))
    problems = [str(p) for p in lint_catalog(tmp_path)]
    assert any("acme.toml" in p and "sharp" in p for p in problems), problems


# -- the load ------------------------------------------------------------------------------------


def test_loading_stores_the_curated_modes_and_facts_and_a_second_load_changes_nothing(db, tmp_path):
    root = write_fixtures(tmp_path, provider=provider_text())
    load(root)
    pcie = InstanceType.objects.get(slug="pcie-l40s-4x")
    block, reserved = pcie.purchase_modes.order_by("kind")
    assert (block.kind, block.term_months, block.min_hours, block.max_hours, block.min_gpus) == (
        "capacity-block",
        0,
        24,
        4368,
        8,
    )
    assert (reserved.kind, reserved.term_months, reserved.verified_at) == (
        "reserved",
        36,
        date(2026, 11, 1),
    )
    facts = {row.fact: row for row in ProviderReadiness.objects.filter(provider__slug="acme")}
    assert facts["fabrics"].value == ["infiniband", "roce"]
    assert facts["sharp"].value is False  # a stated no, not unknown
    assert str(facts["egress_usd_per_gb"].value) == "0.0900"
    assert "gpudirect_rdma" not in facts  # unknown: no row

    second = load(root)
    assert "no changes" in second
    assert "purchasemode     created    0  updated    0  unchanged    2" in second


def test_a_changed_mode_is_updated_and_a_dropped_one_removed(db, tmp_path):
    load(write_fixtures(tmp_path, provider=provider_text()))
    changed = MODES.replace("min_gpus = 8", "min_gpus = 16").split("[[instances.purchase_modes]]")
    load(
        write_fixtures(
            tmp_path, provider=provider_text(modes="[[instances.purchase_modes]]".join(changed[:2]))
        )
    )
    rows = PurchaseMode.objects.filter(instance__slug="pcie-l40s-4x")
    assert [(m.kind, m.min_gpus) for m in rows] == [("capacity-block", 16)]


def test_a_dropped_fact_is_removed_but_a_curators_own_row_stays(db, tmp_path):
    root = write_fixtures(tmp_path, provider=provider_text())
    load(root)
    provider = Provider.objects.get(slug="acme")
    ProviderReadiness.objects.create(
        provider=provider,
        fact="managed_slurm",
        flag=True,
        basis="provider",
        source_url=SOURCE,
        verified_at=date(2026, 11, 2),
        locked_fields=["flag"],
    )
    load(
        write_fixtures(
            tmp_path,
            provider=provider_text(readiness=READINESS.split("[provider.readiness.sharp]")[0]),
        )
    )
    assert sorted(provider.readiness.values_list("fact", flat=True)) == ["fabrics", "managed_slurm"]


def test_a_locked_readiness_value_survives_a_load(db, tmp_path):
    root = write_fixtures(tmp_path, provider=provider_text())
    load(root)
    ProviderReadiness.objects.filter(fact="sharp").update(flag=True, locked_fields=["flag"])
    load(
        write_fixtures(
            tmp_path,
            provider=provider_text(
                readiness=READINESS.replace("false", 'false\nnotes = "checked"')
            ),
        )
    )
    sharp = ProviderReadiness.objects.get(fact="sharp")
    assert sharp.flag is True
    assert sharp.notes == "checked"  # what is not locked still follows the file


def test_the_shipped_fixtures_validate_and_carry_sourced_examples():
    from pathlib import Path

    from django.conf import settings

    root = Path(settings.BASE_DIR) / "fixtures"
    GpuCatalog.model_validate(tomllib.loads((root / "gpus.toml").read_text()))
    catalogs = [
        ProviderCatalog.model_validate(tomllib.loads(path.read_text()))
        for path in sorted((root / "providers").glob("*.toml"))
    ]
    facts = [fact for c in catalogs for fact in c.provider.readiness.stated().values()]
    modes = [mode for c in catalogs for i in c.instances for mode in i.purchase_modes]
    assert facts
    assert modes
    assert all(str(item.source_url).startswith("https://") for item in [*facts, *modes])


# The providers whose readiness facts were researched when the cards were built (December 2026).
# The clouds added for breadth later (issue 30) document far less in the stored copies; what they
# state is on their cards, and how much is known of them shows in the coverage table instead.
READINESS_PROVIDERS = [
    "alibaba",
    "aws",
    "azure",
    "coreweave",
    "crusoe",
    "datacrunch",
    "gcp",
    "jarvislabs",
    "lambda",
    "modal",
    "nebius",
    "oci",
    "otc",
    "paperspace",
    "runpod",
    "scaleway",
    "tencent",
    "together",
    "vast",
]


def test_at_least_half_of_all_readiness_facts_are_known_in_the_shipped_fixtures():
    from pathlib import Path

    from django.conf import settings

    from offerings.schemas import READINESS_FACTS

    paths = [
        Path(settings.BASE_DIR) / "fixtures" / "providers" / f"{slug}.toml"
        for slug in READINESS_PROVIDERS
    ]
    catalogs = [ProviderCatalog.model_validate(tomllib.loads(p.read_text())) for p in paths]
    known = sum(len(c.provider.readiness.stated()) for c in catalogs)
    assert known * 2 >= len(catalogs) * len(READINESS_FACTS), (known, len(catalogs))
    # Every provider has a card with something on it.
    assert all(c.provider.readiness.stated() for c in catalogs)


def test_p6_b300_is_bought_through_capacity_blocks_and_savings_plans_per_its_launch_post():
    from pathlib import Path

    from django.conf import settings

    path = Path(settings.BASE_DIR) / "fixtures" / "providers" / "aws.toml"
    catalog = ProviderCatalog.model_validate(tomllib.loads(path.read_text()))
    (b300,) = [i for i in catalog.instances if i.name == "p6-b300.48xlarge"]
    kinds = {mode.kind for mode in b300.purchase_modes}
    assert {"capacity-block", "reserved"} <= kinds
    assert "on-demand" not in kinds
    assert not [p for p in b300.prices if p.kind == "on-demand"]
    assert all("p6-b300" in str(mode.source_url) for mode in b300.purchase_modes)


# -- the API -------------------------------------------------------------------------------------


@pytest.fixture
def priced(catalog):
    """The `ib` type: a curated capacity-block mode, and on-demand and 12-month reserved prices."""
    instance = catalog["ib"]
    region = instance.offers.first().region
    make_offer(instance, region, kind="reserved", term_months=12, price="50")
    PurchaseMode.objects.create(
        instance=instance,
        kind="capacity-block",
        min_hours=24,
        max_hours=336,
        source_url="https://a.example/blocks",
        verified_at=date(2026, 11, 20),
    )
    PurchaseMode.objects.create(
        instance=instance,
        kind="reserved",
        term_months=12,
        min_gpus=8,
        source_url="https://a.example/savings",
        verified_at=date(2026, 11, 21),
    )
    return instance


def test_api_instances_lists_sourced_purchase_modes_curated_first_then_from_prices(client, priced):
    rows = client.get("/api/instances?provider=aws&page_size=200").json()["results"]
    modes = next(row for row in rows if row["id"] == priced.pk)["purchase_modes"]
    assert modes == [
        {
            "kind": "on-demand",
            "term_months": 0,
            "min_hours": None,
            "max_hours": None,
            "min_gpus": None,
            "source_url": SOURCE,  # the price's own source
            "verified_at": "2026-11-01",
        },
        {
            "kind": "spot",
            "term_months": 0,
            "min_hours": None,
            "max_hours": None,
            "min_gpus": None,
            "source_url": SOURCE,
            "verified_at": "2026-11-01",
        },
        {
            "kind": "reserved",
            "term_months": 12,
            "min_hours": None,
            "max_hours": None,
            "min_gpus": 8,
            "source_url": "https://a.example/savings",  # the curated mode wins over the price
            "verified_at": "2026-11-21",
        },
        {
            "kind": "capacity-block",
            "term_months": 0,
            "min_hours": 24,
            "max_hours": 336,
            "min_gpus": None,
            "source_url": "https://a.example/blocks",
            "verified_at": "2026-11-20",
        },
    ]
    unpriced = [row for row in rows if not row["prices"]]
    assert all(row["purchase_modes"] == [] for row in unpriced)  # nothing invented


def test_an_undated_price_gives_a_mode_with_no_date(client, catalog):
    instance = catalog["ib"]
    instance.offers.update(observed_at=None)
    row = client.get(f"/api/instances?ids={instance.pk}&provider=aws").json()["results"]
    modes = next(r for r in row if r["id"] == instance.pk)["purchase_modes"]
    assert modes[0]["kind"] == "on-demand"
    assert modes[0]["verified_at"] is None


def test_the_api_query_count_stays_flat_with_purchase_modes(
    client, priced, django_assert_max_num_queries
):
    for row in InstanceType.objects.exclude(pk=priced.pk):
        PurchaseMode.objects.create(
            instance=row, kind="spot", source_url=SOURCE, verified_at=date(2026, 11, 1)
        )
    # The page's ids, then the rows not kept in full with their offers, modes and results.
    with django_assert_max_num_queries(8):
        assert client.get("/api/instances?page_size=200").status_code == 200


def _readiness(provider: Provider, fact: str, **value) -> ProviderReadiness:
    return ProviderReadiness.objects.create(
        provider=provider,
        fact=fact,
        basis=value.pop("basis", "provider"),
        source_url=SOURCE,
        verified_at=date(2026, 11, 1),
        **value,
    )


@pytest.fixture
def ready(catalog):
    aws = Provider.objects.get(slug="aws")
    _readiness(aws, "fabrics", fabrics=["efa"])
    _readiness(aws, "sharp", flag=False)
    _readiness(aws, "max_self_serve_gpus", gpus=512, basis="third-party")
    _readiness(aws, "egress_usd_per_gb", usd_per_gb="0.09")
    Provider.objects.create(
        slug="skypilot", name="SkyPilot", website="https://s.example", kind="price-source"
    )
    return aws


def test_api_providers_answers_every_fact_of_every_provider_or_null(client, ready):
    body = client.get("/api/providers").json()
    assert set(body) == {"results"}
    slugs = [row["slug"] for row in body["results"]]
    assert slugs == ["aws", "datacrunch", "gcp"]  # the price source has no place here
    aws = body["results"][0]
    assert aws["name"] == "AWS"
    assert aws["url"] == "http://testserver/providers/aws/"
    assert list(aws["readiness"]) == list(READINESS_FACTS)
    # The fabric kinds are computed from the provider's listed types (ib.8x, efa.8x, pcie.4x);
    # the curated row that says only EFA is kept beside them, not in their place.
    fabrics = aws["readiness"]["fabrics"]
    assert fabrics["value"] == ["infiniband", "efa", "ethernet"]
    assert fabrics["basis"] == "provider"
    assert fabrics["source_url"] == "http://testserver/?provider=aws"
    assert fabrics["from_types"] == {
        "types": 3,
        "counts": {"infiniband": 1, "efa": 1, "ethernet": 1},
    }
    assert fabrics["stated"] == {
        "value": ["efa"],
        "basis": "provider",
        "source_url": SOURCE,
        "verified_at": "2026-11-01",
    }
    assert aws["readiness"]["sharp"]["value"] is False
    assert aws["readiness"]["max_self_serve_gpus"]["value"] == 512
    assert aws["readiness"]["max_self_serve_gpus"]["basis"] == "third-party"
    assert aws["readiness"]["egress_usd_per_gb"]["value"] == 0.09
    # Both RDMA types have GPUDirect RDMA: the provider's summary says so, from its types.
    assert aws["readiness"]["gpudirect_rdma"]["value"] is True
    assert aws["readiness"]["gpudirect_rdma"]["from_types"]["counts"] == {"yes": 2}
    # Verda's two types have no known fabric and it states nothing: every fact unknown.
    assert all(value is None for value in body["results"][1]["readiness"].values())


def test_api_providers_runs_a_fixed_number_of_queries(client, ready, django_assert_max_num_queries):
    for provider in Provider.objects.exclude(slug="aws"):
        _readiness(provider, "managed_kubernetes", flag=True)
    # The providers, their readiness rows, their listed types' fabrics (and the version).
    with django_assert_max_num_queries(4):
        assert client.get("/api/providers").status_code == 200


def test_the_openapi_document_describes_providers_and_purchase_modes(client, db):
    document = client.get("/api/openapi.json").json()
    operation = document["paths"]["/api/providers"]["get"]
    schema = operation["responses"]["200"]["content"]["application/json"]["schema"]
    provider = schema["properties"]["results"]["items"]
    assert set(provider["properties"]["readiness"]["properties"]) == set(READINESS_FACTS)
    instance = document["paths"]["/api/instances"]["get"]["responses"]["200"]["content"][
        "application/json"
    ]["schema"]["properties"]["results"]["items"]
    mode = instance["properties"]["purchase_modes"]["items"]
    assert "purchase_modes" in instance["required"]
    assert mode["properties"]["kind"]["enum"] == [
        "on-demand",
        "spot",
        "reserved",
        "capacity-block",
        "sales-only",
    ]


def test_a_readiness_write_moves_the_catalog_version(client, ready):
    first = client.get("/api/providers")
    ProviderReadiness.objects.filter(fact="sharp").update(flag=True)
    second = client.get("/api/providers", headers={"if-none-match": first["ETag"]})
    assert second.status_code == 200
    assert second.json()["results"][0]["readiness"]["sharp"]["value"] is True


# -- the pages -----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/providers/", "/zh-hans/providers/"])
def test_the_comparison_page_lists_every_provider_and_says_unknown(client, ready, path):
    response = client.get(path)
    assert response.status_code == 200
    html = response.content.decode()
    assert "SkyPilot" not in html
    for name in ("AWS", "Google", "Verda"):
        assert name in html
    assert "AWS EFA" in html
    assert "$0.09" in html
    assert 'data-label="' in html  # the phone layout labels each cell
    assert "<script>" not in html  # CSP: no inline script
    assert "style=" not in html
    assert "css/readiness.css" in html


def test_the_comparison_page_is_chinese_under_zh_hans(client, ready):
    html = client.get("/zh-hans/providers/").content.decode()
    root = parse(html)
    assert "未知" in html
    assert not english_leaks(visible_text(root))
    assert not untranslated_interface_text(root)


@pytest.mark.parametrize("prefix", ["", "/zh-hans"])
def test_the_provider_page_carries_its_readiness_card(client, ready, prefix):
    html = client.get(f"{prefix}/providers/aws/").content.decode()
    assert 'id="readiness"' in html
    assert SOURCE in html
    root = parse(html)
    if prefix:
        assert not english_leaks(visible_text(root))
        assert not untranslated_interface_text(root)


def test_the_sitemap_lists_the_comparison_page_in_both_languages(client, db):
    body = client.get("/sitemap.xml").content.decode()
    assert "/providers/</loc>" in body
    assert "/zh-hans/providers/" in body


@pytest.mark.parametrize("prefix", ["", "/zh-hans"])
def test_the_detail_page_lists_the_modes_and_says_when_there_is_no_on_demand_price(
    client, priced, prefix
):
    page = client.get(f"{prefix}/instances/aws/ib-8x/").content.decode()
    assert 'id="purchase-modes"' in page
    assert "https://a.example/blocks" in page
    priced.offers.filter(kind="on-demand").delete()
    page = client.get(f"{prefix}/instances/aws/ib-8x/").content.decode()
    if prefix:
        assert "没有按需价格" in page
        assert not english_leaks(visible_text(parse(page)))
    else:
        assert "No on-demand price" in page


def test_a_type_with_no_mode_and_no_price_says_so(client, catalog):
    catalog["ib"].offers.all().delete()
    page = client.get("/instances/aws/ib-8x/").content.decode()
    assert "no source on record says how it is sold" in page


# -- the database's rules and the admin ----------------------------------------------------------


def test_a_readiness_row_must_hold_its_value_in_its_own_field(catalog):
    from django.core.exceptions import ValidationError as FormError

    row = ProviderReadiness(
        provider=Provider.objects.get(slug="aws"),
        fact="sharp",
        gpus=8,
        basis="provider",
        source_url=SOURCE,
        verified_at=date(2026, 11, 1),
    )
    with pytest.raises(FormError) as caught:
        row.full_clean()
    assert set(caught.value.message_dict) >= {"flag", "gpus"}


def test_editing_a_readiness_fact_in_the_provider_admin_locks_it(curator):  # noqa: F811
    provider = make_world()[Provider]
    row = _readiness(provider, "sharp", flag=True)

    response = submit(curator, provider, **{"readiness-0-flag": "false"})

    assert response.status_code == 302, errors_of(response)
    row.refresh_from_db()
    assert row.flag is False
    assert row.locked_fields == ["flag"]
    provider.refresh_from_db()
    assert provider.locked_fields == []

    catalog = validate(provider_text(readiness=_fact("sharp", "true")))
    load_readiness(provider, catalog.provider.readiness, LoadCounts())
    row.refresh_from_db()
    assert row.flag is False  # the curator's word stands


def test_editing_a_purchase_mode_inline_locks_it(curator):  # noqa: F811
    instance = make_world()[InstanceType]
    mode = PurchaseMode.objects.create(
        instance=instance, kind="spot", source_url=SOURCE, verified_at=date(2026, 11, 1)
    )

    response = submit(curator, instance, **{"purchase_modes-0-min_gpus": "16"})

    assert response.status_code == 302, errors_of(response)
    mode.refresh_from_db()
    assert mode.min_gpus == 16
    assert mode.locked_fields == ["min_gpus"]
    assert curator.get(f"/admin/offerings/purchasemode/{mode.pk}/change/").status_code == 200
    assert curator.get("/admin/offerings/providerreadiness/").status_code == 200


def test_a_bad_purchase_mode_in_the_inline_is_a_form_error(curator):  # noqa: F811
    instance = make_world()[InstanceType]
    PurchaseMode.objects.create(
        instance=instance, kind="spot", source_url=SOURCE, verified_at=date(2026, 11, 1)
    )

    response = submit(curator, instance, **{"purchase_modes-0-term_months": "12"})

    assert response.status_code == 200
    assert any("Only a reserved mode has a term" in error for error in errors_of(response))
