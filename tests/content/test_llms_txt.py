"""/llms.txt and /zh-hans/llms.txt: the llmstxt.org form, every link absolute and answering."""

from urllib.parse import urlsplit

import pytest
from django.test import override_settings

pytestmark = pytest.mark.django_db

SITE = "https://gpucatalog.example"


def links(text: str) -> list[str]:
    return [part.split(")", 1)[0] for part in text.split("](")[1:]]


@override_settings(SITE_URL=SITE)
@pytest.mark.parametrize(("prefix", "title"), [("", "Pages"), ("/zh-hans", "页面")])
def test_llms_txt_has_the_llmstxt_form_and_every_link_answers(client, shipped, prefix, title):
    response = client.get(f"{prefix}/llms.txt")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    text = response.content.decode()
    lines = text.splitlines()
    assert lines[0] == "# gpucatalog"
    assert lines[2].startswith("> ")  # the one-paragraph summary
    assert f"## {title}" in lines
    assert "## Optional" in lines  # the llmstxt.org section name, in both languages
    found = links(text)
    assert len(found) >= 15
    for url in found:
        assert url.startswith(SITE + "/"), url  # absolute, on SITE_URL, never the Host header
        parts = urlsplit(url)
        if parts.path == "/mcp":  # not Django's: the ASGI app serves it (tests/test_mcp.py)
            continue
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        assert client.get(path).status_code == 200, url
    # the pages link in the file's language, the API and feed are the same in both
    assert f"{SITE}{prefix}/nvlink-infiniband/" in found
    assert f"{SITE}/api/openapi.json" in found
    assert f"{SITE}/mcp" in found
    assert f"{SITE}{prefix}/data/" in found


def test_the_chinese_llms_txt_is_written_in_chinese(client, db):
    text = client.get("/zh-hans/llms.txt").content.decode()
    assert "每" in text
    assert "every type with NVLink" not in text
