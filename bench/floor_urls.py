"""The site's URLs and one more, for bench.listing only: a view that does nothing, answered
through the same middleware, as the in-process floor of any page (what Django alone costs)."""

from django.http import HttpResponse
from django.urls import path

from gpucatalog.urls import urlpatterns as site


def nothing(request):
    return HttpResponse(b"{}", content_type="application/json")


urlpatterns = [path("bench-nothing", nothing), *site]
