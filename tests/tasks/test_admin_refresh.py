"""The admin's "refresh now" sends the task by name after commit; providers needing attention show."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from gpucatalog.celery import app as celery_app
from offerings.models import Provider, RefreshHealth

CHANGELIST = "admin:offerings_provider_changelist"


@pytest.fixture
def curator(db) -> Client:
    user = get_user_model().objects.create_superuser("curator", "curator@example.com", "pw")
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def providers(db) -> dict[str, Provider]:
    return {
        slug: Provider.objects.create(
            slug=slug, name=name, website=f"https://{slug}.example", kind="hyperscaler"
        )
        for slug, name in [("aws", "AWS"), ("azure", "Azure"), ("paperspace", "Paperspace")]
    }


def messages_of(response) -> list[str]:
    return [str(m) for m in response.context["messages"]]


def run_action(client: Client, providers: list[Provider]):
    return client.post(
        reverse(CHANGELIST),
        {"action": "refresh_now", "_selected_action": [p.pk for p in providers]},
        follow=True,
    )


# The admin runs in autocommit (no ATOMIC_REQUESTS), so "after commit" is at once there: these
# tests commit for real (transactional_db) to see the message the curator sees.


@pytest.mark.django_db(transaction=True)
def test_refresh_now_sends_the_task_by_name(curator, providers, memory_broker):
    response = run_action(curator, [providers["azure"], providers["aws"]])

    assert "Refresh queued for aws, azure." in messages_of(response)
    assert memory_broker.sent() == [
        {"task": "providers.tasks.refresh_provider", "args": [slug], "kwargs": {"trigger": "admin"}}
        for slug in ("aws", "azure")
    ]


def test_inside_a_transaction_the_task_is_sent_only_when_it_commits(
    curator, providers, memory_broker, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks() as callbacks:
        run_action(curator, [providers["aws"]])

    assert memory_broker.sent() == []
    for callback in callbacks:
        callback()
    assert [m["args"] for m in memory_broker.sent()] == [["aws"]]


def test_without_a_broker_refresh_now_says_so_and_sends_nothing(curator, providers, settings):
    settings.CELERY_BROKER_URL = None

    response = run_action(curator, [providers["aws"]])

    assert response.status_code == 200
    [message] = messages_of(response)
    assert "No Celery broker is configured (CELERY_BROKER_URL is unset)" in message
    assert "manage.py refresh_prices --provider aws" in message


@pytest.mark.django_db(transaction=True)
def test_an_unreachable_broker_is_reported_not_a_server_error(curator, providers, settings):
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"
    previous = celery_app.conf.broker_url
    celery_app.conf.broker_url = "redis://127.0.0.1:1/0"
    celery_app._pool = None
    celery_app.amqp._producer_pool = None
    try:
        response = run_action(curator, [providers["aws"]])
    finally:
        celery_app.conf.broker_url = previous
        celery_app._pool = None
        celery_app.amqp._producer_pool = None

    assert response.status_code == 200
    [message] = messages_of(response)
    assert message.startswith("Could not reach the Celery broker")


@pytest.mark.django_db(transaction=True)
def test_the_change_page_has_a_refresh_button_that_posts(curator, providers, memory_broker):
    aws = providers["aws"]
    url = reverse("admin:offerings_provider_refresh", args=[aws.pk])

    page = curator.get(reverse("admin:offerings_provider_change", args=[aws.pk]))
    assert f'action="{url}"' in page.content.decode()
    assert curator.get(url).status_code == 405

    response = curator.post(url, follow=True)

    assert response.redirect_chain[-1][0] == reverse(
        "admin:offerings_provider_change", args=[aws.pk]
    )
    assert "Refresh queued for aws." in messages_of(response)
    assert [m["args"] for m in memory_broker.sent()] == [["aws"]]


def test_staff_who_may_only_view_providers_cannot_refresh(providers, memory_broker):
    user = get_user_model().objects.create_user("viewer", password="pw", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_provider"))
    client = Client()
    client.force_login(user)

    url = reverse("admin:offerings_provider_refresh", args=[providers["aws"].pk])
    assert client.post(url).status_code == 403
    changelist = client.get(reverse(CHANGELIST)).content.decode()
    assert "refresh_now" not in changelist
    assert memory_broker.sent() == []


def health(provider: Provider, state: str, detail: str = "") -> RefreshHealth:
    return RefreshHealth.objects.create(
        provider=provider,
        state=state,
        detail=detail,
        stale_after=timedelta(hours=12),
        checked_at=timezone.now(),
    )


def test_providers_needing_attention_are_flagged_and_filtered(curator, providers):
    health(providers["aws"], "failing", "run #3 failed: HTTP 503 <b>from</b> upstream")
    health(providers["azure"], "ok", "last good run #4 1.0 h ago")

    page = curator.get(reverse(CHANGELIST)).content.decode()
    assert "⚠ Failing (last run failed or was rejected)" in page
    assert "HTTP 503 &lt;b&gt;from&lt;/b&gt; upstream" in page, "scraped text stays escaped"
    assert "Needs attention" in page

    attention = curator.get(reverse(CHANGELIST), {"refresh": "attention"})
    assert [p.slug for p in attention.context["cl"].result_list] == ["aws"]
    fresh = curator.get(reverse(CHANGELIST), {"refresh": "ok"})
    assert [p.slug for p in fresh.context["cl"].result_list] == ["azure"]
    unscheduled = curator.get(reverse(CHANGELIST), {"refresh": "unscheduled"})
    assert [p.slug for p in unscheduled.context["cl"].result_list] == ["paperspace"]


def test_a_stale_provider_needs_attention_too(curator, providers):
    health(providers["azure"], "stale", "last good run #2 30.0 h ago, stale after 12.0 h")

    attention = curator.get(reverse(CHANGELIST), {"refresh": "attention"})

    assert [p.slug for p in attention.context["cl"].result_list] == ["azure"]
