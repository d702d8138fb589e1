"""Every recorded file is used: named by a manifest, and every manifest replayed in full by a test."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.providers.conftest import RECORDINGS
from tests.providers.hostile import test_aws, test_azure, test_lambda

HERE = Path(__file__).parent


def manifests() -> list[Path]:
    return sorted(RECORDINGS.rglob("manifest.json"))


def test_every_recorded_file_is_named_by_the_manifest_beside_it():
    named = {RECORDINGS / "README.md"}
    for manifest in manifests():
        named.add(manifest)
        for entry in json.loads(manifest.read_text()):
            for key in ("body", "request_body"):
                if entry.get(key):
                    named.add(manifest.parent / entry[key])
    on_disk = {p for p in RECORDINGS.rglob("*") if p.is_file()}
    assert on_disk - named == set(), "recorded files no manifest serves"
    assert named - on_disk == set(), "manifest entries without their file"


def test_every_manifest_is_replayed_in_full_by_some_test():
    # `replay("<folder>")` (conftest) fails its test when any entry goes unrequested; the hostile
    # cases check `transport.unused() == []` themselves.
    sources = "\n".join(p.read_text() for p in HERE.glob("test_*.py"))
    replayed = set(re.findall(r'\breplay\("([^"]+)"\)', sources))
    for module, provider in ((test_aws, "aws"), (test_azure, "azure"), (test_lambda, "lambda")):
        replayed |= {f"hostile/{provider}/{variant}" for variant, *_ in module.CASES}
    folders = {str(m.parent.relative_to(RECORDINGS)) for m in manifests()}
    assert folders - replayed == set(), "recordings no test replays in full"


def test_every_registered_scraper_has_a_recording():
    from providers.registry import SCRAPERS

    missing = {slug for slug in SCRAPERS if not (RECORDINGS / slug / "manifest.json").is_file()}
    assert missing == set(), "registered scrapers without tests/providers/recordings/<slug>/"
