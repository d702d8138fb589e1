"""How long ago something happened, in the active language: "3 days", "11 months, 2 weeks".

Django's `timesince` with the site's own unit strings. Django's Simplified Chinese catalog reads
its month as "11 月" (which says "November", not "11 months") and its day as "日"; the site says
"11 个月" and "3 天", joins two units without a comma ("1 年 2 个月"), and says "less than a
minute" where `timesince` would say "0 minutes" (a time just now, or a clock a little ahead).
The units carry the context "age" so these translations never change Django's own strings.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.utils import timezone
from django.utils.timesince import timesince
from django.utils.translation import gettext, npgettext_lazy, pgettext

AGE_UNITS = {
    "year": npgettext_lazy("age", "%(num)d year", "%(num)d years", "num"),
    "month": npgettext_lazy("age", "%(num)d month", "%(num)d months", "num"),
    "week": npgettext_lazy("age", "%(num)d week", "%(num)d weeks", "num"),
    "day": npgettext_lazy("age", "%(num)d day", "%(num)d days", "num"),
    "hour": npgettext_lazy("age", "%(num)d hour", "%(num)d hours", "num"),
    "minute": npgettext_lazy("age", "%(num)d minute", "%(num)d minutes", "num"),
}

# What `timesince` joins two units with: Django's string, translated by Django's own catalog (a
# full-width comma in Chinese), so it is named here rather than written out as one of ours.
DJANGO_SEPARATOR = ", "


def age(when: datetime, now: datetime | None = None) -> str:
    """The time from `when` to `now` (default: now) in at most two adjacent units."""
    now = now or timezone.now()
    if now - when < timedelta(minutes=1):
        return pgettext("age", "less than a minute")
    text = timesince(when, now, time_strings=AGE_UNITS, depth=2)
    # No unit contains the separator, so the site's own can replace it.
    return text.replace(gettext(DJANGO_SEPARATOR), pgettext("age, between two units", ", "))
