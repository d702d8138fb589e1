"""The layout's limits (issue 18), so that they cannot erode one module or one line at a time.

- at most 24 modules stand directly in `offerings/`; a new subject comes as a package;
- no module of `offerings/` exceeds 700 lines, except `models.py` and the migrations;
- `gpucatalog/settings.py` stays under 350 lines;
- `offerings` never imports `providers` (the dependency runs one way);
- no line of template markup exceeds 160 characters. Prose may: every line of the written pages
  (`templates/content/*.en.html`, `*.zh-hans.html`), whose paragraphs stay one line because a line
  break between Chinese characters shows as a space, and the text of a `blocktranslate` block.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from django.conf import settings

ROOT = Path(settings.BASE_DIR)
OFFERINGS = ROOT / "offerings"
TEMPLATES = ROOT / "templates"

MAX_TOP_LEVEL_MODULES = 24
MAX_MODULE_LINES = 700
MAX_SETTINGS_LINES = 350
MAX_MARKUP_LINE = 160

PROSE_PAGES = ("*.en.html", "*.zh-hans.html")
BLOCKTRANSLATE = re.compile(r"{%\s*(blocktranslate|blocktrans|endblocktranslate|endblocktrans)\b")


def line_count(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_at_most_24_modules_stand_directly_in_offerings():
    modules = sorted(p.name for p in OFFERINGS.glob("*.py"))
    assert len(modules) <= MAX_TOP_LEVEL_MODULES, (
        f"{len(modules)} modules in offerings/ (at most {MAX_TOP_LEVEL_MODULES}); move a subject's "
        f"modules into a package of its own: {modules}"
    )


def test_no_module_of_offerings_exceeds_700_lines():
    too_long = {
        str(path.relative_to(ROOT)): lines
        for path in sorted(OFFERINGS.rglob("*.py"))
        if path != OFFERINGS / "models.py"
        and "migrations" not in path.relative_to(OFFERINGS).parts
        and (lines := line_count(path)) > MAX_MODULE_LINES
    }
    assert not too_long, f"over {MAX_MODULE_LINES} lines: {too_long}"


def test_settings_stay_under_350_lines():
    lines = line_count(ROOT / "gpucatalog" / "settings.py")
    assert lines < MAX_SETTINGS_LINES, f"gpucatalog/settings.py has {lines} lines"


def imported_modules(source: str) -> set[str]:
    """Every module an `import`, a `from ... import` or an `import_module("...")` names."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", None))
            in ("import_module", "__import__")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            names.add(node.args[0].value)
    return names


def imports_providers(source: str) -> set[str]:
    return {
        name
        for name in imported_modules(source)
        if name == "providers" or name.startswith("providers.")
    }


def test_the_import_scan_sees_every_form():
    assert imports_providers("import providers.registry") == {"providers.registry"}
    assert imports_providers("from providers import tasks") == {"providers"}
    assert imports_providers("def f():\n    from providers.http import client\n") == {
        "providers.http"
    }
    assert imports_providers("importlib.import_module('providers.replay')") == {"providers.replay"}
    assert not imports_providers("from offerings import services\nimport providers_x")


def test_offerings_never_imports_providers():
    found = {
        str(path.relative_to(ROOT)): sorted(names)
        for path in sorted(OFFERINGS.rglob("*.py"))
        if (names := imports_providers(path.read_text(encoding="utf-8")))
    }
    assert not found, f"offerings imports providers: {found}"


def long_markup_lines(text: str, limit: int = MAX_MARKUP_LINE) -> list[int]:
    """Line numbers of the lines over `limit` characters that are markup, not translated prose.

    A line that starts inside a `blocktranslate` block is its text, which may run long; whatever
    follows the block's end on that line is markup again and is measured on its own.
    """
    long_lines = []
    inside = False
    for number, line in enumerate(text.splitlines(), start=1):
        markup = None if inside else line  # a line that starts inside a block starts as text
        for match in BLOCKTRANSLATE.finditer(line):
            closing = match.group(1).startswith("end")
            if closing and markup is None:
                markup = line[match.start() :]
            inside = not closing
        if markup is not None and len(markup) > limit:
            long_lines.append(number)
    return long_lines


def test_the_line_scan_allows_translated_text_only():
    markup = "<p>" + "x" * 200 + "</p>"
    prose = "y " * 100
    assert long_markup_lines(markup) == [1]
    assert (
        long_markup_lines(f"{{% blocktranslate trimmed %}}\n{prose}\n{{% endblocktranslate %}}")
        == []
    )
    # The block's own tag line is markup, and so is what follows the block's end.
    assert long_markup_lines(f"{{% blocktranslate %}}{prose}{{% endblocktranslate %}}") == [1]
    assert long_markup_lines(
        f"{{% blocktranslate %}}\n{prose}{{% endblocktranslate %}}{markup}"
    ) == [2]
    assert long_markup_lines(
        f"{{% blocktranslate %}}\nshort{{% endblocktranslate %}}\n{markup}"
    ) == [3]


def is_prose_page(path: Path) -> bool:
    return path.parent == TEMPLATES / "content" and any(path.match(p) for p in PROSE_PAGES)


def test_no_line_of_template_markup_exceeds_160_characters():
    too_long = {
        f"{path.relative_to(ROOT)}:{number}"
        for path in sorted(TEMPLATES.rglob("*.html"))
        if not is_prose_page(path)
        for number in long_markup_lines(path.read_text(encoding="utf-8"))
    }
    assert not too_long, (
        f"template lines over {MAX_MARKUP_LINE} characters (break them between tags or "
        f"attributes, never inside running text): {sorted(too_long)}"
    )
