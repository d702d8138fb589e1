"""refresh_prices: run the provider scrapers, or replay / record their HTTP exchanges."""

from __future__ import annotations

from pathlib import Path

import httpx
from django.core.management.base import BaseCommand, CommandError
from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from offerings import writer
from offerings.models import ScrapeRun
from providers import http
from providers.http import make_client, no_sleep
from providers.refresh import ProviderNotInCatalog, refresh_provider
from providers.registry import SCRAPERS, catalog_row, resolve
from providers.replay import (
    RecordingTransport,
    ReplayError,
    ReplayTransport,
    manifest_path,
    providers_in,
    recording_name,
)

COUNTS = ("fetched", "created", "updated", "unchanged", "retired", "rejected", "errors")
BAD = {ScrapeRun.Status.FAILED, ScrapeRun.Status.REJECTED}


class Command(BaseCommand):
    help = (
        "Fetch prices from provider APIs and upsert them (all configured providers unless "
        "--provider is given). Exits 1 when a provider failed or was rejected, or when a "
        "provider named with --provider was skipped."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--provider",
            action="append",
            default=[],
            metavar="SLUG",
            help=f"Provider to refresh; repeatable. Known: {', '.join(sorted(SCRAPERS))}.",
        )
        parser.add_argument(
            "--replay",
            type=Path,
            metavar="DIR",
            help="Serve recorded exchanges from DIR/manifest.json (one provider) or "
            "DIR/<slug>/manifest.json instead of the network; no API keys needed.",
        )
        parser.add_argument(
            "--record",
            type=Path,
            metavar="DIR",
            help="Write every exchange of a live run to DIR/<slug>/ in the replay format, "
            "secrets redacted.",
        )

    def _providers(self, named: list[str], replay: Path | None) -> list[str]:
        slugs = list(dict.fromkeys(resolve(s) for s in named))
        unknown = [s for s in slugs if s not in SCRAPERS]
        if unknown:
            raise CommandError(
                f"no scraper for {', '.join(unknown)}; known: {', '.join(sorted(SCRAPERS))}"
            )
        if slugs:
            return slugs
        if replay is not None:
            found = [s for s in providers_in(replay) if s in SCRAPERS]
            if not found:
                raise CommandError(
                    f"{replay} holds no <slug>/manifest.json for a known provider; "
                    "for DIR/manifest.json name the provider with --provider"
                )
            return found
        return sorted(SCRAPERS)

    def handle(self, *args, provider, replay, record, verbosity=1, **options):
        if replay is not None and record is not None:
            raise CommandError("--replay and --record cannot be used together")
        if replay is not None and not replay.is_dir():
            raise CommandError(f"--replay: {replay} is not a folder")
        slugs = self._providers(provider, replay)
        missing = [s for s in slugs if catalog_row(s) is None]
        if missing:
            raise CommandError(
                f"not in the catalog: {', '.join(missing)}; run `manage.py load_catalog` first"
            )
        out = getattr(self.stdout, "_out", self.stdout)
        console = Console(file=out, width=None if out.isatty() else 132, highlight=False)
        runs: dict[str, ScrapeRun] = {}
        notes: list[str] = []
        with Progress(
            SpinnerColumn(),
            TextColumn("[bold]{task.fields[slug]:<8}[/] {task.description}"),
            TimeElapsedColumn(),
            console=console,
            transient=True,
            disable=verbosity == 0,
        ) as progress:
            for slug in slugs:
                task = progress.add_task("starting", slug=slug, total=None)

                def report(message: str, task=task) -> None:
                    progress.update(task, description=message)

                runs[slug] = self._refresh_one(
                    slug, replay, record, single=len(slugs) == 1, progress=report, notes=notes
                )
                progress.update(task, description=runs[slug].status, completed=1, total=1)
        if verbosity:
            console.print(self._summary(runs))
            for note in notes:
                console.print(note)
        failed = [s for s, r in runs.items() if r.status in BAD]
        skipped_named = [
            s for s, r in runs.items() if r.status == ScrapeRun.Status.SKIPPED and provider
        ]
        if failed or skipped_named:
            problems = [f"{s}: {runs[s].status}" for s in failed + skipped_named]
            raise CommandError("; ".join(problems), returncode=1)

    def _refresh_one(self, slug, replay, record, *, single, progress, notes) -> ScrapeRun:
        scraper = SCRAPERS[slug]
        transport: httpx.BaseTransport | None = None
        if replay is not None:
            try:
                transport = ReplayTransport(manifest_path(replay, slug, single))
            except ReplayError as exc:
                provider = catalog_row(slug)
                recording = recording_name(manifest_path(replay, slug, single))
                run = writer.start_scrape_run(provider, replay_of=recording)
                return writer.fail_scrape_run(run, str(exc))
        elif record is not None:
            transport = RecordingTransport(
                http.live_transport(), record / slug, secrets=scraper.secrets()
            )
        client = make_client(transport, sleep=no_sleep if replay is not None else None)
        with client:
            try:
                run = refresh_provider(
                    slug,
                    client,
                    replaying=replay is not None,
                    progress=progress,
                    recorded_at=getattr(transport, "recorded_at", None),
                    pinned=(
                        transport.pinned_commits()
                        if isinstance(transport, ReplayTransport)
                        else None
                    ),
                    replay_of=(
                        recording_name(transport.manifest)
                        if isinstance(transport, ReplayTransport)
                        else ""
                    ),
                )
            except ProviderNotInCatalog as exc:
                raise CommandError(str(exc)) from None
        if isinstance(transport, ReplayTransport) and transport.unused():
            notes.append(
                f"{slug}: {len(transport.unused())} recorded exchange(s) in "
                f"{transport.manifest} were not requested"
            )
        if isinstance(transport, RecordingTransport):
            notes.append(
                f"{slug}: recorded {len(transport.entries)} exchange(s) in {record / slug}"
            )
        return run

    def _summary(self, runs: dict[str, ScrapeRun]) -> Table:
        table = Table(title="refresh_prices", title_justify="left")
        table.add_column("provider")
        for name in COUNTS:
            table.add_column(name, justify="right")
        table.add_column("status")
        table.add_column("note", overflow="fold", max_width=60)
        styles = {"succeeded": "green", "failed": "red", "rejected": "red", "skipped": "yellow"}
        for slug, run in runs.items():
            note = run.error_messages[-1] if run.error_messages else ""
            if not note and run.warnings:
                note = f"{len(run.warnings)} warning(s): {run.warnings[0]}"
            table.add_row(
                slug,
                *(str(getattr(run, name)) for name in COUNTS),
                f"[{styles.get(run.status, 'white')}]{run.status}[/]",
                note,
            )
        return table
