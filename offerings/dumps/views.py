"""`/data/` lists the snapshots with their licence; `/data/<file>` serves one file of one."""

from __future__ import annotations

from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from offerings.dumps import snapshot
from offerings.web.caching import render_limited

CONTENT_TYPES = {
    ".json.gz": "application/gzip",
    ".csv.zip": "application/zip",
    ".sha256": "text/plain; charset=utf-8",
}


@require_safe
@render_limited
def data_page(request: HttpRequest) -> HttpResponse:
    """The snapshots on disk, newest first (read per request: a dump is written beside the
    catalog's data version, not by it, so the response cache would not know of a new one)."""
    found = snapshot.snapshots()
    context = {
        "snapshots": found,
        "newest": found[0] if found else None,
        "licence": snapshot.LICENCE,
        "licence_url": snapshot.LICENCE_URL,
        "keep_days": snapshot.settings.DUMP_KEEP_DAYS,
    }
    return render(request, "dumps/data.html", context)


@require_safe
def data_file(request: HttpRequest, filename: str) -> FileResponse:
    """One file of a listed snapshot, as a download; any other name is a 404."""
    if not snapshot.FILE_RE.fullmatch(filename):
        raise Http404("no such snapshot file")
    path = snapshot.dump_dir() / filename
    try:
        handle = open(path, "rb")  # noqa: SIM115 (FileResponse closes it)
    except (FileNotFoundError, IsADirectoryError) as exc:
        raise Http404("no such snapshot file") from exc
    kind = next(k for k in (".sha256", ".json.gz", ".csv.zip") if filename.endswith(k))
    response = FileResponse(handle, as_attachment=kind != ".sha256", filename=filename)
    response["Content-Type"] = CONTENT_TYPES[kind]
    # A snapshot's files never change once written: its name holds its data version.
    response["Cache-Control"] = "public, max-age=31536000, immutable"
    return response
