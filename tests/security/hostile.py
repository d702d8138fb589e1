"""A catalog full of hostile strings, ingested the way production ingests them.

The Azure scraper replays `recordings/azure/` (the Retail Prices shape; SKU, meter, product and
location names carrying script tags, event handlers, `javascript:`/`data:` URLs and `</script>`
breakouts, a region code made of markup, unmapped SKUs for the review queue and a row rejected
for its price). The curated rows it maps onto are then made hostile too, as a curator or a
fixture could make them, within what the validators allow (a URL may be http(s) and still carry
a quote-and-tag breakout in its path).
"""

from __future__ import annotations

from pathlib import Path

from django.test import override_settings

from offerings.models import CorrectionReport, GpuModel, InstanceType, Provider, ScrapeRun
from providers.http import make_client, no_sleep
from providers.refresh import refresh_provider
from providers.replay import ReplayTransport
from tests.providers.conftest import load_scraped_providers

RECORDINGS = Path(__file__).parent / "recordings"
PAYLOAD = "<script>window.__pwned=1</script>"
HANDLER = '<img src=x onerror="window.__pwned=1">'
BREAKOUT_URL = 'https://learn.microsoft.com/azure/"><script>window.__pwned=1</script>'


def replay_azure(recording: str) -> ScrapeRun:
    transport = ReplayTransport(RECORDINGS / recording / "manifest.json")
    with (
        override_settings(AZURE_PRICE_REGIONS=["eastus"]),
        make_client(transport, sleep=no_sleep, rng=lambda: 0.5) as client,
    ):
        return refresh_provider("azure", client, replaying=True)


def ingest_hostile_catalog() -> dict:
    """Load the scraped providers' catalog, replay the hostile Azure answer, poison the rest."""
    load_scraped_providers()
    run = replay_azure("azure")
    assert run.status == ScrapeRun.Status.SUCCEEDED, (run.error_messages, run.rejected_rows)
    instance = InstanceType.objects.get(provider__slug="azure", slug="standard-nd96isr-h100-v5")
    instance.name = f"ND96isr H100 v5 {PAYLOAD}"
    instance.notes = f"{HANDLER} </script><script>window.__pwned=1</script> javascript:alert(1)"
    instance.setup_notes = "<a href='javascript:window.__pwned=1'>setup</a> {{ 7|add:7 }}"
    instance.source_url = BREAKOUT_URL
    instance.full_clean()
    instance.save()
    link = instance.gpu_link
    link.source_url = BREAKOUT_URL + "#nvlink"
    link.save()
    Provider.objects.filter(slug="azure").update(
        name=f"Microsoft Azure {HANDLER}",
        notes=f"{PAYLOAD}</textarea></title></style>",
        website='https://azure.microsoft.com/"onmouseover="window.__pwned=1',
    )
    GpuModel.objects.filter(slug=instance.gpu.slug).update(
        name=f"H100 SXM <svg onload=window.__pwned=1></svg>{PAYLOAD}"
    )
    report = CorrectionReport(
        instance=instance,
        topic="fabric",
        message=f"{PAYLOAD} {HANDLER} javascript:window.__pwned=1",
        source_url="https://evil.example/'><svg/onload=window.__pwned=1>",
    )
    report.full_clean()
    report.save()
    return {"run": run, "instance": InstanceType.objects.get(pk=instance.pk), "report": report}
