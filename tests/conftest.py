"""Shared test data builders. Every test runs against a real PostgreSQL database."""

import os
import shutil
from datetime import UTC, date, datetime
from decimal import Decimal

import pytest
from django.utils import translation

from offerings.models import (
    ExchangeRate,
    Fabric,
    GpuLink,
    GpuModel,
    InstanceType,
    Offer,
    Provider,
    Region,
)

SOURCE = "https://docs.example.com/spec"


@pytest.fixture(autouse=True)
def _default_language_after_each_test():
    """A request under /zh-hans/ leaves Chinese active in this thread (LocaleMiddleware does not
    switch back): every test starts from the default language, whatever ran before it."""
    yield
    translation.deactivate()


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
        origin=extra.pop("origin", "catalog"),
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


NVSWITCH_8 = {
    "technology": "nvlink",
    "generation": 4,
    "topology": "nvswitch",
    "domain_size": 8,
    "bandwidth_gbytes_per_s": 900,
}


@pytest.fixture
def cny_rate(db) -> ExchangeRate:
    """A CNY reference rate of 0.125 USD (8 CNY to the dollar, round figures for the tests)."""
    return ExchangeRate.objects.create(
        currency="CNY",
        rate_date=date(2025, 10, 21),
        usd_per_unit=Decimal("0.125"),
        source_url="https://www.ecb.europa.eu/",
    )


@pytest.fixture
def catalog(db):
    """A small catalog holding each trap a buyer can fall into."""
    aws = Provider.objects.create(
        slug="aws", name="AWS", website="https://a.example", kind="hyperscaler"
    )
    gcp = Provider.objects.create(
        slug="gcp", name="Google", website="https://g.example", kind="hyperscaler"
    )
    verda = Provider.objects.create(
        slug="datacrunch", name="Verda", website="https://v.example", kind="specialist"
    )
    use1 = Region.objects.create(provider=aws, code="us-east-1", geo="na")
    euw = Region.objects.create(provider=gcp, code="europe-west4", geo="eu")
    fin = Region.objects.create(provider=verda, code="FIN-01", geo="eu")
    h100 = GpuModel.objects.create(
        slug="h100-sxm", vendor="nvidia", name="H100 SXM", form_factor="sxm", memory_gib=80
    )
    l40s = GpuModel.objects.create(
        slug="l40s", vendor="nvidia", name="L40S", form_factor="pcie", memory_gib=48
    )
    a6000 = GpuModel.objects.create(
        slug="rtx-a6000", vendor="nvidia", name="RTX A6000", form_factor="pcie", memory_gib=48
    )
    rows = {
        "ib": make_instance(
            aws,
            h100,
            name="ib.8x",
            link=NVSWITCH_8,
            fabric={
                "technology": "infiniband",
                "bandwidth_gbits_per_s": 3200,
                "gpudirect_rdma": True,
                "multi_node": True,
                "max_nodes": 64,
            },
        ),
        "efa": make_instance(
            aws,
            h100,
            name="efa.8x",
            link=NVSWITCH_8,
            fabric={
                "technology": "efa",
                "bandwidth_gbits_per_s": 3200,
                "gpudirect_rdma": True,
                "multi_node": True,
            },
        ),
        "tcpx": make_instance(
            gcp,
            h100,
            name="tcpx-8g",
            link=NVSWITCH_8,
            fabric={
                "technology": "tcpx",
                "bandwidth_gbits_per_s": 800,
                "gpudirect_rdma": False,
                "multi_node": True,
            },
        ),
        "pcie": make_instance(
            aws,
            l40s,
            name="pcie.4x",
            gpu_count=4,
            link={"technology": "none"},
            fabric={"technology": "ethernet", "network_gbits_per_s": 100, "multi_node": False},
        ),
        "bridge": make_instance(
            verda,
            a6000,
            name="2A6000.20V",
            gpu_count=2,
            link={"technology": "nvlink", "topology": "bridge", "domain_size": 2},
        ),
        "unknown": make_instance(verda, h100, name="mystery.8x"),
    }
    make_offer(rows["ib"], use1, price="24.00")  # 3.00 per GPU-hour
    make_offer(rows["ib"], use1, price="8.00", kind="spot", available=True)  # 1.00
    make_offer(rows["efa"], use1, price="40.00", available=False)  # 5.00
    make_offer(rows["tcpx"], euw, price="32.00")  # 4.00
    make_offer(rows["pcie"], use1, price="6.00", kind="reserved", term_months=12)  # 1.50
    make_offer(rows["bridge"], fin, price="2.00", available=True)  # 1.00
    return rows


# -- The shipped catalog: loaded once per session, restored into each test that asks ---------------


class ShippedCatalog:
    """The rows `load_catalog` writes from fixtures/ into an empty database, held as COPY data.

    `capture()` runs the load once, in a transaction it rolls back, so a test that does not ask
    for the catalog still sees an empty database. `restore()` writes the same rows, ids and all,
    back into the current (test's) transaction: one COPY per table instead of a whole load.
    Foreign keys are deferred to the end of the transaction, so the tables' order does not matter.
    """

    VERSION = "offerings_catalogversion"  # the one counter row (migration 0005), not copied

    def __init__(self):
        self.tables: list[tuple[str, bytes]] = []  # (table, its rows in COPY's binary format)
        self.sequences: list[tuple[str, int]] = []  # (sequence, the highest id loaded)
        self.version_step = 0  # how far the load moved the counter, less the restore's own moves

    @staticmethod
    def _states(cursor, tables) -> dict[str, tuple[int, str]]:
        """Each table's row count and a digest of all its rows."""
        from django.db import connection

        states = {}
        for table in tables:
            cursor.execute(
                "SELECT count(*), md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), '')) "
                f"FROM {connection.ops.quote_name(table)} t"
            )
            states[table] = cursor.fetchone()
        return states

    def _version(self, cursor) -> int:
        cursor.execute(f"SELECT counter FROM {self.VERSION} WHERE id = 1")
        return cursor.fetchone()[0]

    def capture(self) -> None:
        from django.core.management import call_command
        from django.db import connection, transaction

        qn = connection.ops.quote_name
        with transaction.atomic(), connection.cursor() as cursor:
            names = connection.introspection.django_table_names(only_existing=True)
            tables = sorted(set(names) - {self.VERSION})
            # A flush (tests/providers/hostile_support.py) removes the counter row; the triggers
            # would bring it back at the current time in milliseconds, so the step is counted
            # from a row that is there.
            cursor.execute(
                f"INSERT INTO {self.VERSION} (id, counter, changed_at) VALUES (1, 0, now()) "
                "ON CONFLICT (id) DO NOTHING"
            )
            before, version = self._states(cursor, tables), self._version(cursor)
            call_command("load_catalog", verbosity=0)
            after = self._states(cursor, tables)
            written = [table for table in tables if after[table] != before[table]]
            if held := [table for table in written if before[table][0]]:
                raise RuntimeError(f"shipped: {held} held rows before the catalog was loaded")
            step = self._version(cursor) - version
            for table in written:
                with cursor.copy(f"COPY {qn(table)} TO STDOUT (FORMAT binary)") as copy:
                    self.tables.append((table, b"".join(copy)))
                for sequence in connection.introspection.get_sequences(cursor, table):
                    cursor.execute(f"SELECT max({qn(sequence['column'])}) FROM {qn(table)}")
                    self.sequences.append((sequence["name"], cursor.fetchone()[0]))
            transaction.set_rollback(True)
        # A trial restore: it must give exactly the rows the load gave. Its own statements move
        # the counter too (each COPY fires its table's trigger, and the offers' trigger of
        # migration 0006 updates instance types), so the step it adds is what the load's is not.
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {self.VERSION} (id, counter, changed_at) VALUES (1, 0, now()) "
                "ON CONFLICT (id) DO NOTHING"
            )
            start = self._version(cursor)
            self.restore()
            if self._states(cursor, tables) != after:
                raise RuntimeError("shipped: the restored rows differ from the loaded ones")
            self.version_step = step - (self._version(cursor) - start)
            transaction.set_rollback(True)

    def restore(self) -> None:
        from django.db import connection

        qn = connection.ops.quote_name
        with connection.cursor() as cursor:
            for table, data in self.tables:
                with cursor.copy(f"COPY {qn(table)} FROM STDIN (FORMAT binary)") as copy:
                    copy.write(data)
            # The counter moves as far as a load moves it: the data version caches key on.
            cursor.execute(
                f"UPDATE {self.VERSION} SET counter = counter + %s WHERE id = 1",
                [self.version_step],
            )
            # Sequences are not rolled back, so they are already past these ids, unless a flush
            # reset them (tests/providers/hostile_support.py): a row a test creates must not
            # collide with a restored one. Never moved back, so no id comes round again.
            for sequence, highest in self.sequences:
                cursor.execute(
                    f"SELECT setval(%s, greatest(%s, last_value)) FROM {qn(sequence)}",
                    [sequence, highest],
                )


@pytest.fixture(scope="session")
def _shipped_catalog(django_db_setup, django_db_blocker) -> ShippedCatalog:
    """`load_catalog` of fixtures/, run once per test session (see ShippedCatalog)."""
    catalog = ShippedCatalog()
    with django_db_blocker.unblock():
        catalog.capture()
    return catalog


@pytest.fixture
def shipped(db, _shipped_catalog) -> None:
    """The catalog exactly as the repository ships it: `manage.py load_catalog` of fixtures/.

    Loaded once per session and restored into this test's transaction, so it goes with the
    rollback like anything else the test writes; ids and the catalog version are the load's.
    """
    _shipped_catalog.restore()


# -- Chromium for the browser tests (tests/browser/, tests/security/) ------------------------------

CHROMIUM = os.environ.get("CHROMIUM_PATH") or shutil.which("chromium") or "/usr/bin/chromium"

# Playwright's sync API runs an event loop in this thread; the ORM calls the fixtures make
# around it are still ordinary synchronous ones.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture(scope="session")
def browser():
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"Chromium not found at {CHROMIUM} (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
        )
        yield browser
        browser.close()


@pytest.fixture
def lazy_loads_raise(monkeypatch):
    """Run with Django 6.1's FETCH_RAISE as every QuerySet's fetch mode, so a relation that a view
    or template reaches without having selected or prefetched it fails the test instead of
    quietly costing a query per row. FETCH_PEERS (a deliberate batched load) still works."""
    from django.db.models import fetch_modes, query

    monkeypatch.setattr(query, "DEFAULT_FETCH_MODE", fetch_modes.FETCH_RAISE)
    monkeypatch.setattr(fetch_modes.FetchOne, "fetch", fetch_modes.FetchRaise.fetch)
