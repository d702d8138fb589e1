"""manage.py publish_dump: write the snapshot of the current data version to DUMP_DIR."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from offerings.dumps import snapshot


class Command(BaseCommand):
    help = (
        "Write the current data version's snapshot (JSON and CSV, each with its .sha256) to "
        "DUMP_DIR unless it is there, and remove snapshots older than DUMP_KEEP_DAYS."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--dir", type=Path, help="another directory than DUMP_DIR")

    def handle(self, *args, dir: Path | None = None, **options) -> None:
        try:
            published, written = snapshot.publish(dir)
        except OSError as exc:
            raise CommandError(f"could not write the dump: {exc}") from exc
        state = "written" if written else "already there, unchanged"
        self.stdout.write(f"{published.name}: {state}")
        for file in published.files:
            self.stdout.write(f"  {file.name}  {file.size:,} bytes  sha256 {file.sha256}")
