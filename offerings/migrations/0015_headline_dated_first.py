# A row's default price prefers a dated price to an undated one of the same kind (issue 28): a
# price whose source shows no date never heads a row that has a dated one. Same order as
# OfferQuerySet.headline_first.

from django.db import migrations

FUNCTION = """
CREATE OR REPLACE FUNCTION offerings_refresh_best_offers(ids bigint[]) RETURNS void LANGUAGE sql AS $$
    UPDATE offerings_instancetype AS it
    SET best_offer_id = b.offer_id, best_price_gpu_hour_usd = b.price, offer_kinds = b.kinds
    FROM (
        SELECT t.id AS instance_id, best.id AS offer_id, best.price_per_gpu_hour_usd AS price,
               COALESCE(
                   (SELECT array_agg(DISTINCT o.kind ORDER BY o.kind) FROM offerings_offer o
                    WHERE o.instance_id = t.id AND o.is_active),
                   '{}'
               ) AS kinds
        FROM unnest(ids) AS t(id)
        LEFT JOIN LATERAL (
            SELECT o.id, o.price_per_gpu_hour_usd FROM offerings_offer o
            WHERE o.instance_id = t.id AND o.is_active
            ORDER BY (o.kind <> 'on-demand'), %(undated)s o.price_per_gpu_hour_usd ASC NULLS LAST,
                     o.id
            LIMIT 1
        ) AS best ON true
    ) AS b
    WHERE it.id = b.instance_id
      AND (it.best_offer_id IS DISTINCT FROM b.offer_id
           OR it.best_price_gpu_hour_usd IS DISTINCT FROM b.price
           OR it.offer_kinds::text[] IS DISTINCT FROM b.kinds::text[]);
$$;

SELECT offerings_refresh_best_offers(array_agg(id)) FROM offerings_instancetype;
"""

FORWARD = FUNCTION % {"undated": "(o.observed_at IS NULL),"}
BACKWARD = FUNCTION % {"undated": ""}


class Migration(migrations.Migration):
    dependencies = [("offerings", "0014_scrape_run_parts")]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
