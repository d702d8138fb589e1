"""The one writer: no module outside `offerings/writer/` creates, updates or deletes catalog rows.

A scan of `offerings/` and `providers/` (migrations aside) for the ORM's writing calls and for
raw INSERT / UPDATE / DELETE / COPY SQL. The few sites that write a model which is not catalog
data are listed in ALLOWED, each with its reason; an entry that no longer matches fails too, so
the list cannot outlive its code. Django's own admin forms still save the curated rows a curator
edits (with their locks); what the admin code itself writes goes through the writer.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from django.conf import settings

CHECKED = ("offerings", "providers")
WRITER = Path("offerings/writer")

# Names that write whatever their receiver: no dict or client method shares them.
ALWAYS_WRITES = {"bulk_create", "bulk_update", "get_or_create", "update_or_create"}
# Manager.create() takes keyword arguments only; a positional one is some other create().
KEYWORD_ONLY_WRITES = {"create"}
# Model.delete() and QuerySet.delete() take no positional argument (cache.delete(key) does).
NO_POSITIONAL_WRITES = {"delete"}
# SQL keywords are written in capitals here; an f-string's fields read as "{}".
RAW_WRITE_SQL = re.compile(
    r"\b(?:INSERT\s+INTO|UPDATE\s+[\w.{}\"]+(?:\s+(?:AS\s+)?\w+)?\s+SET|DELETE\s+FROM|TRUNCATE"
    r"|COPY\s+[\w.{}]+\s*(?:\([^)]*\))?\s*FROM)\b"
)

REPORTS = "CorrectionReport: readers' reports and the curators' verdicts, not catalog data"
HEALTH = "RefreshHealth: the alerting state judged from the runs, not catalog data"
# (module, enclosing function, call) -> why a write there is not a write of catalog data.
ALLOWED = {
    ("offerings/pages/views.py", "report_correction", "save"): REPORTS,
    ("offerings/admin/queues.py", "CorrectionReportAdmin.mark_accepted", "update"): REPORTS,
    ("offerings/admin/queues.py", "CorrectionReportAdmin.mark_rejected", "update"): REPORTS,
    ("providers/alerts.py", "check_providers", "get_or_create"): HEALTH,
    ("providers/alerts.py", "check_providers", "save"): HEALTH,
    ("offerings/models.py", "InstanceType.save", "save"): "the model's own save() override",
}


def _receiver_is_a_queryset(node: ast.expr, querysets: set[str]) -> bool:
    """`X.objects...`, a chain of queryset calls, or a name annotated or called a queryset."""
    if isinstance(node, ast.Call):
        return True  # Offer.objects.filter(...).update(...)
    if isinstance(node, ast.Attribute):
        return node.attr == "objects" or _receiver_is_a_queryset(node.value, querysets)
    return isinstance(node, ast.Name) and node.id in querysets


def _queryset_names(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    arguments = [*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs]
    return {
        arg.arg
        for arg in arguments
        if arg.arg == "queryset" or (arg.annotation and "QuerySet" in ast.unparse(arg.annotation))
    }


def _is_docstring(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    statement = parents.get(node)
    owner = parents.get(statement) if isinstance(statement, ast.Expr) else None
    body = getattr(owner, "body", None)
    return bool(body) and body[0] is statement


def writes(source: str) -> list[tuple[str, str, int]]:
    """(enclosing function, call or "SQL", line) for every write the source makes."""
    tree = ast.parse(source)
    parents = {child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}

    def where(node: ast.AST) -> tuple[str, set[str]]:
        names, querysets = [], set()
        while (node := parents.get(node)) is not None:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                querysets |= _queryset_names(node)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.append(node.name)
        return ".".join(reversed(names)) or "<module>", querysets

    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            name, scope = node.func.attr, where(node)
            positional = bool(node.args)
            keywords = {kw.arg: kw.value for kw in node.keywords}
            commit = keywords.get("commit")
            if (
                name in ALWAYS_WRITES
                or (name in KEYWORD_ONLY_WRITES and not positional)
                or (name in NO_POSITIONAL_WRITES and not positional)
                or (name == "update" and _receiver_is_a_queryset(node.func.value, scope[1]))
                or (
                    name == "save"
                    and not (isinstance(commit, ast.Constant) and commit.value is False)
                )
            ):
                found.append((scope[0], name, node.lineno))
        elif isinstance(node, ast.JoinedStr):
            text = "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
            if RAW_WRITE_SQL.search(text):
                found.append((where(node)[0], "SQL", node.lineno))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            inside_fstring = isinstance(parents.get(node), ast.JoinedStr)
            if (
                RAW_WRITE_SQL.search(node.value)
                and not inside_fstring
                and not _is_docstring(node, parents)
            ):
                found.append((where(node)[0], "SQL", node.lineno))
    return sorted(found, key=lambda write: write[2])


def python_sources() -> list[Path]:
    base = Path(settings.BASE_DIR)
    return [
        path.relative_to(base)
        for package in CHECKED
        for path in sorted((base / package).rglob("*.py"))
        if "migrations" not in path.parts
    ]


def test_only_the_writer_creates_updates_or_deletes_catalog_rows():
    sources = python_sources()
    assert len(sources) > 40
    outside, seen = [], set()
    for path in sources:
        if path.is_relative_to(WRITER):
            continue
        for function, call, line in writes((settings.BASE_DIR / path).read_text()):
            key = (path.as_posix(), function, call)
            if key in ALLOWED:
                seen.add(key)
            else:
                outside.append(f"{path}:{line} {function}: {call}")
    assert not outside, "write catalog rows through offerings.writer:\n" + "\n".join(outside)
    assert seen == set(ALLOWED), f"allowed writes that no longer exist: {set(ALLOWED) - seen}"


def test_the_writer_itself_is_seen_writing():
    base = Path(settings.BASE_DIR)
    calls = {
        call
        for path in sorted((base / WRITER).glob("*.py"))
        for _, call, _ in writes(path.read_text())
    }
    assert calls >= {"create", "save", "update", "bulk_update", "get_or_create", "SQL"}


@pytest.mark.parametrize(
    "snippet",
    [
        "Offer.objects.create(instance=i, price_per_hour=p)",
        "offer.save()",
        "offer.save(update_fields=['available'])",
        "form.save()",
        "offer.delete()",
        "Offer.objects.filter(pk=1).delete()",
        "Offer.objects.filter(pk=1).update(is_active=False)",
        "InstanceType.objects.update(is_hidden=True)",
        "def hide(self, request, queryset):\n    queryset.update(is_hidden=True)",
        "def hide(rows: QuerySet[InstanceType]):\n    rows.update(is_hidden=True)",
        "offer.observations.create(price_per_hour=p)",
        "Region.objects.bulk_create(rows)",
        "Offer.objects.bulk_update(rows, ['available'])",
        "Region.objects.get_or_create(code='x')",
        "Region.objects.update_or_create(code='x')",
        "cursor.execute('UPDATE offerings_offer SET is_active = false')",
        "cursor.execute(f'INSERT INTO {table} (id) VALUES (1)')",
        "cursor.execute('DELETE FROM offerings_offer')",
        "cursor.copy('COPY offer_stage (id) FROM STDIN')",
    ],
)
def test_the_scan_catches_each_write(snippet):
    assert writes(snippet), snippet


@pytest.mark.parametrize(
    "snippet",
    [
        "report = form.save(commit=False)",
        "seen: dict = {}\nseen.update(status=status)",
        "merged.update({'a': 1})",
        "progress.update(task, description=message)",
        "cache.delete(key)",
        "Offer.objects.filter(is_active=True).count()",
        'def f():\n    """Write the rows with one UPDATE offers SET price."""',
    ],
)
def test_the_scan_leaves_reads_and_plain_objects_alone(snippet):
    assert not writes(snippet), snippet
