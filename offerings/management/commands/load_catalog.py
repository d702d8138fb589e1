"""Load the curated catalog from `fixtures/` (see the README's "Data" section)."""

import tomllib
from pathlib import Path

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError
from pydantic import ValidationError as SchemaError

from offerings import writer
from offerings.estimator.calibration import catalog_results
from offerings.schemas import ExchangeRateCatalog, GpuCatalog, ProviderCatalog


def read_fixture(path: Path, schema):
    """Parse one TOML fixture file against its schema, naming the file in any error."""
    try:
        with path.open("rb") as handle:
            data = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise CommandError(f"{path}: cannot read: {exc}") from None
    try:
        return schema.model_validate(data)
    except SchemaError as exc:
        lines = [f"{path}: {exc.error_count()} invalid value(s):"]
        for error in exc.errors():
            where = ".".join(str(part) for part in error["loc"]) or "(file)"
            lines.append(f"  {where}: {error['msg']}")
        raise CommandError("\n".join(lines)) from None


class Command(BaseCommand):
    help = (
        "Insert missing catalog rows from fixtures/ and update rows whose fixture entry changed, "
        "never touching locked (curator-edited) fields or replacing a newer price."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--fixtures",
            type=Path,
            default=Path(settings.BASE_DIR) / "fixtures",
            help="Folder holding gpus.toml, exchange_rates.toml and providers/*.toml.",
        )

    def handle(self, *args, fixtures: Path, verbosity: int = 1, **options):
        if not fixtures.is_dir():
            raise CommandError(f"{fixtures} is not a folder")
        gpus_file, rates_file = fixtures / "gpus.toml", fixtures / "exchange_rates.toml"
        gpus = read_fixture(gpus_file, GpuCatalog).gpus if gpus_file.exists() else ()
        rates = read_fixture(rates_file, ExchangeRateCatalog).rates if rates_file.exists() else ()
        providers = [
            read_fixture(path, ProviderCatalog)
            for path in sorted((fixtures / "providers").glob("*.toml"))
        ]
        try:
            # The published nccl-tests results the estimator records, on the types they ran on.
            counts = writer.load_catalog(gpus, rates, providers, catalog_results())
        except (ValueError, ValidationError, DatabaseError) as exc:
            raise CommandError(f"catalog not loaded, nothing written: {exc}") from None
        if verbosity:
            for label, bucket in sorted(counts.counts.items()):
                self.stdout.write(
                    f"{label:<16} created {bucket['created']:>4}  updated {bucket['updated']:>4}"
                    f"  unchanged {bucket['unchanged']:>4}"
                    + (f"  retired {bucket['retired']:>4}" if bucket.get("retired") else "")
                )
            summary = f"{counts.changed()} row(s) written" if counts.changed() else "no changes"
            self.stdout.write(self.style.SUCCESS(f"Catalog loaded: {summary}."))
