"""refresh_rates: store the ECB's daily reference rates and re-derive USD prices from them."""

from __future__ import annotations

from pathlib import Path

import httpx
from django.core.management.base import BaseCommand, CommandError

from providers import http
from providers.base import ScrapeError
from providers.ecb import ECB_URL, refresh_reference_rates
from providers.http import make_client, no_sleep
from providers.refresh import describe_http_failure
from providers.replay import RecordingTransport, ReplayError, ReplayTransport


class Command(BaseCommand):
    help = (
        "Fetch the ECB's euro reference rates (no key), store USD per unit of each currency "
        "(derived from the EUR cross rates) dated and sourced, and re-derive the USD figure of "
        "every price charged in another currency. Exits 1 when the rates could not be used."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--replay",
            type=Path,
            metavar="DIR",
            help="Serve the recorded exchange from DIR/manifest.json instead of the network.",
        )
        parser.add_argument(
            "--record",
            type=Path,
            metavar="DIR",
            help="Write the exchange of a live run to DIR in the replay format.",
        )

    def handle(self, *args, replay, record, verbosity=1, **options):
        if replay is not None and record is not None:
            raise CommandError("--replay and --record cannot be used together")
        transport: httpx.BaseTransport | None = None
        if replay is not None:
            try:
                transport = ReplayTransport(replay / "manifest.json")
            except ReplayError as exc:
                raise CommandError(str(exc)) from None
        elif record is not None:
            transport = RecordingTransport(http.live_transport(), record)
        with make_client(transport, sleep=no_sleep if replay is not None else None) as client:
            try:
                summary = refresh_reference_rates(client)
            except ScrapeError as exc:
                raise CommandError(f"refresh_rates failed, nothing changed: {exc}") from None
            except httpx.HTTPError as exc:
                reason = describe_http_failure(exc)
                raise CommandError(f"refresh_rates failed, nothing changed: {reason}") from None
        if verbosity:
            self.stdout.write(
                f"ECB reference rates of {summary.rate_date} from {ECB_URL}: "
                f"{summary.currencies} currencies; created {summary.created}, updated "
                f"{summary.updated}, unchanged {summary.unchanged}; {summary.repriced} offer(s) "
                "repriced in USD"
            )
            for reason in summary.refused:
                self.stdout.write(f"refused: {reason}")
