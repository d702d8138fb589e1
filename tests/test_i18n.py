"""Two languages: every translatable string has a Chinese translation, and the URL decides.

The strings are extracted here the way `makemessages` finds them (templates through Django's
`templatize`, Python through Babel's extractor), so a string added to a template or a view
without a translation in `locale/zh_Hans/LC_MESSAGES/django.po` fails this test, whether or not
anyone has rerun `makemessages`.
"""

from __future__ import annotations

import html
import io
import json
import re
from pathlib import Path

import pytest
from babel.messages.extract import DEFAULT_KEYWORDS, extract, extract_python
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po
from django.conf import settings
from django.core.cache import cache
from django.utils import translation
from django.utils.translation.template import templatize

from offerings.estimator.phrases import FIELD_MESSAGES
from offerings.models import Provider, ScrapeRun
from tests.content.test_content import parse, visible_text

ROOT = Path(settings.BASE_DIR)
PO_FILE = ROOT / "locale" / "zh_Hans" / "LC_MESSAGES" / "django.po"
PYTHON_PACKAGES = ("gpucatalog", "offerings", "providers")
KEYWORDS = {
    **DEFAULT_KEYWORDS,
    "gettext_lazy": None,
    "gettext_noop": None,
    "ngettext_lazy": (1, 2),
    "pgettext_lazy": ((1, "c"), 2),
    "npgettext_lazy": ((1, "c"), 2, 3),
}


def po_catalog():
    with PO_FILE.open("rb") as handle:
        return read_po(handle, locale="zh_Hans")


def _messages(source: str, where: str):
    for _lineno, message, _comments, context in extract(
        extract_python, io.BytesIO(source.encode()), keywords=KEYWORDS
    ):
        yield (message, context, where)


def translatable_strings() -> list[tuple[str | tuple[str, ...], str | None, str]]:
    """Every (msgid, context, file) in the project's templates and Python code."""
    found = []
    for template in sorted((ROOT / "templates").rglob("*.html")):
        source = templatize(template.read_text(), origin=str(template))
        # templatize keeps the template's layout; Python's tokenizer needs no indentation.
        source = "\n".join(line.lstrip() for line in source.splitlines())
        found += _messages(source, str(template.relative_to(ROOT)))
    for package in PYTHON_PACKAGES:
        for module in sorted((ROOT / package).rglob("*.py")):
            if "migrations" in module.parts:
                continue
            found += _messages(module.read_text(), str(module.relative_to(ROOT)))
    return found


@pytest.fixture(autouse=True)
def _fresh_cache():
    cache.clear()
    yield
    cache.clear()


def test_every_translatable_string_has_a_chinese_translation():
    translations = po_catalog()
    missing = []
    for message, context, where in translatable_strings():
        msgid = message if isinstance(message, str) else message[0]
        entry = translations.get(msgid, context=context)
        forms = (
            (entry.string,)
            if entry and isinstance(entry.string, str)
            else (entry.string if entry else ())
        )
        if entry is None or entry.fuzzy or not forms or not all(forms):
            missing.append(f"{where}: {msgid!r}")
    assert not missing, (
        "untranslated strings; run `manage.py makemessages -l zh_Hans` and translate them in "
        f"{PO_FILE.relative_to(ROOT)}:\n" + "\n".join(sorted(set(missing)))
    )


def test_the_extraction_finds_the_strings_it_should():
    """Guard the guard: the extractor sees template, blocktranslate and Python strings."""
    msgids = {m if isinstance(m, str) else m[0] for m, _c, _w in translatable_strings()}
    assert "Skip to content" in msgids  # {% translate %} in base.html
    assert "(%(count)s listed)" in msgids  # gettext() in offerings/content/markup.py
    assert any("explainer" in msgid for msgid in msgids)  # {% blocktranslate %} in faq.html
    assert "NVLink + InfiniBand" in msgids  # gettext_lazy() in offerings/table/presets.py


def test_translations_keep_their_placeholders():
    problems = [
        f"{message.id!r}: {error}" for message, errors in po_catalog().check() for error in errors
    ]
    assert not problems, "\n".join(problems)


def test_the_po_file_compiles():
    buffer = io.BytesIO()
    write_mo(buffer, po_catalog())
    assert buffer.getvalue()


def test_the_po_file_has_no_fuzzy_or_obsolete_entries():
    translations = po_catalog()
    assert not [m.id for m in translations if m.id and m.fuzzy]
    assert not translations.obsolete


CHINESE_PAGES = [
    "/zh-hans/",
    "/zh-hans/learn/nvlink-vs-infiniband/",
    "/zh-hans/faq/",
    "/zh-hans/about/data/",
    "/zh-hans/instances/aws/ib-8x/",
    "/zh-hans/?nvlink=true",
    "/zh-hans/compare/?ids=aws/ib-8x,aws/efa-8x",
    "/zh-hans/gpus/h100-sxm/",
    "/zh-hans/providers/aws/",
]


def english_leaks(text: str) -> list[str]:
    """English msgids (of some length, translated to something else) that show in `text`.

    A msgid with placeholders leaks when one of its literal pieces of 12 characters or more
    shows and its translation does not contain that piece.
    """
    leaks = []
    for message in po_catalog():
        msgid = message.id if isinstance(message.id, str) else message.id[0]
        translated = message.string if isinstance(message.string, str) else message.string[0]
        if not msgid or "<" in msgid or translated == msgid:
            continue
        if "%(" not in msgid:
            if len(msgid) >= 12 and msgid in text:
                leaks.append(msgid)
            continue
        for piece in re.split(r"%\([a-z_]+\)s", msgid.replace("%%", "%")):
            piece = piece.strip(" ;:,.()")
            if len(piece) >= 12 and piece in text and piece not in translated:
                leaks.append(f"{piece!r} of {msgid!r}")
    return leaks


@pytest.mark.parametrize("path", CHINESE_PAGES)
def test_chinese_pages_show_no_english_interface_text(client, catalog, path):
    """No English msgid (of some length, translated to something else) shows on a zh page."""
    response = client.get(path)
    assert response.status_code == 200
    leaks = english_leaks(visible_text(parse(response.content.decode())))
    assert not leaks, leaks


ESTIMATES = [
    "params_b=70&mode=train-fsdp",
    "params_b=70&mode=train-ddp&nodes=1&nodes=2&nodes=4&nodes=32",
    "params_b=70&mode=inference&context_tokens=32768",
    "params_b=405&mode=inference&context_tokens=131072&batch=8&nodes=1&nodes=2&nodes=4",
]
#: Two lowercase English words in a row: a sentence the estimator wrote in English.
ENGLISH_WORDS = re.compile(r"\b[a-z]{2,}[ -][a-z]{2,}\b")


def _estimator_texts(html: str) -> list[str]:
    """The verdicts, the reasons a row does not fit, and the instances one domain holds."""
    cells = re.findall(r'<td class="verdict">(.*?)</td>', html, re.DOTALL)
    cells += re.findall(r'<span class="fit no">[^<]*</span><br><small>(.*?)</small>', html)
    holders = html.split('<section class="holders">')[1:]
    cells += (
        re.findall(r"</small>: (.*?)</li>", holders[0].split("</section>")[0]) if holders else []
    )
    return cells


@pytest.mark.parametrize("query", ESTIMATES)
def test_the_chinese_estimator_shows_no_english_interface_text(client, shipped, query):
    """Verdicts, reasons, formulas, assumptions and calibration on /zh-hans/estimate/ are Chinese."""
    response = client.get(f"/zh-hans/estimate/?{query}")
    assert response.status_code == 200
    html = response.content.decode()
    leaks = english_leaks(visible_text(parse(html)))
    assert not leaks, leaks
    texts = _estimator_texts(html)
    assert len(texts) > 10
    english = [text for text in texts if ENGLISH_WORDS.search(text)]
    assert not english, english[:5]
    results = client.get(f"/api/estimate?{query}").json()["results"]
    for result in results:  # the API's English sentences are not on the page
        assert result["verdict"] not in html
        assert not result["reason"] or result["reason"] not in html


@pytest.mark.parametrize("query", ESTIMATES)
def test_the_estimate_api_stays_english_whatever_the_language(client, shipped, query):
    """/api/estimate answers the same English JSON to a Chinese reader."""
    english = client.get(f"/api/estimate?{query}")
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = "zh-hans"
    chinese = client.get(
        f"/api/estimate?{query}", headers={"accept-language": "zh-CN,zh-Hans;q=0.9"}
    )
    assert chinese.status_code == english.status_code == 200
    assert chinese.content == english.content
    body = json.loads(chinese.content)
    for result in body["results"]:
        assert result["verdict"].isascii(), result["verdict"]
        assert result["reason"] is None or result["reason"].isascii(), result["reason"]
        assert all(name.isascii() for name in result["missing"])
    assumptions = body["assumptions"]
    assert all(formula.isascii() for formula in assumptions["formulas"])
    assert all(text.isascii() for text in assumptions["uncalibrated_factors"].values())
    assert assumptions["rounding"].isascii()


def test_the_language_switch_keeps_the_page_and_its_query(client, db):
    english = parse(client.get("/learn/nvlink-vs-infiniband/").content.decode())
    switch = next(english.iter("nav", "language-switch"))
    assert [a.attrs["href"] for a in switch.iter("a")] == ["/zh-hans/learn/nvlink-vs-infiniband/"]
    assert next(switch.iter("a")).attrs["hreflang"] == "zh-Hans"

    chinese = parse(client.get("/zh-hans/faq/").content.decode())
    switch = next(chinese.iter("nav", "language-switch"))
    assert [a.attrs["href"] for a in switch.iter("a")] == ["/faq/"]

    filtered = parse(client.get("/?nvlink=true&fabric=infiniband").content.decode())
    switch = next(filtered.iter("nav", "language-switch"))
    assert next(switch.iter("a")).attrs["href"] == "/zh-hans/?nvlink=true&fabric=infiniband"


def test_the_url_decides_the_language_not_the_browser(client, db):
    response = client.get("/faq/", headers={"accept-language": "zh-CN,zh;q=0.9"})
    assert response.headers["Content-Language"] == "en"
    assert '<html lang="en">' in response.content.decode()
    response = client.get("/zh-hans/faq/", headers={"accept-language": "en"})
    assert response.headers["Content-Language"] == "zh-hans"


def test_the_chinese_interface_is_translated_in_the_frame(client, db):
    body = client.get("/zh-hans/learn/nvlink-vs-infiniband/").content.decode()
    assert "跳到正文" in body  # skip link
    assert ">常见问题</a>" in body  # navigation
    assert "（已收录" in body or "（目录中暂无）" in body  # live counts


def test_the_contracts_own_messages_are_translated_on_chinese_pages(client, db):
    body = client.get("/zh-hans/?_connector=OR&nvlink=true&nvlink=false").content.decode()
    assert "不允许使用这个参数名。" in body
    assert "这个参数只能给一次。" in body
    api = client.get("/api/instances?_connector=OR").json()  # the API stays English
    assert api["fields"]["_connector"] == ["This parameter name is not allowed."]


def test_estimator_input_errors_are_chinese_on_chinese_pages_and_english_in_the_api(client, db):
    page = client.get("/zh-hans/estimate/?params_b=-1&mode=train-fsdp&mfu=abc&nodes=0")
    assert page.status_code == 400
    body = page.content.decode()
    assert "必须大于 0。" in body
    assert "请输入一个数字。" in body
    assert "超出范围" in body
    api = client.get("/api/estimate?params_b=-1&mode=train-fsdp&mfu=abc&nodes=0").json()
    assert api["fields"]["params_b"] == ["Must be greater than 0."]
    assert api["fields"]["mfu"] == ["Enter a number."]


#: Bad job parameters, each with every message it gets: (parameter, msgid, values as written).
#: Together they give every message of FIELD_MESSAGES (the estimator's mfu floor is its view's).
NODES_33 = "&".join(f"nodes={n}" for n in range(1, 34))
BAD_JOBS = [
    (
        "params_b=-1&mode=pretrain&mfu=1.5&overlap=-0.1&tokens_per_step=4.5&batch=0"
        f"&nodes=two&nodes=0&{NODES_33}",
        [
            ("params_b", "Must be greater than %(n)s.", {"n": "0"}),
            ("mode", "Choose one of: %(n)s.", {"n": "train-ddp, train-fsdp, inference"}),
            ("mfu", "Must be at most %(n)s.", {"n": "1"}),
            ("overlap", "Must be at least %(n)s.", {"n": "0"}),
            ("tokens_per_step", "Enter a whole number.", {}),
            ("batch", "Must be at least %(n)s.", {"n": "1"}),
            ("nodes", "%(n)s is not a whole number.", {"n": "'two'"}),
            ("nodes", "%(n)s is out of range: each must be 1 to %(m)s.", {"n": "0", "m": "1024"}),
            ("nodes", "Give at most %(n)s node counts.", {"n": "32"}),
        ],
    ),
    (
        "params_b=seven&mode=train-ddp&mode=inference&params_b=",
        [
            ("params_b", "Enter a number.", {}),
            ("mode", "Give this parameter once.", {}),
            ("mode", "This field is required.", {}),  # no one value was given
        ],
    ),
    (
        "mode=train-ddp&bytes_per_param=17&context_tokens=x",
        [
            ("params_b", "This field is required.", {}),
            ("bytes_per_param", "Must be at most %(n)s.", {"n": "16"}),
            ("context_tokens", "Enter a whole number.", {}),
        ],
    ),
    (
        "params_b=7&mode=train-ddp&mfu=0.0001",
        [("mfu", "Must be at least %(n)s.", {"n": "0.001"})],
    ),
    (
        "params_b=7&mode=train-ddp&" + "&".join(f"gpus={n}" for n in range(1, 34)),
        [("gpus", "Give at most %(n)s GPU counts.", {"n": "32"})],
    ),
    (
        "params_b=7&mode=train-ddp&gpus=8&nodes=2",
        [("gpus", "Give node counts or GPU counts, not both.", {})],
    ),
]
#: (API, page) of each surface that takes a job, and the bad jobs it answers: the planner ignores
#: `nodes` (it decides the node count), reads `gpus` as its own request and has no mfu floor.
JOB_SURFACES = {
    "estimate": ("/api/estimate?", "/estimate/?"),
    "plan": ("/api/plan?gpus=8&", "/plan/?gpus=8&"),
}
JOB_CASES = [
    *[("estimate", query, expected) for query, expected in BAD_JOBS],
    *[
        ("plan", query, [item for item in expected if item[0] != "nodes"])
        for query, expected in BAD_JOBS
        if "mfu=0.0001" not in query and "gpus=" not in query
    ],
]


def _page_errors(body: str) -> dict[str, str]:
    """The page's list of bad parameters: name -> its messages as the reader sees them."""
    (box,) = re.findall(r'<div class="errors" role="alert">(.*?)</div>', body, re.DOTALL)
    return {
        name: html.unescape(text)
        for name, text in re.findall(r"<li><code>(\w+)</code>: (.*?)</li>", box, re.DOTALL)
    }


def test_the_bad_jobs_give_every_message_of_the_job():
    assert {msgid for _q, expected in BAD_JOBS for _f, msgid, _v in expected} == set(FIELD_MESSAGES)


@pytest.mark.parametrize(("surface", "query", "expected"), JOB_CASES)
def test_job_errors_are_the_apis_english_on_the_english_page_and_chinese_on_the_chinese_one(
    client, db, surface, query, expected
):
    """One message each, said from its msgid: the API's text is the English page's, word for
    word, and the Chinese page says the msgid's Chinese with the same values and no English."""
    api_prefix, page_prefix = JOB_SURFACES[surface]
    english: dict[str, list[str]] = {}
    chinese: dict[str, list[str]] = {}
    for name, msgid, values in expected:
        english.setdefault(name, []).append(msgid % values)
        with translation.override("zh-hans"):
            said = translation.gettext(msgid) % values
        assert CJK.search(said), said
        chinese.setdefault(name, []).append(said)

    api = client.get(api_prefix + query)
    assert api.status_code == 400
    assert api.json()["fields"] == english

    page = client.get(page_prefix + query)
    assert page.status_code == 400
    assert _page_errors(page.content.decode()) == {
        name: " ".join(messages) for name, messages in english.items()
    }

    page = client.get("/zh-hans" + page_prefix + query)
    assert page.status_code == 400
    body = html.unescape(page.content.decode())
    assert _page_errors(page.content.decode()) == {
        name: " ".join(messages) for name, messages in chinese.items()
    }
    for messages in english.values():
        for message in messages:
            assert message not in body


#: Latin words an interface label may keep in Chinese: names of technologies and units.
LATIN_TERMS = {
    "API", "AWS", "CNY", "CSV", "EFA", "GB", "GPU", "GPUDirect", "GPUs", "Gb", "GiB", "InfiniBand",
    "JSON", "NVLink", "NVSwitch", "PCIe", "RDMA", "RoCE", "TCPX", "TCPXO", "USD", "eRDMA", "s",
    "v2", "vCPU",
}  # fmt: skip
INTERFACE_TAGS = ("label", "legend", "th", "button", "dt", "caption", "option", "summary")
CJK = re.compile(r"[\u3400-\u9fff\u3000-\u303f\uff00-\uffef]")


def untranslated_interface_text(root) -> list[str]:
    """Labels, headers, menu entries and terms with Latin words outside LATIN_TERMS and no
    Chinese at all. Not data: the GPU, provider and region menus, nor links (names)."""
    data = set()
    for select in root.iter("select"):
        if select.attrs.get("name") in ("gpu", "provider", "region"):
            data |= {id(option) for option in select.iter("option")}
    for label in root.iter("label"):  # the same menus as checkbox lists
        if any(i.attrs.get("name") in ("gpu", "provider", "region") for i in label.iter("input")):
            data.add(id(label))
    found = []
    for tag in INTERFACE_TAGS:
        for element in root.iter(tag):
            names = any(True for _ in element.iter("a")) or any(True for _ in element.iter("code"))
            text = element.text()
            if id(element) in data or names or not text or CJK.search(text):
                continue
            words = set(re.findall(r"[A-Za-z][A-Za-z0-9]*", text))
            if words - LATIN_TERMS:
                found.append(f"<{tag}> {text!r}")
    return found


@pytest.mark.parametrize("path", [*CHINESE_PAGES, "/zh-hans/estimate/"])
def test_chinese_labels_headers_and_menus_are_in_chinese(client, catalog, path):
    """Short interface words (a "Search" label, a run status, raw sort keys) that the msgid
    check above is too coarse to see."""
    ScrapeRun.objects.create(provider=Provider.objects.get(slug="aws"), status="succeeded")
    response = client.get(path)
    assert response.status_code == 200
    found = untranslated_interface_text(parse(response.content.decode()))
    assert not found, found
    if path == "/zh-hans/providers/aws/":
        assert "成功" in response.content.decode()  # the last run's status
    if path.startswith("/zh-hans/instances/"):
        assert ">请选择一项</option>" in response.content.decode()  # the report form's menu


def test_curators_english_notes_are_marked_english_on_chinese_pages(client, catalog):
    Provider.objects.filter(slug="aws").update(notes="Inter-node fabric is EFA.")
    instance = catalog["ib"]
    instance.notes, instance.setup_notes = "Eight GPUs on NVSwitch.", "Needs the plugin."
    instance.save()
    chinese = client.get("/zh-hans/providers/aws/").content.decode()
    assert '<span lang="en">Inter-node fabric is EFA.</span>' in chinese
    assert "（编者注，英文原文）" in chinese
    assert "note, in English" not in client.get("/providers/aws/").content.decode()
    detail = client.get(f"/zh-hans/instances/aws/{instance.slug}/").content.decode()
    assert '<p lang="en">Eight GPUs on NVSwitch.</p>' in detail
    assert '<span lang="en">Needs the plugin.</span>' in detail
    assert "编者注保留英文原文" in detail
    english = client.get(f"/instances/aws/{instance.slug}/").content.decode()
    assert "kept in English" not in english
