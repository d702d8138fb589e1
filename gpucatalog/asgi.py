"""ASGI entry point: the site (Django) and its MCP server at /mcp, on one origin.

`uvicorn gpucatalog.asgi:application` (`make run`, production, the bench) serves both: requests
to /mcp go to the MCP SDK's app (offerings/agents), everything else to Django, unchanged. The
lifespan events go to the MCP app, whose session manager runs for the process's lifetime
(Django's ASGI handler takes no lifespan).
"""

import os
import warnings

from django.core.asgi import get_asgi_application

# WhiteNoise and FileResponse hand Django file iterators that are synchronous; under ASGI Django
# reads such a file whole into memory before sending it, and warns each time. Static files and
# today's dumps are small (docs/operations.md says when a proxy should serve DUMP_DIR), so the
# warning on every request says nothing an operator can act on.
warnings.filterwarnings(
    "ignore", message="StreamingHttpResponse must consume synchronous iterators"
)

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gpucatalog.settings")

django_application = get_asgi_application()  # sets Django up before anything reads a model

from offerings.agents.server import mcp_app  # noqa: E402

MCP_PATH = "/mcp"
mcp_application = mcp_app()


def is_mcp(path: str) -> bool:
    return path == MCP_PATH or path.startswith(MCP_PATH + "/")


async def application(scope, receive, send) -> None:
    if scope["type"] == "lifespan" or (scope["type"] == "http" and is_mcp(scope["path"])):
        await mcp_application(scope, receive, send)
    else:
        await django_application(scope, receive, send)
