"""The catalog for assistants (issue 32): the MCP server at /mcp.

`tools.py` holds the read-only tools, each the same query and the same JSON as one endpoint of
the API, with its arguments taken from that endpoint's OpenAPI parameters; `server.py` builds the
SDK's server and its ASGI app (mounted beside Django's by `gpucatalog/asgi.py`) with the API's
rate limit per client.
"""
