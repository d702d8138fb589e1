"""CI grep rule: no request data reaches the ORM as keyword names, lookups or order expressions.

Filtering and ordering go through the FilterSet's declared fields and its ordering whitelist
(offerings/table/parameters.py); nothing unpacks request data into `filter(**...)`, nothing passes it to
`order_by`, `values`, `extra` or raw SQL.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.conf import settings

CHECKED = ("offerings", "providers", "gpucatalog")
REQUEST_DATA = r"(?:self\.)?request\.(?:GET|POST|data|query_params|COOKIES|headers|META|body)"
ORM_CALLS = (
    r"filter|exclude|get|get_or_create|update_or_create|create|update|annotate|alias|aggregate"
    r"|values|values_list|order_by|distinct|only|defer|extra|raw|select_related|prefetch_related"
)
RULES = {
    "request data unpacked as keyword arguments": re.compile(
        r"\*\*\s*(?:dict\(\s*)?" + REQUEST_DATA
    ),
    "request data unpacked inside a dict literal": re.compile(r"\*\*\s*\{[^}]*" + REQUEST_DATA),
    "request data passed straight to an ORM call": re.compile(
        rf"\.(?:{ORM_CALLS})\(\s*\*{{0,2}}\s*(?:dict\(\s*)?{REQUEST_DATA}"
    ),
    "request data in raw SQL or extra()": re.compile(
        rf"(?:RawSQL|\.raw|\.extra|cursor\.execute)\([^)]*{REQUEST_DATA}"
    ),
    "request data as a getattr() name": re.compile(rf"getattr\(\s*\w+\s*,\s*{REQUEST_DATA}"),
}


def violations(source: str) -> list[str]:
    flat = re.sub(r"\s+", " ", source)  # calls spread over several lines
    return [rule for rule, pattern in RULES.items() if pattern.search(flat)]


def python_sources() -> list[Path]:
    base = Path(settings.BASE_DIR)
    return [
        path
        for package in CHECKED
        for path in sorted((base / package).rglob("*.py"))
        if "migrations" not in path.parts
    ]


def test_no_request_data_reaches_the_orm_as_keyword_names():
    sources = python_sources()
    assert len(sources) > 20
    found = {
        str(path.relative_to(settings.BASE_DIR)): problems
        for path in sources
        if (problems := violations(path.read_text()))
    }
    assert not found, found


@pytest.mark.parametrize(
    "snippet",
    [
        "InstanceType.objects.filter(**request.GET.dict())",
        "qs.filter(**request.GET)",
        "qs.exclude(\n    **self.request.GET.dict()\n)",
        "qs.filter(**dict(request.GET.items()))",
        "qs.filter(**{request.GET['field']: value})",
        "qs.order_by(request.GET.get('sort'))",
        "qs.order_by(*request.GET.getlist('sort'))",
        "qs.values(*request.GET.getlist('fields'))",
        "qs.extra(where=[request.GET['w']])",
        "RawSQL('select ' + request.GET['c'], [])",
        "getattr(row, request.GET['attr'])",
    ],
)
def test_the_rule_catches_each_pattern(snippet):
    assert violations(snippet), snippet


def test_the_rule_leaves_the_filterset_way_alone():
    assert not violations("listing = parse_listing_query(request.GET)")
    assert not violations("qs.filter(provider__slug=slug).order_by(*self.ordering())")
