"""The curators' admin: staff only, locks what curators edit, refuses bad input, keeps history."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from html.parser import HTMLParser

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from offerings.models import (
    ExchangeRate,
    Fabric,
    GpuLink,
    GpuModel,
    InstanceType,
    Offer,
    PriceObservation,
    Provider,
    Region,
    ScrapeRun,
    SkuReview,
)
from offerings.writer import lockable_fields

pytestmark = pytest.mark.django_db

SOURCE = "https://docs.example.com/spec"

# -- small builders (independent of tests/conftest.py) --------------------------------------------


def make_provider(slug: str = "acme", **extra) -> Provider:
    fields = {"name": slug.title() + " Cloud", "website": f"https://{slug}.example"}
    return Provider.objects.create(slug=slug, kind="specialist", **(fields | extra))


def make_gpu(slug: str = "h100-sxm", **extra) -> GpuModel:
    fields = {"vendor": "nvidia", "name": "H100 SXM", "form_factor": "sxm", "memory_gib": 80}
    return GpuModel.objects.create(slug=slug, **(fields | extra))


def make_region(provider: Provider, code: str = "us-east-1") -> Region:
    return Region.objects.create(provider=provider, code=code, name="Virginia", geo="na")


NVSWITCH = {
    "technology": "nvlink",
    "generation": 4,
    "topology": "nvswitch",
    "domain_size": 8,
    "bandwidth_gbytes_per_s": 900,
}
INFINIBAND = {
    "technology": "infiniband",
    "port_speed_gbits_per_s": 400,
    "nics": 8,
    "bandwidth_gbits_per_s": 3200,
    "rdma": True,
    "gpudirect_rdma": True,
}


def make_instance(
    provider: Provider, gpu: GpuModel, name: str = "hgx.8x", gpu_count: int = 8, **extra
) -> InstanceType:
    link = extra.pop("link", NVSWITCH)
    fabric = extra.pop("fabric", INFINIBAND)
    slug = name.lower().replace(".", "-").replace("_", "-")
    instance = InstanceType.objects.create(
        provider=provider, name=name, slug=slug, gpu=gpu, gpu_count=gpu_count, **extra
    )
    GpuLink.objects.create(instance=instance, source_url=SOURCE, **link)
    Fabric.objects.create(instance=instance, source_url=SOURCE, **fabric)
    return instance


def make_offer(
    instance: InstanceType, region: Region, price: str = "24.00", hours_ago: int = 1, **extra
) -> Offer:
    observed = timezone.now() - timedelta(hours=hours_ago)
    fields = {"kind": "on-demand", "currency": "USD", "origin": "scraper", "source_url": SOURCE}
    return Offer.objects.create(
        instance=instance,
        region=region,
        price_per_hour=Decimal(price),
        price_per_gpu_hour_usd=Decimal(price) / instance.gpu_count,
        observed_at=observed,
        first_seen_at=observed,
        last_seen_at=observed,
        **(fields | extra),
    )


def make_world() -> dict[type, object]:
    """One row of every model, for pages that need an object to show."""
    provider = make_provider()
    gpu = make_gpu()
    region = make_region(provider)
    instance = make_instance(provider, gpu)
    offer = make_offer(instance, region)
    run = ScrapeRun.objects.create(
        provider=provider, status="succeeded", started_at=NOW, finished_at=NOW, fetched=1
    )
    return {
        Provider: provider,
        GpuModel: gpu,
        Region: region,
        InstanceType: instance,
        GpuLink: instance.gpu_link,
        Fabric: instance.fabric,
        Offer: offer,
        PriceObservation: PriceObservation.objects.create(
            offer=offer,
            price_per_hour=offer.price_per_hour,
            currency="USD",
            observed_at=NOW,
            run=run,
        ),
        ScrapeRun: run,
        SkuReview: SkuReview.objects.create(
            provider=provider, sku="gpu_8x_new", parsed={"gpus": 8}
        ),
        ExchangeRate: ExchangeRate.objects.create(
            currency="CNY",
            rate_date=date(2026, 11, 28),
            usd_per_unit=Decimal("0.14"),
            source_url=SOURCE,
        ),
    }


NOW = datetime(2026, 11, 28, 12, tzinfo=UTC)
MODELS = [
    Provider,
    GpuModel,
    Region,
    InstanceType,
    GpuLink,
    Fabric,
    Offer,
    PriceObservation,
    ScrapeRun,
    SkuReview,
    ExchangeRate,
]
ADDABLE = [Provider, GpuModel, Region, InstanceType, GpuLink, Fabric, Offer, ExchangeRate]


def changelist(model: type) -> str:
    return reverse(f"admin:offerings_{model._meta.model_name}_changelist")


def change_page(obj) -> str:
    return reverse(f"admin:offerings_{obj._meta.model_name}_change", args=[obj.pk])


@pytest.fixture
def curator(db) -> Client:
    user = get_user_model().objects.create_superuser("curator", "curator@example.com", "pw")
    client = Client()
    client.force_login(user)
    return client


# -- posting a change form the way a browser does --------------------------------------------------


class _FormReader(HTMLParser):
    """Collect what a browser would submit from the admin's change form."""

    def __init__(self, form_id: str) -> None:
        super().__init__()
        self.form_id = form_id
        self.inside = False
        self.data: dict[str, list[str]] = {}
        self.select: str | None = None
        self.options: list[tuple[str, bool]] = []
        self.textarea: str | None = None
        self.text = ""

    def _add(self, name: str, value: str) -> None:
        self.data.setdefault(name, []).append(value)

    def handle_starttag(self, tag: str, attrs: list) -> None:
        attr = dict(attrs)
        if tag == "form":
            self.inside = attr.get("id") == self.form_id
        if not self.inside:
            return
        name = attr.get("name")
        if tag == "input" and name:
            kind = attr.get("type", "text")
            if kind in ("submit", "button", "image", "file", "reset"):
                return
            if kind in ("checkbox", "radio"):
                if "checked" in attr:
                    self._add(name, attr.get("value") or "on")
                return
            self._add(name, attr.get("value") or "")
        elif tag == "select" and name:
            self.select, self.options = name, []
            self.multiple = "multiple" in attr
        elif tag == "option" and self.select:
            self.options.append((attr.get("value") or "", "selected" in attr))
        elif tag == "textarea" and name:
            self.textarea, self.text = name, ""

    def handle_data(self, data: str) -> None:
        if self.textarea:
            self.text += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self.inside = False
        elif tag == "select" and self.select:
            chosen = [value for value, selected in self.options if selected]
            if not chosen and not self.multiple and self.options:
                chosen = [self.options[0][0]]
            for value in chosen:
                self._add(self.select, value)
            self.select = None
        elif tag == "textarea" and self.textarea:
            # Django renders a newline after <textarea>; browsers drop it.
            self._add(self.textarea, self.text.removeprefix("\n"))
            self.textarea = None


def submit(client: Client, obj, **changes):
    """GET the object's change form, apply `changes` (None removes a key), POST it back."""
    return submit_form(client, change_page(obj), obj._meta.model_name, **changes)


def submit_form(client: Client, url: str, model_name: str, **changes):
    page = client.get(url)
    assert page.status_code == 200
    reader = _FormReader(f"{model_name}_form")
    reader.feed(page.content.decode())
    data = reader.data
    assert "csrfmiddlewaretoken" in data, "change form not found"
    for name, value in changes.items():
        if value is None:
            data.pop(name, None)
        else:
            data[name] = value if isinstance(value, list) else [str(value)]
    return client.post(url, data)


def errors_of(response) -> list[str]:
    """Every error message on a re-rendered change form, main form and inlines."""
    found = [str(e) for errs in response.context["adminform"].form.errors.values() for e in errs]
    for inline in response.context["inline_admin_formsets"]:
        found += [str(e) for e in inline.formset.non_form_errors()]
        for form in inline.formset.forms:
            found += [str(e) for errs in form.errors.values() for e in errs]
    return found


# -- access --------------------------------------------------------------------------------------


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_every_changelist_loads_for_a_superuser(curator, model):
    make_world()

    assert curator.get(changelist(model)).status_code == 200


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_every_change_page_loads_for_a_superuser(curator, model):
    obj = make_world()[model]

    assert curator.get(change_page(obj)).status_code == 200


@pytest.mark.parametrize("model", ADDABLE, ids=lambda m: m.__name__)
def test_every_add_page_loads_where_adding_is_allowed(curator, model):
    assert curator.get(reverse(f"admin:offerings_{model._meta.model_name}_add")).status_code == 200


def test_the_admin_index_lists_every_catalog_model(curator):
    page = curator.get(reverse("admin:index")).content.decode()

    for model in MODELS:
        assert changelist(model) in page


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_anonymous_visitors_are_sent_to_the_login_page(client, model):
    response = client.get(changelist(model))

    assert response.status_code == 302
    assert response["Location"].startswith(reverse("admin:login"))


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_staff_without_permissions_are_refused_every_changelist(client, model):
    user = get_user_model().objects.create_user("intern", is_staff=True)
    client.force_login(user)

    assert client.get(changelist(model)).status_code == 403


def test_a_logged_in_user_who_is_not_staff_is_sent_to_the_login_page(client):
    client.force_login(get_user_model().objects.create_user("buyer"))

    response = client.get(changelist(InstanceType))

    assert response.status_code == 302


# -- the instance type list ----------------------------------------------------------------------


def test_the_instance_list_summarises_nvlink_and_fabric(curator):
    instance = make_world()[InstanceType]
    pcie = make_instance(
        instance.provider,
        instance.gpu,
        name="pcie.4x",
        gpu_count=4,
        link={"technology": "none"},
        fabric={"technology": "ethernet", "network_gbits_per_s": 100},
    )

    page = curator.get(changelist(InstanceType)).content.decode()

    assert "NVLink 4 · nvswitch · 8 GPUs · 900 GB/s" in page
    assert "infiniband · 3,200 Gb/s (8 x 400) · GPUDirect RDMA" in page
    assert "none (PCIe only)" in page
    assert pcie.name in page


def test_the_instance_changelist_with_thirty_rows_runs_a_bounded_number_of_queries(
    curator, django_assert_max_num_queries
):
    provider, gpu = make_provider(), make_gpu()
    region = make_region(provider)
    for number in range(30):
        instance = make_instance(provider, gpu, name=f"hgx.{number}")
        make_offer(instance, region, hours_ago=1 if number % 2 else 500)

    with django_assert_max_num_queries(10):
        response = curator.get(changelist(InstanceType))

    assert response.status_code == 200
    assert len(response.context["cl"].result_list) == 30


def test_the_price_freshness_filter_tells_stale_fresh_and_unpriced_apart(curator):
    provider, gpu = make_provider(), make_gpu()
    region = make_region(provider)
    stale = make_instance(provider, gpu, name="stale.8x")
    make_offer(stale, region, hours_ago=1)
    make_offer(stale, region, kind="spot", hours_ago=24 * 30)
    fresh = make_instance(provider, gpu, name="fresh.8x")
    make_offer(fresh, region, hours_ago=1)
    unpriced = make_instance(provider, gpu, name="unpriced.8x")
    retired = make_offer(unpriced, region, hours_ago=24 * 30)
    retired.is_active = False
    retired.save()

    def listed(value: str) -> set[str]:
        response = curator.get(changelist(InstanceType), {"prices": value})
        return {row.name for row in response.context["cl"].result_list}

    assert listed("stale") == {"stale.8x"}
    assert listed("fresh") == {"fresh.8x"}
    assert listed("none") == {"unpriced.8x"}


def test_searching_instances_finds_them_by_gpu_slug(curator):
    instance = make_world()[InstanceType]
    make_instance(instance.provider, make_gpu("a100-sxm-80gb", name="A100"), name="a100.8x")

    response = curator.get(changelist(InstanceType), {"q": "a100-sxm"})

    assert [row.name for row in response.context["cl"].result_list] == ["a100.8x"]


# -- bulk actions --------------------------------------------------------------------------------


def run_action(client: Client, action: str, *objs):
    model = type(objs[0])
    return client.post(
        changelist(model),
        {"action": action, "_selected_action": [obj.pk for obj in objs]},
        follow=True,
    )


def two_instances() -> tuple[InstanceType, InstanceType]:
    provider, gpu = make_provider(), make_gpu()
    return make_instance(provider, gpu, name="a.8x"), make_instance(provider, gpu, name="b.8x")


def test_marking_instances_verified_sets_the_flag_and_todays_date(curator):
    first, second = two_instances()

    response = run_action(curator, "mark_verified", first, second)

    for instance in (first, second):
        instance.refresh_from_db()
        assert instance.is_verified
        assert instance.verified_at == timezone.localdate()
    assert "Marked verified: 2 instance types." in response.content.decode()


def test_hiding_an_instance_removes_it_from_the_public_list(curator):
    first, second = two_instances()

    response = run_action(curator, "hide", first)

    assert list(InstanceType.objects.visible()) == [second]
    assert "Hid 1 instance type." in response.content.decode()


def test_unhiding_an_instance_brings_it_back(curator):
    first, _ = two_instances()
    InstanceType.objects.update(is_hidden=True)

    response = run_action(curator, "unhide", first)

    assert list(InstanceType.objects.visible()) == [first]
    assert "Unhid 1 instance type." in response.content.decode()


def test_locking_all_fields_locks_the_instance_its_link_and_its_fabric(curator):
    first, second = two_instances()
    first.locked_fields = ["notes", "from_an_old_fixture"]
    first.save()

    response = run_action(curator, "lock_all_fields", first)

    first.refresh_from_db()
    assert set(first.locked_fields) == {*lockable_fields(InstanceType), "from_an_old_fixture"}
    assert GpuLink.objects.get(instance=first).locked_fields == lockable_fields(GpuLink)
    assert Fabric.objects.get(instance=first).locked_fields == lockable_fields(Fabric)
    second.refresh_from_db()
    assert second.locked_fields == []
    assert "Locked every curated field of 1 instance type." in response.content.decode()


def test_unlocking_all_fields_clears_every_lock(curator):
    first, _ = two_instances()
    InstanceType.objects.update(locked_fields=["notes"])
    GpuLink.objects.update(locked_fields=["topology"])
    Fabric.objects.update(locked_fields=["nics"])

    response = run_action(curator, "unlock_all_fields", first)

    assert InstanceType.objects.get(pk=first.pk).locked_fields == []
    assert GpuLink.objects.get(instance=first).locked_fields == []
    assert Fabric.objects.get(instance=first).locked_fields == []
    assert InstanceType.objects.exclude(pk=first.pk).get().locked_fields == ["notes"]
    assert "Unlocked every field of 1 instance type." in response.content.decode()


def test_locked_fields_are_offered_as_the_models_own_field_names():
    assert "gpu_count" in lockable_fields(InstanceType)
    assert "bandwidth_gbytes_per_s" in lockable_fields(GpuLink)
    for name in ("locked_fields", "fixture_digest", "is_verified", "is_hidden", "id"):
        assert name not in lockable_fields(InstanceType)
    assert "instance" not in lockable_fields(Fabric)


# -- curator edits lock themselves ---------------------------------------------------------------


def test_editing_a_field_in_the_instance_form_locks_it(curator):
    instance = make_world()[InstanceType]

    response = submit(curator, instance, vcpus=192, is_verified="on")

    assert response.status_code == 302, errors_of(response)
    instance.refresh_from_db()
    assert instance.vcpus == 192
    assert instance.is_verified
    assert instance.locked_fields == ["vcpus"]


def test_editing_the_gpu_link_inline_locks_the_link_field_not_the_instance(curator):
    instance = make_world()[InstanceType]

    response = submit(curator, instance, **{"gpu_link-0-bandwidth_gbytes_per_s": "1800"})

    assert response.status_code == 302, errors_of(response)
    link = GpuLink.objects.get(instance=instance)
    assert link.bandwidth_gbytes_per_s == 1800
    assert link.locked_fields == ["bandwidth_gbytes_per_s"]
    assert Fabric.objects.get(instance=instance).locked_fields == []
    instance.refresh_from_db()
    assert instance.locked_fields == []


def test_saving_an_unchanged_form_locks_nothing(curator):
    instance = make_world()[InstanceType]

    response = submit(curator, instance)

    assert response.status_code == 302, errors_of(response)
    instance.refresh_from_db()
    assert instance.locked_fields == []
    assert GpuLink.objects.get(instance=instance).locked_fields == []


def test_a_curator_unlocks_a_field_by_unticking_it(curator):
    instance = make_world()[InstanceType]
    instance.locked_fields = ["vcpus", "notes"]
    instance.save()

    response = submit(curator, instance, locked_fields=["notes"])

    assert response.status_code == 302, errors_of(response)
    instance.refresh_from_db()
    assert instance.locked_fields == ["notes"]


@pytest.mark.parametrize(
    ("model", "changes", "field"),
    [
        (Provider, {"notes": "Bills per second."}, "notes"),
        (GpuModel, {"memory_type": "HBM3"}, "memory_type"),
        (Fabric, {"max_nodes": "64"}, "max_nodes"),
    ],
    ids=["provider", "gpu", "fabric"],
)
def test_editing_other_curated_rows_locks_the_edited_field(curator, model, changes, field):
    obj = make_world()[model]

    response = submit(curator, obj, **changes)

    assert response.status_code == 302, errors_of(response)
    obj.refresh_from_db()
    assert obj.locked_fields == [field]


# -- bad input is a form error, never a 500, and saves nothing -----------------------------------


def assert_rejected(response, obj, expected: str) -> None:
    assert response.status_code == 200
    errors = errors_of(response)
    assert any(expected in message for message in errors), errors
    fresh = type(obj).objects.get(pk=obj.pk)
    kept_by_database = getattr(type(obj), "DATABASE_KEPT", frozenset())
    for field in type(obj)._meta.concrete_fields:
        if field.name in kept_by_database:
            continue  # set by triggers after `obj` was built; no form can write it
        assert getattr(fresh, field.attname) == getattr(obj, field.attname), field.name


def test_an_unknown_field_name_in_locked_fields_is_a_form_error(curator):
    instance = make_world()[InstanceType]

    response = submit(curator, instance, locked_fields=["vcpus", "price_guess"])

    assert_rejected(response, instance, "price_guess is not one of the available choices")


def test_zero_gpus_is_a_form_error_and_saves_nothing(curator):
    instance = make_world()[InstanceType]

    response = submit(curator, instance, gpu_count=0, vcpus=96)

    assert_rejected(response, instance, "at least one GPU")


def test_a_negative_price_is_a_form_error_and_saves_nothing(curator):
    offer = make_world()[Offer]

    response = submit(curator, offer, price_per_hour="-1.00")

    assert_rejected(response, offer, "A price cannot be negative")
    assert offer.history.count() == 1


def test_a_negative_price_in_the_offers_inline_is_a_form_error(curator):
    world = make_world()
    instance, offer = world[InstanceType], world[Offer]

    response = submit(curator, instance, **{"offers-0-price_per_hour": "-5", "notes": "x"})

    assert_rejected(response, instance, "A price cannot be negative")
    assert Offer.objects.get(pk=offer.pk).price_per_hour == offer.price_per_hour


def test_a_link_with_no_technology_but_a_bandwidth_is_a_form_error(curator):
    instance = make_world()[InstanceType]
    link = instance.gpu_link

    response = submit(
        curator,
        instance,
        **{
            "gpu_link-0-technology": "none",
            "gpu_link-0-topology": "",
            "gpu_link-0-generation": "",
            "gpu_link-0-domain_size": "",
            "gpu_link-0-bandwidth_gbytes_per_s": "900",
        },
    )

    assert_rejected(response, instance, "verified absence of NVLink")
    assert GpuLink.objects.get(pk=link.pk).technology == "nvlink"


def test_a_tcpx_fabric_claiming_rdma_is_a_form_error(curator):
    fabric = make_world()[Fabric]

    response = submit(curator, fabric, technology="tcpx", rdma="true", gpudirect_rdma="false")

    assert_rejected(response, fabric, "TCPX and plain Ethernet are not RDMA")


def test_a_tcpx_fabric_claiming_rdma_in_the_instance_form_is_a_form_error(curator):
    instance = make_world()[InstanceType]

    response = submit(curator, instance, **{"fabric-0-technology": "tcpx"})

    assert_rejected(response, instance, "TCPX and plain Ethernet are not RDMA")
    assert Fabric.objects.get(instance=instance).technology == "infiniband"


def test_a_duplicate_slug_is_a_form_error(curator):
    instance = make_world()[InstanceType]
    other = make_instance(instance.provider, instance.gpu, name="other.8x")

    response = submit(curator, other, slug=instance.slug)

    assert_rejected(response, other, "already exists")


# -- prices --------------------------------------------------------------------------------------


def test_a_curator_changing_a_price_stamps_it_and_appends_history(curator):
    offer = make_world()[Offer]
    offer.history.all().delete()

    response = submit(curator, offer, price_per_hour="16.00")

    assert response.status_code == 302, errors_of(response)
    offer.refresh_from_db()
    assert offer.price_per_hour == Decimal("16.00")
    assert offer.price_per_gpu_hour_usd == Decimal("2.000000")
    assert timezone.now() - offer.observed_at < timedelta(minutes=1)
    assert list(offer.history.values_list("price_per_hour", flat=True)) == [Decimal("16.00")]


def test_a_curator_added_offer_in_another_currency_is_converted_at_the_reference_rate(curator):
    world = make_world()
    instance = world[InstanceType]
    region = make_region(instance.provider, "cn-beijing")
    response = submit_form(
        curator,
        reverse("admin:offerings_offer_add"),
        "offer",
        instance=instance.pk,
        region=region.pk,
        kind="on-demand",
        price_per_hour="200",
        currency="CNY",
        source_url=SOURCE,
    )

    assert response.status_code == 302, errors_of(response)
    offer = Offer.objects.get(region=region)
    assert offer.origin == "curator"
    assert offer.price_per_gpu_hour_usd == Decimal("3.500000")  # 200 CNY x 0.14 / 8 GPUs
    assert offer.exchange_rate_date == date(2026, 11, 28)
    assert offer.history.count() == 1


def test_scraper_owned_offer_fields_cannot_be_changed_in_the_form(curator):
    offer = make_world()[Offer]

    response = submit(curator, offer, missing_runs="5", origin="curator", is_active="")

    assert response.status_code == 302
    offer.refresh_from_db()
    assert offer.missing_runs == 0
    assert offer.origin == "scraper"
    assert offer.is_active


def test_the_offer_page_shows_its_price_history(curator):
    world = make_world()

    page = curator.get(change_page(world[Offer])).content.decode()

    assert "price history" in page.lower()
    assert f"?offer={world[Offer].pk}" in page
    history = curator.get(changelist(PriceObservation), {"offer": world[Offer].pk})
    assert list(history.context["cl"].result_list) == [world[PriceObservation]]


# -- read-only records ---------------------------------------------------------------------------


def test_price_history_cannot_be_added_changed_or_deleted(curator):
    observation = make_world()[PriceObservation]
    before = observation.price_per_hour

    add = curator.get(reverse("admin:offerings_priceobservation_add"))
    change = curator.post(change_page(observation), {"price_per_hour": "0"})
    delete = curator.post(
        reverse("admin:offerings_priceobservation_delete", args=[observation.pk]), {"post": "yes"}
    )

    assert add.status_code == 403
    assert change.status_code == 403
    assert delete.status_code == 403
    assert PriceObservation.objects.get().price_per_hour == before


def test_the_price_history_list_never_counts_the_whole_table(curator):
    make_world()

    response = curator.get(changelist(PriceObservation))

    assert response.context["cl"].show_full_result_count is False
    assert response.context["action_form"] is None  # no bulk delete either


def test_refresh_runs_are_read_only(curator):
    run = make_world()[ScrapeRun]

    add = curator.get(reverse("admin:offerings_scraperun_add"))
    change = curator.post(change_page(run), {"status": "failed"})
    delete = curator.post(reverse("admin:offerings_scraperun_delete", args=[run.pk]), {"post": "y"})

    assert (add.status_code, change.status_code, delete.status_code) == (403, 403, 403)
    run.refresh_from_db()
    assert run.status == "succeeded"


def test_a_refresh_runs_errors_are_shown_escaped(curator):
    provider = make_provider()
    run = ScrapeRun.objects.create(
        provider=provider,
        status="failed",
        error_messages=["<script>alert('x')</script> timed out"],
        rejected_rows=[{"sku": "<img src=x onerror=alert(1)>", "reason": "no price"}],
        warnings=["unknown key 'spotPrice'"],
    )

    page = curator.get(change_page(run)).content.decode()

    assert "<script>alert" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; timed out" in page
    assert "<img src=x" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "<pre>" in page


# -- the SKU review queue ------------------------------------------------------------------------


def test_mapping_a_sku_to_an_instance_marks_it_mapped(curator):
    world = make_world()
    review, instance = world[SkuReview], world[InstanceType]

    response = submit(curator, review, mapped_to=instance.pk)

    assert response.status_code == 302, errors_of(response)
    review.refresh_from_db()
    assert review.status == "mapped"
    assert review.mapped_to == instance


def test_marking_a_sku_mapped_without_a_target_is_a_form_error(curator):
    review = make_world()[SkuReview]

    response = submit(curator, review, status="mapped")

    assert_rejected(response, review, "Choose the instance type")


def test_a_sku_cannot_be_mapped_to_another_providers_instance(curator):
    world = make_world()
    other = make_instance(make_provider("other"), world[GpuModel], name="x.8x")

    response = submit(curator, world[SkuReview], mapped_to=other.pk)

    assert_rejected(response, world[SkuReview], "same provider")


def test_ignoring_skus_in_bulk_marks_them_ignored(curator):
    review = make_world()[SkuReview]

    response = run_action(curator, "mark_ignored", review)

    review.refresh_from_db()
    assert review.status == "ignored"
    assert "Ignored 1 SKU review." in response.content.decode()
