"""Row links built from a pattern reversed once (offerings/web/paths.py) are Django's own."""

import pytest
from django.urls import NoReverseMatch, reverse
from django.utils import translation

from offerings.models import InstanceType
from offerings.web.paths import PathPattern, attach_paths


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_every_shipped_rows_links_are_what_reverse_gives(shipped, language):
    with translation.override(language):
        rows = attach_paths(list(InstanceType.objects.select_related("provider", "gpu")))
        assert len(rows) > 300
        for row in rows:
            assert row.detail_path == reverse(
                "offerings:instance-detail",
                kwargs={"provider": row.provider.slug, "slug": row.slug},
            )
            assert row.provider_path == reverse(
                "offerings:provider-detail", kwargs={"slug": row.provider.slug}
            )
            assert row.gpu_path == reverse("offerings:gpu-detail", kwargs={"slug": row.gpu.slug})
    assert rows[0].detail_path.startswith("/zh-hans/" if language == "zh-hans" else "/instances/")


def test_a_pattern_names_an_argument_it_does_not_have():
    with pytest.raises(NoReverseMatch):
        PathPattern("offerings:gpu-detail", "provider")


def test_the_api_and_the_table_link_each_row_to_its_detail_page(client, shipped):
    api = client.get("/api/instances?provider=aws&page_size=200").json()
    for item in api["results"]:
        assert item["url"].endswith(f"/instances/aws/{item['slug']}/")
    page = client.get("/zh-hans/?provider=aws&page_size=200").content.decode()
    assert 'href="/zh-hans/instances/aws/p5-48xlarge/' in page
    assert 'href="/zh-hans/providers/aws/"' in page
    assert 'href="/zh-hans/gpus/h100-sxm/"' in page
