"""The estimator's sentences: one table of phrases, said in English by the API and in the page's
language by the page.

No database: phrases are plain data, and the page's language is Django's gettext.
"""

import re

import pytest
from django.utils import translation

from offerings.estimator import page
from offerings.estimator.core import FabricSpec, GpuLinkSpec, InstanceSpec, Job, parse_job
from offerings.estimator.estimation import estimate
from offerings.estimator.phrases import (
    AT_MOST,
    FIELD_MESSAGES,
    LINK_NAMES,
    PHRASES,
    FieldError,
    Phrase,
    Wording,
    english,
    gettext_noop,
    join_reasons,
)

NO_BOOKING = Phrase("no-multi-node", {"nodes": 2})
UNKNOWN = Phrase("unknown", {"missing": ("GPU memory", "fabric bandwidth")})
FABRIC = Phrase("fabric-stage", {"bandwidth": 1234.56, "link": "ethernet"})
EFFICIENT = Phrase("efficient", {"efficiency": 0.91, "stage": FABRIC})

#: One phrase per code and wording, with the API's English for each.
EXAMPLES: list[tuple[Phrase, str]] = [
    (
        Phrase("multi-node-unstated", {"nodes": 4}),
        "4 nodes: self-serve multi-node booking is not stated for this instance",
    ),
    (NO_BOOKING, "2 nodes: no self-serve multi-node booking (one node, or sales only)"),
    (
        Phrase("beyond-max-nodes", {"nodes": 16, "max_nodes": 8}),
        "16 nodes: beyond the largest self-serve cluster of 8 nodes",
    ),
    (
        Phrase(
            "states-too-big",
            {"per_gpu_gib": 1234.56, "sharded": True, "gpus": 1, "limit_gib": 64.0},
        ),
        "model states need 1,234.6 GiB per GPU (sharded over 1 GPU), more than the 64.0 GiB "
        "left after the activation margin",
    ),
    (
        Phrase(
            "states-too-big",
            {"per_gpu_gib": 140.0, "sharded": False, "gpus": 16, "limit_gib": 64.0},
        ),
        "model states need 140.0 GiB per GPU (replicated on each of 16 GPUs), more than the "
        "64.0 GiB left after the activation margin",
    ),
    *[
        (
            Phrase(
                "domain-too-small",
                {
                    "needed_gib": 150.0,
                    "weights_gib": 130.0,
                    "kv_gib": 20.0,
                    "domain": domain,
                    "domain_gpus": gpus,
                    "spanning": 72,
                    "usable_gib": usable,
                    "nodes_needed": nodes,
                },
            ),
            f"needs 150.0 GiB (weights 130.0 + KV cache 20.0); {holds} {usable:.1f} GiB usable; "
            f"tensor parallel would take {nodes} node{'s' if nodes > 1 else ''}",
        )
        for domain, gpus, usable, nodes, holds in [
            ("pcie", 1, 43.2, 1, "one NVLink domain of one GPU (PCIe only) holds"),
            ("booked", 4, 90.0, 2, "the 4 GPUs booked of its 72-GPU NVLink domain hold"),
            ("domain", 2, 72.0, 3, "one NVLink domain of 2 GPUs holds"),
        ]
    ],
    (UNKNOWN, "unknown: GPU memory, fabric bandwidth"),
    (
        Phrase("cannot-estimate", {"missing": ("dense BF16 TFLOPS",)}),
        "cannot estimate: unknown dense BF16 TFLOPS",
    ),
    (
        Phrase("does-not-fit", {"reasons": (NO_BOOKING, UNKNOWN)}),
        "does not fit (2 nodes: no self-serve multi-node booking (one node, or sales only); "
        "unknown: GPU memory, fabric bandwidth)",
    ),
    (
        Phrase("not-bookable", {"reasons": (NO_BOOKING,)}),
        "not bookable as asked (2 nodes: no self-serve multi-node booking (one node, or sales "
        "only))",
    ),
    (
        Phrase("if-it-were-bookable", {"reasons": (NO_BOOKING,), "verdict": EFFICIENT}),
        "not bookable as asked (2 nodes: no self-serve multi-node booking (one node, or sales "
        "only)); if it were: 91% efficient: communication adds 9% to the step; slowest link: the "
        "network between nodes gives 1,234.6 GB/s per GPU (TCP over the general network)",
    ),
    (Phrase("no-estimate"), "no estimate"),
    (
        Phrase("if-it-fitted", {"reasons": (NO_BOOKING,), "verdict": EFFICIENT}),
        "does not fit (2 nodes: no self-serve multi-node booking (one node, or sales only)); "
        "if it did: 91% efficient: communication adds 9% to the step; slowest link: the network "
        "between nodes gives 1,234.6 GB/s per GPU (TCP over the general network)",
    ),
    (
        Phrase("communication-bound", {"beyond": 2, "at": None, "stage": FABRIC}),
        "communication-bound beyond 2 nodes: the network between nodes gives 1,234.6 GB/s per GPU "
        "(TCP over the general network)",
    ),
    (
        Phrase("communication-bound", {"beyond": None, "at": 1, "stage": None}),
        "communication-bound at 1 node",
    ),
    (Phrase("no-communication", {"efficiency": 1.0}), "100% efficient: no communication"),
    (
        EFFICIENT,
        "91% efficient: communication adds 9% to the step; slowest link: the network between nodes gives "
        "1,234.6 GB/s per GPU (TCP over the general network)",
    ),
    (
        Phrase("fits-domain", {"domain_gpus": 8, "needed_gib": 150.0}),
        "fits one NVLink domain of 8 GPUs (150.0 GiB needed)",
    ),
    (
        Phrase("cannot-tell", {"reasons": (UNKNOWN,)}),
        "cannot tell: unknown: GPU memory, fabric bandwidth",
    ),
    (
        Phrase(
            "inference-does-not-fit",
            {"reasons": (NO_BOOKING,), "tp_link": None, "tp_s_per_token": None},
        ),
        "does not fit: 2 nodes: no self-serve multi-node booking (one node, or sales only)",
    ),
    (
        Phrase(
            "inference-does-not-fit",
            {"reasons": (NO_BOOKING,), "tp_link": "nvlink-sharp", "tp_s_per_token": 0.00123},
        ),
        "does not fit: 2 nodes: no self-serve multi-node booking (one node, or sales only); "
        "tensor-parallel traffic over NVLink with NVSwitch SHARP costs about 1.23 ms per token",
    ),
    (FABRIC, "the network between nodes gives 1,234.6 GB/s per GPU (TCP over the general network)"),
    *[
        (
            Phrase(
                "intra-stage",
                {"bandwidth": 342.0, "link": "nvlink", "where": where, "group_gpus": 72},
            ),
            f"NVLink gives 342.0 GB/s per GPU inside {inside}",
        )
        for where, inside in [
            ("domain", "the 72-GPU NVLink domain"),
            ("node", "the node"),
            ("each-node", "each node"),
        ]
    ],
]


def wordings() -> set[tuple[str, str]]:
    """Every (code, variant) of the table."""
    return {
        (code, variant)
        for code, wording in PHRASES.items()
        for variant in (wording.messages or {"": None})
    }


def variant_of(phrase: Phrase) -> tuple[str, str]:
    wording = PHRASES[phrase.code]
    return phrase.code, wording.variant(phrase.params) if wording.variant else ""


def test_the_examples_cover_every_phrase_code_and_wording():
    assert len(PHRASES) == 20
    assert {variant_of(phrase) for phrase, _text in EXAMPLES} == wordings()


@pytest.mark.parametrize(("phrase", "text"), EXAMPLES, ids=lambda v: getattr(v, "code", None))
def test_every_phrase_is_said_in_the_apis_english(phrase, text):
    assert english(phrase) == text


@pytest.mark.parametrize(("phrase", "text"), EXAMPLES, ids=lambda v: getattr(v, "code", None))
def test_every_phrase_is_said_in_chinese_on_the_page_and_as_the_api_in_english(phrase, text):
    with translation.override("en"):
        assert page.say(phrase) == text
    with translation.override("zh-hans"):
        chinese = page.say(phrase)
    assert re.search(r"[\u4e00-\u9fff]", chinese), chinese
    assert "%(" not in chinese
    assert chinese != text


def test_page_and_api_say_a_phrase_from_the_same_table(monkeypatch):
    """Change one entry of PHRASES: the API's English and the page (in both languages) follow."""
    monkeypatch.setitem(PHRASES, "no-estimate", Wording(gettext_noop("nothing to say")))
    phrase = Phrase("no-estimate")
    assert english(phrase) == "nothing to say"
    for language in ("en", "zh-hans"):  # an msgid without a translation stays as it is
        with translation.override(language):
            assert page.say(phrase) == "nothing to say"


def test_the_api_reason_joins_reasons_in_english_and_the_page_in_its_language():
    assert join_reasons(()) is None
    assert join_reasons((NO_BOOKING, UNKNOWN)) == (
        "2 nodes: no self-serve multi-node booking (one node, or sales only); "
        "unknown: GPU memory, fabric bandwidth"
    )
    with translation.override("zh-hans"):
        assert "；" in page.PAGE_LANGUAGE.reasons((NO_BOOKING, UNKNOWN))


def test_every_verdict_and_reason_of_an_estimate_is_the_english_of_its_phrases():
    link = GpuLinkSpec("nvlink", "nvswitch", 4, 8, 900)
    instances = [
        InstanceSpec(1, "ib", 8, 80.0, 989.4, 5, link, FabricSpec("infiniband", 3200, True, 2)),
        InstanceSpec(2, "none", 8, 48.0, None, 4, GpuLinkSpec("none"), FabricSpec()),
    ]
    for job in (Job(70, "train-fsdp"), Job(70, "inference", nodes=(1, 2))):
        for row in estimate(instances, job).results:
            assert row.verdict == english(row.verdict_phrase)
            assert row.reason == join_reasons(row.reason_phrases)


def test_link_kinds_are_named_once_for_sentences_and_table_cells():
    assert english(Phrase("fabric-stage", {"bandwidth": 1.0, "link": "nvlink-sharp"})).endswith(
        "(NVLink with NVSwitch SHARP)"
    )
    with translation.override("en"):
        assert page.link_label("nvlink-sharp") == "NVLink + NVSwitch SHARP"
        assert page.link_label("ethernet") == "TCP over the general network"
        assert page.link_label("roce") == "RoCE"
        assert page.link_label("something-new") == "something-new"
    with translation.override("zh-hans"):
        assert page.link_label("ethernet") == "通用网络上的 TCP"
        assert page.link_label("unknown") == "未知"
        assert page.link_label("nvlink-sharp") == "NVLink + NVSwitch SHARP"
    assert set(LINK_NAMES) >= {"nvlink", "nvlink-sharp", "pcie", "infiniband", "efa", "unknown"}


def test_an_unknown_phrase_code_is_a_bug():
    with pytest.raises(ValueError, match="unknown phrase code"):
        english(Phrase("no-such-code"))


def test_a_job_message_is_a_msgid_and_values_whose_string_is_the_apis_english():
    _, errors = parse_job({"params_b": ["1e9"], "mode": ["train-ddp"], "nodes": ["two"]})
    (too_big,) = errors["params_b"]
    assert isinstance(too_big, FieldError)
    assert (too_big.msgid, too_big.values) == (AT_MOST, {"n": 100_000.0})
    assert too_big == "Must be at most 100000."  # a float as Python writes it shortest
    assert all(e.msgid in FIELD_MESSAGES for messages in errors.values() for e in messages)
    with translation.override("en"):
        assert page.field_errors(errors) == {
            "params_b": ["Must be at most 100000."],
            "nodes": ["'two' is not a whole number."],
        }
    with translation.override("zh-hans"):  # the same values in the msgid's Chinese
        assert page.field_errors(errors) == {
            "params_b": ["不能大于 100000。"],
            "nodes": ["'two' 不是整数。"],
        }
