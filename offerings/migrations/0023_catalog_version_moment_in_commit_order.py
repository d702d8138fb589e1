"""The version's moment follows the counter: the clock at the bump, never earlier than the last.

`changed_at` was `now()`, the start of the writing transaction: a long refresh that started
before a short write but bumped after it got the later counter and the earlier moment, so the
data dumps (named and ordered by the moment) listed the older snapshot as the newest. Bumps are
serialized by the row's lock, so the clock at the bump, kept strictly increasing, orders the
moments as the counters (and so as the commits) are ordered.
"""

from django.db import migrations

FUNCTION = """
CREATE OR REPLACE FUNCTION offerings_bump_catalog_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- Should the row be gone (a flush, a test's TRUNCATE), it comes back at the current time in
    -- milliseconds, above any counter it had: a version never repeats, so no stale key is reused.
    INSERT INTO offerings_catalogversion (id, counter, changed_at)
    VALUES (1, (extract(epoch FROM clock_timestamp()) * 1000)::bigint, clock_timestamp())
    ON CONFLICT (id) DO UPDATE
        SET counter = offerings_catalogversion.counter + 1,
            changed_at = greatest(
                clock_timestamp(), offerings_catalogversion.changed_at + interval '1 microsecond'
            );
    RETURN NULL;
END;
$$;
"""

PREVIOUS = """
CREATE OR REPLACE FUNCTION offerings_bump_catalog_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO offerings_catalogversion (id, counter, changed_at)
    VALUES (1, (extract(epoch FROM clock_timestamp()) * 1000)::bigint, now())
    ON CONFLICT (id) DO UPDATE
        SET counter = offerings_catalogversion.counter + 1, changed_at = now();
    RETURN NULL;
END;
$$;
"""


class Migration(migrations.Migration):
    dependencies = [("offerings", "0022_price_basis")]

    operations = [migrations.RunSQL(FUNCTION, PREVIOUS)]
