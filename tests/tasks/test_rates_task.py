"""The scheduled exchange-rate refresh stores the ECB's rates, the same as `refresh_rates`."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings as django_settings

from offerings.models import ExchangeRate
from providers.tasks import refresh_rates

RECORDINGS = Path(django_settings.BASE_DIR) / "tests" / "providers" / "recordings"


@pytest.mark.django_db
def test_the_rates_task_stores_the_ecb_rates_from_a_replay(settings):
    settings.REFRESH_REPLAY_DIR = str(RECORDINGS)

    result = refresh_rates.apply()

    assert result.successful()
    assert result.result == "2025-10-21"
    cny = ExchangeRate.objects.get(currency="CNY", rate_date="2025-10-21")
    assert str(cny.usd_per_unit).startswith("0.14047")
    again = refresh_rates.apply()  # a second run changes nothing and still succeeds
    assert again.result == "2025-10-21"
    assert ExchangeRate.objects.filter(currency="CNY").count() == 1


@pytest.mark.django_db
def test_an_unusable_answer_is_refused_and_changes_nothing(settings, tmp_path):
    (tmp_path / "ecb").mkdir()
    (tmp_path / "ecb" / "manifest.json").write_text(
        '[{"method": "GET", "url": "https://www.ecb.europa.eu/stats/eurofxref/eurofxref-daily.xml",'
        ' "status": 200, "content_type": "text/xml", "body": "broken.xml"}]'
    )
    (tmp_path / "ecb" / "broken.xml").write_text("<html>maintenance</html>")
    settings.REFRESH_REPLAY_DIR = str(tmp_path)

    result = refresh_rates.apply()

    assert result.result.startswith("refused")
    assert not ExchangeRate.objects.exists()
