"""Schemathesis against /api/openapi.json, in-process through the WSGI app: no server error,
and every answer matches the document (status code, content type, headers, body schema)."""

from __future__ import annotations

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.specs.openapi.checks import positive_data_acceptance

from gpucatalog.wsgi import application

pytestmark = pytest.mark.django_db

OPERATIONS = [
    ("/api/instances", "GET"),
    ("/api/estimate", "GET"),
    ("/api/collectives", "GET"),
    ("/api/plan", "GET"),
    ("/api/providers", "GET"),
]
EXAMPLES = 120
# Not checked: that every schema-valid request is accepted. Slugs and region codes are data, not
# an enum the document could list, and the contract answers an unknown one with 400.


@pytest.fixture
def api_schema(site):
    """The document as the app serves it, the test's transaction kept open across calls."""
    # Like Django's own test client: the WSGI handler would otherwise close the connection
    # (and with it the test's transaction) at the end of every request.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield schemathesis.openapi.from_wsgi("/api/openapi.json", application)
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


def test_every_documented_operation_is_fuzzed(api_schema):
    documented = {
        (result.ok().path, result.ok().method.upper()) for result in api_schema.get_all_operations()
    }
    assert documented <= set(OPERATIONS), f"add {documented - set(OPERATIONS)} to OPERATIONS"


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
@pytest.mark.parametrize(("path", "method"), OPERATIONS)
def test_the_api_answers_as_its_openapi_document_says(api_schema, path, method, mode):
    if path not in api_schema:
        pytest.skip(f"{path} is not in this installation's document")
    operation = api_schema[path][method]
    if mode == GenerationMode.NEGATIVE and not operation.definition.raw.get("parameters"):
        pytest.skip(f"{path} takes no parameters: there is no request to get wrong")

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    def run(case) -> None:
        case.call_and_validate(excluded_checks=[positive_data_acceptance])

    run()
