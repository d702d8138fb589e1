"""Where a person reads a provider's prices, for prices the scrapers read from a machine endpoint.

A price read from an API keeps the endpoint as its `source_url` (it is what was read, and the
API's `sources` lists it). A reader clicking "source" on the detail page wants the provider's
price page instead, so the page links that and shows the endpoint beside it.

Each page below is one the catalog already cites, or the provider's well-known public price page:

- AWS: the EC2 On-Demand price page (the scraper reads the Price List bulk API).
- Azure: the Linux virtual machine price page (the scraper reads the Retail Prices API).
- Verda (DataCrunch): verda.com/pricing, cited in fixtures/providers/datacrunch.toml.
- Lambda: lambda.ai/instances, the page fixtures/providers/lambda.toml cites for its prices.
- Nebius: nebius.com/prices, cited in fixtures/providers/nebius.toml.
- OCI: the compute price page (a stored copy: oracle.com/ae/cloud/compute/pricing.html); the
  scraper reads the cost estimator's products API.

GCP, RunPod and Vast.ai already store their human price page as the source; SkyPilot's catalog
links to its file on GitHub.
"""

from __future__ import annotations

from dataclasses import dataclass

from offerings.models import Offer


@dataclass(frozen=True)
class PricePage:
    url: str
    # Source URLs starting with one of these were read from the provider's machine endpoint.
    api_prefixes: tuple[str, ...]


PRICE_PAGES: dict[str, PricePage] = {
    "aws": PricePage(
        "https://aws.amazon.com/ec2/pricing/on-demand/",
        ("https://pricing.us-east-1.amazonaws.com/",),
    ),
    "azure": PricePage(
        "https://azure.microsoft.com/en-us/pricing/details/virtual-machines/linux/",
        ("https://prices.azure.com/api/",),
    ),
    "datacrunch": PricePage("https://verda.com/pricing", ("https://api.datacrunch.io/",)),
    "lambda": PricePage("https://lambda.ai/instances", ("https://cloud.lambda.ai/api/",)),
    "nebius": PricePage(
        "https://nebius.com/prices",
        ("https://api.calculator.billing-data-plane.api.nebius.cloud/",),
    ),
    "oci": PricePage(
        "https://www.oracle.com/cloud/compute/pricing/",
        ("https://apexapps.oracle.com/pls/apex/cetools/api/",),
    ),
}

RAW_GITHUB = "https://raw.githubusercontent.com/"


@dataclass(frozen=True)
class PriceLinks:
    """What the detail page links for one price: the page to read, and the endpoint if any."""

    page: str
    endpoint: str | None  # the machine endpoint the price was read from, shown beside the page
    skypilot: bool = False  # a file of SkyPilot's public catalog, whoever stored the price


SKYPILOT_CATALOG = "skypilot-org/skypilot-catalog/"


def price_links(offer: Offer, provider_slug: str) -> PriceLinks:
    """The human page for a price, with the machine endpoint it was read from beside it."""
    url = offer.source_url
    known = PRICE_PAGES.get(provider_slug)
    if known and url.startswith(known.api_prefixes):
        return PriceLinks(known.url, url)
    if url.startswith(RAW_GITHUB):
        # A raw file on GitHub: its page on github.com shows the same file to a person.
        owner, repo, ref, path = [*url.removeprefix(RAW_GITHUB).split("/", 3), "", "", ""][:4]
        if owner and repo and ref and path:
            page = f"https://github.com/{owner}/{repo}/blob/{ref}/{path}"
            return PriceLinks(page, url, skypilot=_is_skypilot(page))
    return PriceLinks(url, None, skypilot=_is_skypilot(url))


def _is_skypilot(url: str) -> bool:
    return url.startswith("https://github.com/" + SKYPILOT_CATALOG)
