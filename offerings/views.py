"""Public pages and the health check."""

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from offerings.models import InstanceType


@require_safe
def instance_list(request: HttpRequest) -> HttpResponse:
    """List every visible instance type with its interconnects (the filter page comes later)."""
    instances = InstanceType.objects.for_listing().order_by("provider__name", "gpu_count", "name")
    return render(request, "offerings/instance_list.html", {"instances": instances})


@never_cache
@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    """Report whether the database answers and whether a broker is configured."""
    checks: dict[str, str] = {}
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        checks["database"] = "ok"
    except Exception as exc:  # any failure means unhealthy
        checks["database"] = f"error: {type(exc).__name__}"
    checks["broker"] = "configured" if settings.CELERY_BROKER_URL else "not configured"
    healthy = checks["database"] == "ok"
    return JsonResponse(
        {"status": "ok" if healthy else "error", "checks": checks}, status=200 if healthy else 503
    )
