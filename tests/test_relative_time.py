"""Relative ages ("3 days old", "3 天前") read right in both languages (issue 20, item 11).

Django's own Chinese catalog says "11 月" for eleven months, which reads as "November", and "3 日"
for three days; the site's helper says "11 个月" and "3 天" and joins two units without a comma.
"""

from datetime import UTC, datetime, timedelta

import pytest
from django.template import Context, Template
from django.utils import translation

from offerings.web.relative_time import age
from tests.conftest import make_offer

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
NBSP = "\N{NO-BREAK SPACE}"

AGES = [
    # (observed at, English, Chinese)
    (datetime(2026, 1, 1, 12, 0, tzinfo=UTC), "11 months", "11 个月"),
    (datetime(2025, 12, 20, 12, 0, tzinfo=UTC), "11 months, 1 week", "11 个月 1 周"),
    (datetime(2025, 10, 1, 12, 0, tzinfo=UTC), "1 year, 2 months", "1 年 2 个月"),
    (datetime(2024, 12, 1, 12, 0, tzinfo=UTC), "2 years", "2 年"),
    (datetime(2026, 11, 1, 12, 0, tzinfo=UTC), "1 month", "1 个月"),
    (NOW - timedelta(days=17), "2 weeks, 3 days", "2 周 3 天"),
    (NOW - timedelta(days=3, hours=5), "3 days, 5 hours", "3 天 5 小时"),
    (NOW - timedelta(days=1), "1 day", "1 天"),
    (NOW - timedelta(hours=1, minutes=20), "1 hour, 20 minutes", "1 小时 20 分钟"),
    (NOW - timedelta(minutes=1), "1 minute", "1 分钟"),
    (NOW - timedelta(seconds=30), "less than a minute", "不到 1 分钟"),
    (NOW + timedelta(minutes=5), "less than a minute", "不到 1 分钟"),  # a clock a little ahead
]


def spaced(text: str) -> str:
    return text.replace(NBSP, " ")


@pytest.mark.parametrize(("when", "english", "chinese"), AGES)
def test_every_age_reads_right_in_both_languages(when, english, chinese):
    with translation.override("en"):
        assert spaced(age(when, NOW)) == english
    with translation.override("zh-hans"):
        assert spaced(age(when, NOW)) == chinese


def test_a_unit_never_breaks_across_lines_but_two_units_may():
    with translation.override("zh-hans"):
        assert age(datetime(2025, 12, 20, 12, 0, tzinfo=UTC), NOW) == f"11{NBSP}个月 1{NBSP}周"


def test_the_age_filter_leaves_no_date_blank():
    rendered = Template("{% load catalog %}[{{ when|age }}]").render(Context({"when": None}))
    assert rendered == "[]"


def test_django_s_own_translations_are_left_alone():
    """The site's units carry the context "age": Django's strings keep Django's wording."""
    from django.utils.timesince import timesince

    with translation.override("zh-hans"):
        assert spaced(timesince(datetime(2026, 1, 1, 12, 0, tzinfo=UTC), NOW)) == "11 月"


@pytest.mark.parametrize(
    ("language", "prefix", "wanted", "wrong"),
    [
        ("en", "", "11 months old", "11 month old"),
        ("zh-hans", "/zh-hans", "11 个月前", "11 月前"),
    ],
)
def test_the_filter_page_shows_a_price_s_age_in_the_page_s_language(
    client, catalog, language, prefix, wanted, wrong
):
    """A price observed eleven months ago: "11 months old", "11 个月前", never "11 月前"."""
    now = datetime.now(UTC)
    months = now.year * 12 + now.month - 1 - 11
    observed = now.replace(year=months // 12, month=months % 12 + 1, day=min(now.day, 28))
    catalog["pcie"].offers.update(observed_at=observed)
    body = spaced(client.get(f"{prefix}/?nvlink=false").content.decode())
    assert wanted in body
    assert wrong not in body


def test_an_age_of_days_says_days_in_chinese(client, catalog):
    region = catalog["ib"].offers.first().region
    catalog["ib"].offers.all().delete()
    make_offer(
        catalog["ib"], region, price="24.00", observed_at=datetime.now(UTC) - timedelta(days=3)
    )
    body = spaced(client.get("/zh-hans/?fabric=infiniband").content.decode())
    assert "3 天前" in body
    assert "3 日前" not in body
