"""`/feeds/price-changes/`: an Atom feed of price changes, narrowed by the filter parameters."""

from __future__ import annotations

from django.contrib.syndication.views import Feed
from django.db.models import OuterRef, Subquery
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.feedgenerator import Atom1Feed
from django.views.decorators.http import require_safe

from offerings.models import InstanceType, Offer, PriceObservation
from offerings.money import shown_gpu_hour_price, shown_price
from offerings.table.parameters import (
    ListingQuery,
    invalid_parameters,
    known_parameters,
    match_condition,
    offer_condition,
    parse_listing_query,
)
from offerings.web.caching import absolute_url, cached_response

FEED_ITEMS = 50


class PriceChangesFeed(Feed):
    feed_type = Atom1Feed
    title = "gpucatalog: price changes"
    subtitle = "Price changes of multi-GPU cloud instances matching your filters."

    def get_object(self, request: HttpRequest, listing: ListingQuery) -> dict:
        # Links are absolute on SITE_URL (Django's feed would build them from the Host header).
        self.absolute = lambda path: absolute_url(request, path)
        return {"listing": listing, "query": request.GET.urlencode(), "path": request.path}

    def link(self, obj: dict) -> str:
        query = obj["query"]
        return self.absolute(reverse("offerings:instance-list") + (f"?{query}" if query else ""))

    def feed_url(self, obj: dict) -> str:
        query = obj["query"]
        return self.absolute(obj["path"] + (f"?{query}" if query else ""))

    def items(self, obj: dict) -> list[PriceObservation]:
        """Newest price observations of the matching instances' matching offers.

        Two steps, so the cost follows the 50 items, not the history's size: the newest
        observations first (walking priceobservation_recent_idx), then each one's previous price
        from the (offer, observed_at) unique index.
        """
        listing: ListingQuery = obj["listing"]
        parameters = listing.parameters
        instances = InstanceType.objects.visible().filter(match_condition(parameters))
        offers = Offer.objects.current().filter(instance__in=instances.values("pk"))
        conditions = offer_condition(parameters)
        if conditions is not None:
            offers = offers.filter(conditions)
        newest = list(
            # An undated observation (its source shows no date) has no place in a dated feed.
            PriceObservation.objects.filter(
                offer__in=offers.values("pk"), observed_at__isnull=False
            )
            .select_related("offer__instance__provider", "offer__region")
            .order_by("-observed_at", "-pk")[:FEED_ITEMS]
        )
        earlier = PriceObservation.objects.filter(
            offer=OuterRef("offer"), observed_at__lt=OuterRef("observed_at")
        ).order_by("-observed_at")
        previous = dict(
            PriceObservation.objects.filter(pk__in=[item.pk for item in newest])
            .annotate(previous_price=Subquery(earlier.values("price_per_hour")[:1]))
            .values_list("pk", "previous_price")
        )
        for item in newest:
            item.previous_price = previous.get(item.pk)
        return newest

    def item_title(self, item: PriceObservation) -> str:
        offer = item.offer
        instance = offer.instance
        currency = item.currency
        change = (
            f"{shown_price(item.previous_price, currency)} → "
            f"{shown_price(item.price_per_hour, currency)}"
            if item.previous_price is not None
            else f"first seen at {shown_price(item.price_per_hour, currency)}"
        )
        term = f" {offer.term_months} mo" if offer.term_months else ""
        return (
            f"{instance.provider.name} {instance.name}, {offer.region.code} "
            f"{offer.kind}{term}: {change} per hour"
        )

    def item_description(self, item: PriceObservation) -> str:
        per_gpu = item.price_per_hour / item.offer.instance.gpu_count
        return (
            f"{shown_price(item.price_per_hour, item.currency)} per hour "
            f"({shown_gpu_hour_price(per_gpu, item.currency)} per GPU-hour), observed "
            f"{item.observed_at:%Y-%m-%d %H:%M} UTC."
        )

    def item_link(self, item: PriceObservation) -> str:
        instance = item.offer.instance
        path = reverse(
            "offerings:instance-detail",
            kwargs={"provider": instance.provider.slug, "slug": instance.slug},
        )
        return self.absolute(f"{path}#prices")

    def item_guid(self, item: PriceObservation) -> str:
        return f"gpucatalog:price-observation:{item.pk}"

    item_guid_is_permalink = False

    def item_updateddate(self, item: PriceObservation):
        return item.observed_at

    def item_pubdate(self, item: PriceObservation):
        return item.observed_at


@require_safe
@cached_response(known_parameters)
def price_changes(request: HttpRequest) -> HttpResponse:
    """Validate the filter parameters first: a bad one is a 400, never a 500 or an empty feed."""
    listing = parse_listing_query(request.GET)
    if not listing.is_valid:
        return invalid_parameters(listing.errors)
    return PriceChangesFeed()(request, listing=listing)
