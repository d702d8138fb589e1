"""lint_catalog: the shipped catalog is clean, and each rule catches a crafted bad entry."""

from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError

from offerings.management.commands.lint_catalog import lint_catalog
from tests.catalog_toml import ACME, GPU_GB200, GPU_H100, GPU_L40S, GPU_MI300X, RATES

GPUS = GPU_H100 + GPU_GB200 + GPU_L40S + GPU_MI300X

HEAD = (
    ACME
    + """
[[regions]]
code = "cn-beijing"
geo = "asia"
"""
)

HGX = """
[[instances]]
name = "hgx.H100.8x"
gpu = "h100-sxm"
gpu_count = 8
source_url = "https://acme.example/docs/hgx"
verified_at = 2026-11-01
[instances.nvlink]
basis = "provider"
technology = "nvlink"
generation = 4
topology = "nvswitch"
domain_size = 8
bandwidth_gbytes_per_s = 900
source_url = "https://acme.example/docs/hgx"
verified_at = 2026-11-01
[instances.fabric]
basis = "provider"
technology = "infiniband"
port_speed_gbits_per_s = 400
nics = 8
bandwidth_gbits_per_s = 3200
rdma = true
gpudirect_rdma = true
multi_node = true
source_url = "https://acme.example/docs/network"
verified_at = 2026-11-01
[[instances.prices]]
region = "cn-beijing"
kind = "on-demand"
price_per_hour = "160"
currency = "CNY"
observed_at = 2026-11-01T00:00:00Z
source_url = "https://acme.example/pricing"
basis = "provider"
"""

NVL72 = """
[[instances]]
name = "gb200.4x"
gpu = "gb200"
gpu_count = 4
source_url = "https://acme.example/docs/gb200"
verified_at = 2026-11-01
[instances.nvlink]
basis = "provider"
technology = "nvlink"
generation = 5
topology = "nvswitch"
domain_size = 72
bandwidth_gbytes_per_s = 1800
source_url = "https://acme.example/docs/gb200"
verified_at = 2026-11-01
[instances.fabric]
basis = "provider"
technology = "infiniband"
source_url = "https://acme.example/docs/network"
verified_at = 2026-11-01
"""

PCIE = """
[[instances]]
name = "pcie.L40S.4x"
gpu = "l40s"
gpu_count = 4
source_url = "https://acme.example/docs/pcie"
verified_at = 2026-11-01
[instances.nvlink]
basis = "provider"
technology = "none"
source_url = "https://acme.example/docs/pcie"
verified_at = 2026-11-01
[instances.fabric]
basis = "provider"
technology = "ethernet"
source_url = "https://acme.example/docs/pcie"
verified_at = 2026-11-01
"""

MI300X = """
[[instances]]
name = "mi300x.8x"
gpu = "mi300x"
gpu_count = 8
source_url = "https://acme.example/docs/amd"
verified_at = 2026-11-01
[instances.nvlink]
basis = "provider"
technology = "infinity-fabric"
topology = "mesh"
domain_size = 8
bandwidth_gbytes_per_s = 896
source_url = "https://acme.example/docs/amd"
verified_at = 2026-11-01
[instances.fabric]
basis = "provider"
technology = "roce"
source_url = "https://acme.example/docs/network"
verified_at = 2026-11-01
"""

CLEAN = HEAD + HGX + NVL72 + PCIE + MI300X


def write(root: Path, provider: str = CLEAN, gpus: str = GPUS, overrides: str | None = None):
    (root / "providers").mkdir(parents=True, exist_ok=True)
    (root / "gpus.toml").write_text(gpus)
    (root / "exchange_rates.toml").write_text(RATES)
    (root / "providers" / "acme.toml").write_text(provider)
    if overrides is not None:
        (root / "lint_overrides.toml").write_text(overrides)
    return root


def rules(problems) -> set[str]:
    return {p.rule for p in problems}


def test_the_shipped_fixtures_pass_the_lint():
    shipped = Path(settings.BASE_DIR) / "fixtures"
    problems = lint_catalog(shipped)
    assert problems == [], "\n".join(map(str, problems))


def test_the_command_passes_on_the_shipped_fixtures(capsys):
    call_command("lint_catalog")
    assert "no problems" in capsys.readouterr().out


def test_a_clean_crafted_catalog_passes(tmp_path):
    assert lint_catalog(write(tmp_path)) == []


def test_the_command_exits_1_listing_every_problem(tmp_path, capsys):
    bad = CLEAN.replace("bandwidth_gbytes_per_s = 900", "bandwidth_gbytes_per_s = 600").replace(
        "bandwidth_gbits_per_s = 3200", "bandwidth_gbits_per_s = 1600"
    )
    with pytest.raises(CommandError, match=r"2 problem\(s\)") as error:
        call_command("lint_catalog", fixtures=write(tmp_path, bad))
    assert error.value.returncode == 1
    err = capsys.readouterr().err
    assert "acme/hgx-h100-8x: [nvlink-bandwidth]" in err
    assert "acme/hgx-h100-8x: [fabric-bandwidth]" in err


BROKEN = [
    # (id, text replaced in CLEAN, replacement, rule expected)
    (
        "missing-fabric-source",
        'source_url = "https://acme.example/docs/network"\nverified_at = 2026-11-01\n[[instances',
        "[[instances",
        "schema",
    ),
    (
        "missing-nvlink-date",
        'source_url = "https://acme.example/docs/hgx"\nverified_at = 2026-11-01\n[instances.fabric]',
        'source_url = "https://acme.example/docs/hgx"\n[instances.fabric]',
        "schema",
    ),
    ("unknown-gpu", 'gpu = "l40s"', 'gpu = "l41s"', "gpu-exists"),
    (
        "domain-smaller-than-switch",
        "domain_size = 8\nbandwidth_gbytes_per_s = 900",
        "domain_size = 4\nbandwidth_gbytes_per_s = 900",
        "domain-size",
    ),
    (
        "domain-larger-than-node",
        "domain_size = 8\nbandwidth_gbytes_per_s = 896",
        "domain_size = 16\nbandwidth_gbytes_per_s = 896",
        "domain-size",
    ),
    (
        "bridge-of-eight",
        'topology = "nvswitch"\ndomain_size = 8',
        'topology = "bridge"\ndomain_size = 8',
        "domain-size",
    ),
    (
        "nvl72-without-switch",
        'topology = "nvswitch"\ndomain_size = 72',
        'topology = "unknown"\ndomain_size = 72',
        "domain-size",
    ),
    (
        "wrong-nvlink-bandwidth",
        "bandwidth_gbytes_per_s = 1800",
        "bandwidth_gbytes_per_s = 900",
        "nvlink-bandwidth",
    ),
    (
        "wrong-if-bandwidth",
        "bandwidth_gbytes_per_s = 896",
        "bandwidth_gbytes_per_s = 1024",
        "nvlink-bandwidth",
    ),
    ("wrong-generation", "generation = 4", "generation = 3", "nvlink-generation"),
    (
        "nvlink-on-l40s",
        'technology = "none"\nsource_url = "https://acme.example/docs/pcie"',
        'technology = "nvlink"\ntopology = "unknown"\nsource_url = "https://acme.example/docs/pcie"',
        "link-technology",
    ),
    (
        "none-on-h100",
        'technology = "nvlink"\ngeneration = 4\ntopology = "nvswitch"\n'
        "domain_size = 8\nbandwidth_gbytes_per_s = 900",
        'technology = "none"',
        "link-technology",
    ),
    (
        "fabric-arithmetic",
        "bandwidth_gbits_per_s = 3200",
        "bandwidth_gbits_per_s = 3000",
        "fabric-bandwidth",
    ),
    (
        "sales-only-and-self-serve",
        "multi_node = true",
        "multi_node = true\nsales_only = true",
        "fabric-consistency",
    ),
    (
        "gdr-over-ethernet",
        'technology = "ethernet"',
        'technology = "unknown"\ngpudirect_rdma = true',
        "fabric-consistency",
    ),
    (
        "ethernet-multi-node-without-its-page",
        'technology = "ethernet"',
        'technology = "ethernet"\nmulti_node = true',
        "multi-node-source",
    ),
    (
        "ethernet-with-a-back-end-figure",
        'technology = "ethernet"',
        'technology = "ethernet"\nbandwidth_gbits_per_s = 100',
        "schema",
    ),
    (
        "currency-without-rate",
        'currency = "CNY"\nobserved_at',
        'currency = "JPY"\nobserved_at',
        "price-currency",
    ),
    (
        "price-in-the-future",
        "observed_at = 2026-11-01T00:00:00Z",
        "observed_at = 2999-01-01T00:00:00Z",
        "price-date",
    ),
    ("no-currency", 'currency = "CNY"\nobserved_at', "observed_at", "schema"),
]


@pytest.mark.parametrize(
    ("before", "after", "rule"), [b[1:] for b in BROKEN], ids=[b[0] for b in BROKEN]
)
def test_each_rule_catches_a_crafted_bad_entry(tmp_path, before, after, rule):
    assert before in CLEAN, "the crafted replacement no longer matches the clean catalog"
    problems = lint_catalog(write(tmp_path, CLEAN.replace(before, after, 1)))
    assert rule in rules(problems), "\n".join(map(str, problems))


def test_duplicate_slugs_are_caught_within_a_provider_and_across_files(tmp_path):
    root = write(tmp_path)
    (root / "providers" / "acme2.toml").write_text(CLEAN)
    problems = lint_catalog(root)
    messages = [str(p) for p in problems if p.rule == "duplicate-slug"]
    assert any("provider also defined" in m for m in messages)
    assert any("file name should be acme.toml" in m for m in messages)

    same_name = HEAD + HGX + HGX.replace('name = "hgx.H100.8x"', 'name = "HGX.H100.8X"')
    # hgx.H100.8x and HGX.H100.8X share the slug hgx-h100-8x: the schema refuses the file.
    problems = lint_catalog(write(tmp_path, same_name))
    assert any("duplicate instance slugs" in p.message for p in problems)

    twice = GPUS + GPUS.split("[[gpus]]")[1].join(["[[gpus]]", ""])
    problems = lint_catalog(write(tmp_path, CLEAN, gpus=twice))
    assert any(p.rule == "duplicate-slug" and p.where == "h100-sxm" for p in problems)


def test_an_override_with_a_source_accepts_a_differing_figure(tmp_path):
    nvl = CLEAN.replace("bandwidth_gbytes_per_s = 900", "bandwidth_gbytes_per_s = 600")
    override = """
[[overrides]]
provider = "acme"
instance = "hgx-h100-8x"
rule = "nvlink-bandwidth"
reason = "the provider states 600 GB/s for this board"
source_url = "https://acme.example/docs/hgx"
"""
    assert rules(lint_catalog(write(tmp_path, nvl))) == {"nvlink-bandwidth"}
    assert lint_catalog(write(tmp_path, nvl, overrides=override)) == []
    # The same override on a clean entry is stale and reported.
    stale = lint_catalog(write(tmp_path, CLEAN, overrides=override))
    assert rules(stale) == {"override"}
    unknown = override.replace('rule = "nvlink-bandwidth"', 'rule = "vibes"')
    assert "override" in rules(lint_catalog(write(tmp_path, nvl, overrides=unknown)))


def test_unreadable_toml_is_reported_not_raised(tmp_path):
    problems = lint_catalog(write(tmp_path, "[provider\nslug="))
    assert rules(problems) == {"schema"}
    assert problems[0].file == "providers/acme.toml"


@pytest.mark.django_db
def test_regional_spreads_over_the_limit_warn_unless_a_reason_is_written(catalog):
    """GCP's a3-highgpu-8g ran 43.07 in us-central1 to 111.82 in europe-west4: a DWS rate mixed
    into on-demand. A spread the lint finds needs a written reason to stay quiet."""
    from offerings.management.commands.lint_catalog import Override, regional_spreads
    from offerings.models import Offer, Region

    assert regional_spreads() == []
    offer = (
        Offer.objects.filter(kind="on-demand", is_active=True).select_related("instance").first()
    )
    instance = offer.instance
    far = Region.objects.create(provider=instance.provider, code="far-away-1", geo="eu")
    Offer.objects.create(
        instance=instance,
        region=far,
        kind="on-demand",
        price_per_hour=offer.price_per_hour * 2,
        currency=offer.currency,
        price_per_gpu_hour_usd=offer.price_per_gpu_hour_usd * 2,
        origin="catalog",
        source_url="https://example.com/prices",
    )
    (line,) = regional_spreads()
    assert line.startswith(f"warning: {instance.provider.slug}/{instance.slug}: on-demand")
    assert "(2.00x), more than 1.6x with no written reason" in line
    reason = Override(
        provider=instance.provider.slug,
        instance=instance.slug,
        rule="price-spread",
        reason="the far region is priced at twice the home one",
        source_url="https://example.com/regions",
    )
    (line,) = regional_spreads([reason])
    assert line.startswith("note: ")
    assert "twice the home one" in line


def test_notes_that_say_sales_need_a_sales_only_purchase_mode(tmp_path):
    said = CLEAN.replace(
        'name = "hgx.H100.8x"',
        'name = "hgx.H100.8x"\nsetup_notes = "Purchase goes through Acme Cloud sales."',
        1,
    )
    problems = lint_catalog(write(tmp_path, said))
    assert [p.rule for p in problems] == ["purchase-sales"]
    # Recorded (on the file's last entry, where a trailing [[instances.purchase_modes]] belongs),
    # the note passes.
    last = CLEAN.rsplit("[[instances]]", 1)
    tail = last[1].replace("\n", '\nsetup_notes = "Sold through Acme sales only."\n', 1)
    recorded = (
        last[0]
        + "[[instances]]"
        + tail
        + (
            '\n[[instances.purchase_modes]]\nkind = "sales-only"\n'
            'source_url = "https://acme.example/docs/hgx"\nverified_at = 2026-11-01\n'
        )
    )
    assert lint_catalog(write(tmp_path, recorded)) == []
    # "Multi-node clusters only through sales" is the fabric's sales_only, not this rule.
    clusters = CLEAN.replace(
        'name = "hgx.H100.8x"',
        'name = "hgx.H100.8x"\nnotes = "Multi-node clusters only through sales."',
        1,
    )
    assert lint_catalog(write(tmp_path, clusters)) == []
