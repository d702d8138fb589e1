"""Lint the curated catalog in `fixtures/` without a database.

Reads the same TOML files as `load_catalog`, validates them with `offerings.schemas`, then checks
the rules the schema cannot see on its own: cross-file references, NVLink domain and bandwidth
rules against each GPU's NVLink generation, fabric arithmetic, duplicate slugs, and that every
price can be converted at a dated reference rate. Every problem is listed; the exit code is 1 when
there is any.

A figure that a source states differently from the rule (a bridged pair quoted at a lower NVLink
figure, say) is accepted through `fixtures/lint_overrides.toml`:

    [[overrides]]
    provider = "acme"               # provider slug
    instance = "2x-h100-nvl"        # instance slug
    rule = "nvlink-bandwidth"       # the rule name printed in the problem
    reason = "NVIDIA quotes 600 GB/s for the H100 NVL bridge"
    source_url = "https://..."      # where the differing figure is stated

An override that matches no problem is itself reported, so stale ones do not pile up.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.utils import translation
from pydantic import AnyHttpUrl, BaseModel, ConfigDict, Field
from pydantic import ValidationError as SchemaError

from offerings import coverage, platform
from offerings.content import facts
from offerings.models import Offer, PriceCheck
from offerings.money import RateTable, gpu_hour_usd
from offerings.schemas import (
    RDMA_FABRICS,
    ExchangeRateCatalog,
    GpuCatalog,
    GpuIn,
    InstanceIn,
    ProviderCatalog,
)

# NVLink bandwidth per GPU (bidirectional GB/s, by NVLink generation) and AMD Infinity Fabric
# aggregate per GPU (by GPU slug): the same figures the explainer and FAQ state.
NVLINK_GBYTES_PER_GPU = facts.NVLINK_GBYTES_PER_GPU
INFINITY_FABRIC_GBYTES_PER_GPU = facts.INFINITY_FABRIC_GBYTES_PER_GPU
OVERRIDES_FILE = "lint_overrides.toml"

RULES = {
    "schema": "the file parses and matches offerings/schemas.py",
    "sources": "instance, nvlink and fabric facts each carry source_url and verified_at",
    "gpu-exists": "every instance's GPU slug is defined in gpus.toml",
    "domain-size": "NVLink domain fits the node (or spans whole nodes) and suits the topology",
    "link-technology": "the link technology is possible for the GPU",
    "nvlink-generation": "the link's generation equals the GPU's NVLink generation",
    "nvlink-bandwidth": "NVLink bandwidth matches the GPU's generation (A100 600, H100 900, ...)",
    "fabric-bandwidth": "fabric bandwidth equals nics x port speed when all three are given",
    "fabric-consistency": "multi-node, sales-only, max-nodes and GPUDirect flags agree",
    "multi-node-source": "a plain-Ethernet type's multi_node = true names the page that documents "
    "booking nodes together (cluster_source_url)",
    "duplicate-slug": "no slug (provider, instance, GPU, rate) is defined twice",
    "price-currency": "every price's currency is USD or has a reference exchange rate",
    "price-date": "no price is observed in the future",
    "override": "every lint override names a known rule and matches a problem",
    "basis": "every known nvlink and fabric fact states its basis (provider or third-party)",
    "platform": "no stated fact contradicts a platform rule, and every platform fact has one",
    "purchase-sales": "a type whose notes say it is bought through sales records a sales-only "
    "purchase mode",
    # Checked by --price-checks against the database, not in the files: an override gives the
    # written reason a flagged spread stays.
    "price-spread": "a type's on-demand prices differ at most 1.6x across its provider's regions",
}
DATABASE_RULES = frozenset({"price-spread"})


@dataclass(frozen=True)
class Problem:
    file: str
    where: str
    rule: str
    message: str

    def __str__(self) -> str:
        where = f" {self.where}:" if self.where else ""
        return f"{self.file}:{where} [{self.rule}] {self.message}"


class Override(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=True)

    provider: str
    instance: str
    rule: str
    reason: str = Field(min_length=10)
    source_url: AnyHttpUrl


class OverrideCatalog(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    overrides: tuple[Override, ...] = ()


def _read(path: Path, schema, problems: list[Problem], root: Path):
    """Parse a TOML file against its schema; on failure record every error and return None."""
    name = str(path.relative_to(root)) if path.is_relative_to(root) else str(path)
    try:
        with path.open("rb") as handle:
            data = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        problems.append(Problem(name, "", "schema", f"cannot read: {exc}"))
        return None
    try:
        return schema.model_validate(data)
    except SchemaError as exc:
        for error in exc.errors():
            where = ".".join(str(part) for part in error["loc"]) or "(file)"
            problems.append(Problem(name, where, "schema", error["msg"]))
        return None


def _link_problems(entry: InstanceIn, gpu: GpuIn | None) -> list[tuple[str, str]]:
    """(rule, message) pairs for one instance's GPU link."""
    found: list[tuple[str, str]] = []
    link = entry.nvlink
    count = entry.gpu_count
    size = link.domain_size

    if link.technology == "none":
        if gpu is not None and (gpu.nvlink_generation or gpu.vendor == "amd"):
            found.append(
                (
                    "link-technology",
                    f"technology 'none' but {gpu.slug} can have a GPU-to-GPU link: "
                    "'none' is only for GPUs with no NVLink at all (else use 'unknown')",
                )
            )
        return found

    if gpu is not None:
        if link.technology == "nvlink" and (gpu.vendor != "nvidia" or not gpu.nvlink_generation):
            found.append(("link-technology", f"{gpu.slug} has no NVLink"))
        if link.technology == "infinity-fabric" and gpu.vendor != "amd":
            found.append(("link-technology", f"Infinity Fabric on a non-AMD GPU ({gpu.slug})"))

    if size is not None:
        if size > count:
            if size % count:
                found.append(
                    (
                        "domain-size",
                        f"domain_size {size} exceeds gpu_count {count} and is "
                        "not a whole number of nodes",
                    )
                )
            elif link.topology != "nvswitch":
                found.append(
                    (
                        "domain-size",
                        f"a domain of {size} spanning nodes of {count} GPUs needs "
                        "NVLink switches (topology 'nvswitch')",
                    )
                )
        if link.topology == "bridge" and size != 2:
            found.append(
                ("domain-size", f"bridge topology links pairs: domain_size must be 2, not {size}")
            )
        if link.topology == "nvswitch" and size < count:
            found.append(
                (
                    "domain-size",
                    f"an NVSwitch domain covers the node: domain_size {size} < gpu_count {count}",
                )
            )
        if link.topology in ("mesh", "hybrid-cube-mesh") and size > count:
            found.append(
                (
                    "domain-size",
                    f"a {link.topology} cannot span nodes (domain_size {size} > gpu_count {count})",
                )
            )
    if link.topology == "bridge" and count % 2:
        found.append(("domain-size", f"bridged pairs need an even gpu_count, not {count}"))

    if gpu is not None and link.technology == "nvlink":
        generations = (link.generation, gpu.nvlink_generation)
        if None not in generations and generations[0] != generations[1]:
            found.append(
                (
                    "nvlink-generation",
                    f"generation {link.generation} but {gpu.slug} has "
                    f"NVLink {gpu.nvlink_generation}",
                )
            )
        expected = NVLINK_GBYTES_PER_GPU.get(gpu.nvlink_generation or 0)
        bandwidth = link.bandwidth_gbytes_per_s
        if None not in (bandwidth, expected) and bandwidth != expected:
            found.append(
                (
                    "nvlink-bandwidth",
                    f"{bandwidth} GB/s per GPU, but NVLink "
                    f"{gpu.nvlink_generation} on {gpu.slug} is {expected} GB/s",
                )
            )
    if gpu is not None and link.technology == "infinity-fabric":
        expected = INFINITY_FABRIC_GBYTES_PER_GPU.get(gpu.slug)
        bandwidth = link.bandwidth_gbytes_per_s
        if bandwidth is not None and bandwidth != expected:
            found.append(
                (
                    "nvlink-bandwidth",
                    f"{bandwidth} GB/s per GPU, but Infinity Fabric on "
                    f"{gpu.slug} is {expected} GB/s aggregate",
                )
            )
        if link.generation is not None:
            found.append(("nvlink-generation", "an NVLink generation on an Infinity Fabric link"))
    return found


def _fabric_problems(entry: InstanceIn) -> list[tuple[str, str]]:
    fabric = entry.fabric
    found: list[tuple[str, str]] = []
    nics, speed, total = fabric.nics, fabric.port_speed_gbits_per_s, fabric.bandwidth_gbits_per_s
    if None not in (nics, speed, total) and nics * speed != total:
        found.append(
            (
                "fabric-bandwidth",
                f"{nics} NICs x {speed} Gb/s = {nics * speed}, "
                f"but bandwidth_gbits_per_s is {total}",
            )
        )
    if fabric.gpudirect_rdma and fabric.technology not in RDMA_FABRICS:
        found.append(
            ("fabric-consistency", f"GPUDirect RDMA over {fabric.technology}, not an RDMA fabric")
        )
    if fabric.sales_only and fabric.multi_node:
        found.append(
            (
                "fabric-consistency",
                "multi_node means self-serve; a sales-only cluster must not "
                "also set multi_node = true",
            )
        )
    if fabric.max_nodes is not None and fabric.multi_node is not True:
        found.append(("fabric-consistency", "max_nodes given without multi_node = true"))
    # With no back-end fabric, nothing but a page about booking nodes together (a cluster,
    # placement group, instant cluster) says multi-node work is offered; "instances in one VPC
    # reach each other" does not.
    if fabric.technology == "ethernet" and fabric.multi_node and not fabric.cluster_source_url:
        found.append(
            (
                "multi-node-source",
                "multi_node = true over plain Ethernet needs cluster_source_url: the page that "
                "documents booking several nodes together",
            )
        )
    return found


def _source_problems(entry: InstanceIn) -> list[tuple[str, str]]:
    found = []
    for label, fact in (("instance", entry), ("nvlink", entry.nvlink), ("fabric", entry.fabric)):
        if not str(fact.source_url or "").strip() or fact.verified_at is None:
            found.append(("sources", f"{label} fact lacks source_url or verified_at"))
    return found


#: A type's notes saying that it is bought through the provider's sales (or pre-sales) people:
#: "Purchase goes through Alibaba Cloud sales", "bought through pre-sales", "Sold through Nebius
#: sales". Not "multi-node clusters only through sales", which is the fabric's sales_only.
SOLD_THROUGH_SALES = re.compile(
    r"\b(?:purchase goes|bought|sold|buying it goes)\s+through\s+(?:[\w.-]+\s+){0,3}(?:pre-)?sales\b",
    re.IGNORECASE,
)


def _purchase_problems(entry: InstanceIn) -> list[tuple[str, str]]:
    """A type whose notes say it is bought through sales has that purchase mode on record."""
    text = f"{entry.notes or ''} {entry.setup_notes or ''}"
    if SOLD_THROUGH_SALES.search(text) and not any(
        mode.kind == "sales-only" for mode in entry.purchase_modes
    ):
        return [
            (
                "purchase-sales",
                "the notes say it is bought through sales: add a sales-only purchase mode",
            )
        ]
    return []


def _basis_problems(entry: InstanceIn) -> list[tuple[str, str]]:
    found = []
    for label, table, fields in (
        ("nvlink", entry.nvlink, platform.LINK_FIELDS),
        ("fabric", entry.fabric, platform.FABRIC_BASIS_FIELDS),
    ):
        _, bases = platform.stated_of(table, fields)
        missing = sorted(name for name, basis in bases.items() if basis is None)
        if missing:
            found.append(("basis", f"{label} states {', '.join(missing)} without a basis"))
    return found


# The link checks above that already judge a fact: a platform conflict on the same fact is the
# same problem, reported once.
CHECKED_BY = {
    "technology": "link-technology",
    "generation": "nvlink-generation",
    "domain_size": "domain-size",
    "bandwidth_gbytes_per_s": "nvlink-bandwidth",
}


def _platform_problems(entry: InstanceIn, found: list[tuple[str, str]]) -> list[tuple[str, str]]:
    raised = {rule for rule, _ in found}
    derived = platform.link_of_entry(entry)
    return [
        ("platform", message)
        for name, message in derived.conflicts
        if CHECKED_BY.get(name) not in raised
    ]


def catalog_facts(fixtures: Path) -> list[coverage.Facts]:
    """Every fixture instance's interconnect facts after the platform rules (for --coverage)."""
    rows = []
    for path in sorted((fixtures / "providers").glob("*.toml")):
        with path.open("rb") as handle:
            catalog = ProviderCatalog.model_validate(tomllib.load(handle))
        for entry in catalog.instances:
            link = platform.link_of_entry(entry)
            fabric, fabric_basis = platform.fabric_of_entry(entry)
            rows.append(
                coverage.Facts(
                    catalog.provider.slug,
                    link.values,
                    link.basis,
                    fabric,
                    fabric_basis,
                    priced=bool(entry.prices),
                )
            )
    return rows


def lint_catalog(fixtures: Path, today: date | None = None) -> list[Problem]:
    """Every problem found in a fixtures folder (empty when the catalog is clean)."""
    today = today or datetime.now(UTC).date()
    now = datetime.now(UTC)
    problems: list[Problem] = []

    gpus: dict[str, GpuIn] = {}
    gpus_file = fixtures / "gpus.toml"
    if not gpus_file.exists():
        problems.append(Problem("gpus.toml", "", "schema", "missing"))
    elif (catalog := _read(gpus_file, GpuCatalog, problems, fixtures)) is not None:
        for gpu in catalog.gpus:
            if gpu.slug in gpus:
                problems.append(
                    Problem("gpus.toml", gpu.slug, "duplicate-slug", "GPU defined twice")
                )
            gpus[gpu.slug] = gpu

    rated = {"USD"}
    rates_file = fixtures / "exchange_rates.toml"
    if rates_file.exists() and (
        rates := _read(rates_file, ExchangeRateCatalog, problems, fixtures)
    ):
        seen = set()
        for rate in rates.rates:
            key = (rate.currency, rate.rate_date)
            if key in seen:
                problems.append(
                    Problem(
                        "exchange_rates.toml",
                        f"{rate.currency} {rate.rate_date}",
                        "duplicate-slug",
                        "rate given twice for one day",
                    )
                )
            seen.add(key)
            rated.add(rate.currency)
            if rate.rate_date > today:
                problems.append(
                    Problem(
                        "exchange_rates.toml",
                        rate.currency,
                        "price-date",
                        f"rate_date {rate.rate_date} is in the future",
                    )
                )

    raw: list[Problem] = []
    providers: dict[str, str] = {}
    known_instances: set[tuple[str, str]] = set()
    for path in sorted((fixtures / "providers").glob("*.toml")):
        name = str(path.relative_to(fixtures))
        catalog = _read(path, ProviderCatalog, problems, fixtures)
        if catalog is None:
            continue
        slug = catalog.provider.slug
        if slug in providers:
            problems.append(
                Problem(name, slug, "duplicate-slug", f"provider also defined in {providers[slug]}")
            )
        providers[slug] = name
        if path.stem != slug:
            problems.append(
                Problem(name, slug, "duplicate-slug", f"file name should be {slug}.toml")
            )
        names: set[str] = set()
        for entry in catalog.instances:
            where = f"{slug}/{entry.resolved_slug}"
            known_instances.add((slug, entry.resolved_slug))
            if entry.name in names:
                raw.append(Problem(name, where, "duplicate-slug", "instance name given twice"))
            names.add(entry.name)
            gpu = gpus.get(entry.gpu)
            if gpu is None:
                raw.append(Problem(name, where, "gpu-exists", f"unknown GPU slug {entry.gpu!r}"))
            found = _source_problems(entry) + _link_problems(entry, gpu) + _fabric_problems(entry)
            found += _basis_problems(entry) + _purchase_problems(entry)
            found += _platform_problems(entry, found)
            for price in entry.prices:
                label = f"price {price.region} {price.kind}"
                if price.currency not in rated:
                    found.append(
                        (
                            "price-currency",
                            f"{label}: no reference exchange rate for {price.currency}",
                        )
                    )
                if price.observed_at is not None and price.observed_at > now:
                    found.append(
                        (
                            "price-date",
                            f"{label}: observed_at {price.observed_at:%Y-%m-%d} is in the future",
                        )
                    )
            raw.extend(Problem(name, where, rule, message) for rule, message in found)

    overrides = read_overrides(fixtures, problems)
    used = set()
    for problem in raw:
        match = next(
            (
                o
                for o in overrides
                if f"{o.provider}/{o.instance}" == problem.where and o.rule == problem.rule
            ),
            None,
        )
        if match is None:
            problems.append(problem)
        else:
            used.add(match)
    for override in overrides:
        where = f"{override.provider}/{override.instance}"
        if override.rule not in RULES or override.rule in ("schema", "override"):
            problems.append(
                Problem(OVERRIDES_FILE, where, "override", f"unknown rule {override.rule!r}")
            )
        elif (override.provider, override.instance) not in known_instances:
            problems.append(Problem(OVERRIDES_FILE, where, "override", "no such instance"))
        elif override not in used and override.rule not in DATABASE_RULES:
            problems.append(
                Problem(
                    OVERRIDES_FILE,
                    where,
                    "override",
                    f"rule {override.rule!r} raises no problem here: remove the override",
                )
            )
    return problems


PRICE_CHECK_TOLERANCE = Decimal("0.05")


def price_disagreements(tolerance: Decimal = PRICE_CHECK_TOLERANCE) -> list[str]:
    """One warning per current offer whose price a price source reads differently (in USD per
    GPU-hour, at the reference rates), beyond `tolerance`."""
    rates = RateTable()
    lines = []
    checks = PriceCheck.objects.filter(offer__is_active=True).select_related(
        "offer__instance__provider", "offer__region"
    )
    for check in checks.order_by("offer__instance__provider__slug", "offer__instance__slug"):
        offer = check.offer
        gpus = offer.instance.gpu_count
        try:
            shown, _ = gpu_hour_usd(offer.price_per_hour, offer.currency, gpus, rates)
            read, _ = gpu_hour_usd(check.price_per_hour, check.currency, gpus, rates)
        except ValueError:
            continue  # no reference rate: the price-currency rule reports it
        if shown and abs(read - shown) / shown > tolerance:
            lines.append(
                f"warning: {offer.instance.provider.slug}/{offer.instance.slug} "
                f"{offer.region.code} {offer.kind}: {check.source} reads "
                f"{check.price_per_hour} {check.currency}/h, the catalog shows "
                f"{offer.price_per_hour} {offer.currency}/h ({offer.source_url})"
            )
    return lines


PRICE_SPREAD_LIMIT = Decimal("1.6")


def regional_spreads(
    overrides: Iterable[Override] = (), limit: Decimal = PRICE_SPREAD_LIMIT
) -> list[str]:
    """One line per instance type whose current on-demand prices (USD per GPU-hour) differ more
    than `limit` times across its provider's regions: a warning, or a note with the written
    reason when `fixtures/lint_overrides.toml` gives one (rule `price-spread`). Such a spread is
    what another purchase model in an on-demand column looks like (GCP's DWS rates in SkyPilot's
    catalog); a real regional difference stays with its reason."""
    reasons = {(o.provider, o.instance): o for o in overrides if o.rule == "price-spread"}
    prices: dict[tuple[str, str], list[tuple[Decimal, str]]] = {}
    offers = Offer.objects.current().filter(
        kind=Offer.Kind.ON_DEMAND, price_per_gpu_hour_usd__isnull=False
    )
    for provider, instance, price, region in offers.values_list(
        "instance__provider__slug", "instance__slug", "price_per_gpu_hour_usd", "region__code"
    ):
        prices.setdefault((provider, instance), []).append((price, region))
    lines = []
    for (provider, instance), readings in sorted(prices.items()):
        low, high = min(readings), max(readings)
        if low[0] <= 0 or high[0] / low[0] <= limit:
            continue
        spread = (
            f"{provider}/{instance}: on-demand {low[0]:.4f} USD/GPU-h in {low[1]} to "
            f"{high[0]:.4f} in {high[1]} ({high[0] / low[0]:.2f}x)"
        )
        override = reasons.get((provider, instance))
        if override is None:
            lines.append(f"warning: {spread}, more than {limit}x with no written reason")
        else:
            lines.append(f"note: {spread}: {override.reason} ({override.source_url})")
    return lines


def read_overrides(fixtures: Path, problems: list[Problem] | None = None) -> tuple[Override, ...]:
    """`fixtures/lint_overrides.toml`'s overrides (none without the file); a file that does not
    parse gives none, its errors added to `problems`."""
    path = fixtures / OVERRIDES_FILE
    if not path.exists():
        return ()
    parsed = _read(path, OverrideCatalog, [] if problems is None else problems, fixtures)
    return parsed.overrides if parsed else ()


class Command(BaseCommand):
    # The lint reads files only: no database, URLs or other app checks are needed to run it.
    requires_system_checks = []
    help = (
        "Check fixtures/ for unsourced facts, impossible NVLink domains, bandwidths that do not "
        "match the GPU's NVLink generation, fabric arithmetic, duplicate slugs and prices without "
        "a reference rate. Needs no database; exits 1 listing every problem."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--fixtures",
            type=Path,
            default=Path(settings.BASE_DIR) / "fixtures",
            help="Folder holding gpus.toml, exchange_rates.toml and providers/*.toml.",
        )
        parser.add_argument(
            "--coverage",
            action="store_true",
            help="Also print how many types know each interconnect fact, by basis and provider.",
        )
        parser.add_argument(
            "--price-checks",
            action="store_true",
            help="Also warn where a price source (SkyPilot's catalog) disagrees by more than "
            f"{PRICE_CHECK_TOLERANCE:.0%} with the price another source supplies, and where a type's "
            f"on-demand prices differ more than {PRICE_SPREAD_LIMIT}x across its provider's regions "
            "without a written reason (reads the database).",
        )

    def handle(self, *args, fixtures: Path, verbosity: int = 1, **options):
        if not fixtures.is_dir():
            raise CommandError(f"{fixtures} is not a folder")
        problems = lint_catalog(fixtures)
        for problem in problems:
            self.stderr.write(str(problem))
        if options.get("coverage") and not any(p.rule == "schema" for p in problems):
            with translation.override("en"):  # a command's report, whatever language is active
                cells = coverage.coverage(catalog_facts(fixtures))
                lines, failing = coverage.format_table(*cells)
            self.stdout.write("\n".join(lines))
            if failing:
                self.stdout.write(f"Below target: {', '.join(failing)}")
        if options.get("price_checks"):
            for line in price_disagreements():
                self.stdout.write(self.style.WARNING(line))
            for line in regional_spreads(read_overrides(fixtures)):
                style = self.style.WARNING if line.startswith("warning") else self.style.NOTICE
                self.stdout.write(style(line))
        if problems:
            raise CommandError(f"catalog lint: {len(problems)} problem(s)")
        if verbosity:
            self.stdout.write(self.style.SUCCESS("Catalog lint: no problems."))
