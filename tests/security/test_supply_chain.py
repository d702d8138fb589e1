"""Supply chain: every dependency pinned with hashes, and `make audit` never passes on a check
that did not happen."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

BASE = Path(settings.BASE_DIR)


def audit_report_script() -> str:
    """The report step of `make audit`, as the Makefile defines it."""
    makefile = (BASE / "Makefile").read_text()
    match = re.search(r"^define AUDIT_REPORT\n(.*?)^endef$", makefile, re.S | re.M)
    assert match, "the Makefile defines AUDIT_REPORT"
    return match.group(1)


def run_report(tmp_path: Path, report: dict | None, pip_audit_status: int = 0):
    path = tmp_path / "pip-audit.json"
    if report is not None:
        path.write_text(json.dumps(report))
    return subprocess.run(
        [sys.executable, "-c", audit_report_script(), str(path), str(pip_audit_status)],
        capture_output=True,
        text=True,
        timeout=30,
    )


def package(name: str, **extra) -> dict:
    return {"name": name, "version": "1.0", "vulns": []} | extra


def test_every_locked_package_is_pinned_with_hashes():
    lock = (BASE / "requirements.lock").read_text()
    requirements = re.findall(r"^([A-Za-z0-9_.\-\[\]]+)==(\S+) \\$", lock, re.M)
    assert len(requirements) > 50
    blocks = re.split(r"\n(?=[A-Za-z0-9])", lock.split("\n", 1)[1])
    for block in blocks:
        if "==" in block.split("\n", 1)[0]:
            assert "--hash=sha256:" in block, block.split("\n", 1)[0]
    names = {name.lower() for name, _ in requirements}
    assert {"django", "django-axes", "django-ratelimit", "pip-audit"} <= names


def test_django_is_pinned_to_a_6_1_patch_release():
    lock = (BASE / "requirements.lock").read_text()
    assert re.search(r"^django==6\.1\.\d+ \\$", lock, re.M)


def test_the_audit_passes_only_when_every_package_was_checked(tmp_path):
    clean = run_report(tmp_path, {"dependencies": [package("django"), package("httpx")]})
    assert clean.returncode == 0, clean.stderr
    assert "no known vulnerabilities in the 2 locked packages" in clean.stdout


def test_the_audit_fails_when_the_vulnerability_service_is_unreachable(tmp_path):
    skipped = {
        "dependencies": [
            package("django", skip_reason="Dependency not found on PyPI and could not be audited")
        ]
    }
    result = run_report(tmp_path, skipped)
    assert result.returncode == 3
    assert "could not be audited" in result.stderr
    assert "nothing was checked" in result.stderr
    crashed = run_report(tmp_path / "none", None, pip_audit_status=1)
    assert crashed.returncode == 1
    assert "wrote no report" in crashed.stderr


@pytest.mark.parametrize("status", [0, 1])
def test_the_audit_fails_and_names_each_known_vulnerability(tmp_path, status):
    vulnerable = package(
        "django", vulns=[{"id": "PYSEC-2099-1", "fix_versions": ["6.1.99"], "description": ""}]
    )
    result = run_report(tmp_path, {"dependencies": [vulnerable]}, pip_audit_status=status)
    assert result.returncode == 1
    assert "django 1.0: PYSEC-2099-1 (fixed in 6.1.99)" in result.stdout
