"""The filter page's HTML for issue 20: checkbox lists, the feed links, availability and the
filters that emptied a result (the browser flows are in tests/browser/test_filter_page.py)."""

import pytest
from django.utils import translation

from offerings.models import Provider, Region

pytestmark = pytest.mark.usefixtures("lazy_loads_raise")


def test_gpu_provider_and_region_are_checkbox_lists_with_the_chosen_first_and_ticked(
    client, catalog
):
    body = client.get("/?gpu=l40s&region=FIN-01&provider=verda").content.decode()
    assert " multiple" not in body  # no Ctrl-click list is left
    gpus = body.split('id="list-gpu"')[1].split("</div>")[0]
    assert gpus.startswith('><label><input type="checkbox" name="gpu" value="l40s" checked> L40S')
    assert '<input type="checkbox" name="gpu" value="h100-sxm"> H100 SXM</label>' in gpus
    # A bare code ticks that code at every provider; `provider:code` choices, provider named.
    assert '<input type="checkbox" name="region" value="datacrunch:FIN-01" checked>' in body
    assert '<input type="checkbox" name="region" value="aws:us-east-1"> AWS: us-east-1' in body
    assert '<input type="checkbox" name="provider" value="datacrunch" checked> Verda' in body
    assert 'id="find-region" aria-controls="list-region"' in body


def test_checkbox_labels_are_escaped_and_follow_the_data(client, catalog):
    aws = Provider.objects.get(slug="aws")
    Region.objects.create(provider=aws, code="x-1", name="<b>Nowhere</b>", geo="eu")
    body = client.get("/").content.decode()
    assert "AWS: x-1 (&lt;b&gt;Nowhere&lt;/b&gt;)</label>" in body


def test_the_feed_of_the_current_filters_is_linked_without_the_listing_options(client, catalog):
    body = client.get("/?nvlink=true&sort=gpu_count&page_size=2&currency=CNY").content.decode()
    assert (
        '<link id="feed-alternate" rel="alternate" type="application/atom+xml" '
        'href="/feeds/price-changes/?nvlink=true"'
    ) in body
    assert 'id="feed-link" href="/feeds/price-changes/?nvlink=true"' in body
    plain = client.get("/").content.decode()
    assert 'href="/feeds/price-changes/"' in plain


def test_the_available_control_says_for_how_many_rows_it_is_known_and_by_whom(client, catalog):
    body = client.get("/").content.decode()
    assert "Availability is known for 3 of the 6 matching types: AWS, Verda." in body
    assert 'aria-describedby="available-known"' in body
    # With `available` given, it still counts the rows the other filters match.
    body = client.get("/?available=true").content.decode()
    assert "Availability is known for 3 of the 6 matching types" in body
    fragment = client.get("/?nvlink=false", headers={"HX-Request": "true"}).content.decode()
    assert 'id="available-known" class="field-help" hx-swap-oob="true">' in fragment
    assert "No provider reports availability for the matching type" in fragment
    with translation.override("zh-hans"):
        body = client.get("/zh-hans/").content.decode()
    assert "有 3 种的容量情况已知：AWS, Verda。" in body


def test_an_empty_result_names_each_filter_given_and_what_dropping_it_gives(client, catalog):
    body = client.get("/?nvlink=false&geo=eu&page_size=10").content.decode()
    assert "No instance type matches these filters." in body
    causes = body.split('class="empty-causes"')[1].split("</ul>")[0]
    assert "<strong>NVLink or Infinity Fabric</strong>: no (known)" in causes
    assert "<strong>Continent</strong>: Europe" in causes
    assert 'href="?geo=eu&amp;page_size=10"' in causes
    assert "2 types match" in causes
    assert 'href="?nvlink=false&amp;page_size=10"' in causes
    assert "1 type matches" in causes
    # Only the filter that helps is offered as helping.
    body = client.get("/?nvlink=false&geo=eu&gpu_count_min=1000").content.decode()
    causes = body.split('class="empty-causes"')[1].split("</ul>")[0]
    assert causes.count("still nothing alone") == 3
    assert "empty-causes" not in client.get("/").content.decode()
