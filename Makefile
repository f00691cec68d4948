# Self-Attention, Step by Step.  Two commands on a fresh machine:
#   make book   - set up .venv, build the HTML book into _build/html
#   make test   - set up .venv, ruff, the book build, the pytest suite
# While you work: make check (ruff, the import contracts, the fast tests: under 45 s). make help lists all.
# Instructor: make grade [PS=ps05_matrix_form] [STUDENT=alice] [JOBS=2 | SCHEDULER=tcp://host:8786] [DB_URL=postgresql://...]
#            [EXPORT=canvas,moodle] [ARGS=--no-sandbox], make grade-demo.
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -ec
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
JOBS ?= 1
ARGS ?=
PS ?=
STUDENT ?=
DB_URL ?=
SCHEDULER ?=
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
export PYTHONHASHSEED := 0
export PYDEVD_DISABLE_FILE_VALIDATION := 1

.PHONY: all help book translations notebooks check test lint pytest system-packages sandbox-packages browser-packages grade grade-demo publish release bench clean

all: book

# Re-installs only when requirements.txt or pyproject.toml changed.
$(STAMP): requirements.txt pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -r requirements.txt 2>&1 | { grep -v 'is ignored: it is neither' || true; }
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (attn_ref)" >/dev/null
	@touch $(STAMP)

# System packages, installed with apt when absent and we may (root); nothing runs apt when all are present.
# sandbox-packages: bubblewrap, the sandbox every student kernel and re-check runs in (make grade needs
# nothing else). browser-packages: Debian's chromium for the browser tests (Playwright's own browser download
# is never used) and PostgreSQL's server binaries for the test of a PostgreSQL gradebook (make test).
# Two runs started together (two assignments graded at once) take turns: flock on one lock file, and apt
# waits for a lock another apt holds (DPkg::Lock::Timeout) instead of exiting 100.
APT := apt-get -o DPkg::Lock::Timeout=300 -o Acquire::Retries=3
APT_LOCK := /var/lock/self-attention-apt.lock
define apt_install
if [ -n "$$missing" ]; then \
  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
    echo "installing$$missing with apt (about a minute)"; \
    flock -w 900 $(APT_LOCK) sh -c '$(APT) update -qq && DEBIAN_FRONTEND=noninteractive $(APT) install -y -qq '"$$missing"' >/dev/null'; \
  else \
    echo "missing:$$missing and not root: $(1) (sudo apt-get install$$missing)"; \
  fi; \
fi
endef

sandbox-packages:
	@missing=""; command -v bwrap >/dev/null 2>&1 || missing=" bubblewrap"; \
	$(call apt_install,make grade refuses to grade without the sandbox)

# All of them (the sandbox's message and older notes name this target).
system-packages: sandbox-packages browser-packages

browser-packages:
	@missing=""; command -v chromium >/dev/null 2>&1 || missing=" chromium"; \
	{ command -v initdb || ls /usr/lib/postgresql/*/bin/initdb; } >/dev/null 2>&1 || missing="$$missing postgresql"; \
	$(call apt_install,the tests that need them will be skipped)

help:
	@echo "make book        set up .venv and build the HTML book into _build/html"
	@echo "make check       ruff, the import contracts (lint-imports) and the fast tests: the inner loop, < 45 s"
	@echo "make test        ruff, the book build and the whole pytest suite: before a submission"
	@echo "make notebooks   write the launch notebooks book/<chapter>.ipynb from the chapters"
	@echo "make translations  new English texts into the Chinese catalogues (locales/zh_CN), untranslated"
	@echo "make release     regenerate exercises/ from solutions/ (text cells in English and Chinese;"
	@echo "                 LANG=en or LANG=zh_CN: in one language)"
	@echo "make publish DEST=folder  the student edition (LANG=en|zh_CN|both: the exercises' text cells)"
	@echo "make grade       grade what is new or changed in submitted/ (PS=, STUDENT=, JOBS=, SCHEDULER=, DB_URL=, EXPORT=, ARGS=)"
	@echo "make grade-demo  grade a demo class of eight into _build/grade-demo"
	@echo "make bench       the speed ratios (bench/results.md); BUSY=2 beside two CPU-bound processes"
	@echo "make sandbox-packages   bubblewrap, all make grade needs (apt, as root)"
	@echo "make browser-packages   chromium and PostgreSQL for make test (apt, as root)"
	@echo "make system-packages    both of the above"

# The font of the Chinese figures (Debian's fonts-noto-cjk), installed with apt when absent and we are
# root; otherwise one line says how.  Matplotlib's stale font list is rebuilt by the figure code itself
# (attn_book/figures/fonts.py), and the zh build fails on any glyph drawn as a box.
.PHONY: fonts
fonts:
	@if [ -z "$$(fc-list 'Noto Sans CJK SC' family 2>/dev/null || true)" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing fonts-noto-cjk with apt (the Chinese figures' font)"; \
	    apt="apt-get -o DPkg::Lock::Timeout=300 -qq"; \
	    $$apt update && DEBIAN_FRONTEND=noninteractive $$apt install -y fonts-noto-cjk >/dev/null; \
	  fi; \
	  if [ -z "$$(fc-list 'Noto Sans CJK SC' family 2>/dev/null || true)" ]; then \
	    echo "make book: no CJK font for the Chinese figures: run 'sudo apt-get install fonts-noto-cjk' (or 'sudo make fonts'), then make book again" >&2; \
	    exit 1; \
	  fi; \
	fi

book: $(STAMP) fonts
	@if [ -n "$$CI" ]; then rm -rf _build/.jupyter_cache _build/.doctrees _build/.doctrees-zh; fi  # every page read and executed again, in both languages from the same run
	$(BIN)/jupyter-book build . -W -n --keep-going
	$(BIN)/python book/_ext/i18n.py zh
	@echo "Book: file://$(CURDIR)/_build/html/index.html (中文版: _build/html/zh/index.html)"

# After an English text changed: the catalogues (locales/zh_CN) get its new messages, untranslated
# (figures.po: the figures' texts, read from the last make book's executed chapters); translate them
# (python book/_ext/po_check.py lists what is left), then make release.
translations: $(STAMP)
	$(BIN)/python book/_ext/i18n.py pot
	$(BIN)/python book/_ext/i18n.py update
	$(BIN)/python book/_ext/i18n.py figures
	$(BIN)/python -m attn_grader.authoring.bilingual extract

# The launch notebooks book/<chapter>.ipynb (no outputs) from the .md chapters; commit them with the chapter.
notebooks: $(STAMP)
	$(BIN)/python book/_ext/notebooks.py

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/lint-imports

pytest: $(STAMP) sandbox-packages browser-packages
	$(BIN)/python -m pytest -n 2 --dist loadgroup

# The inner loop: no book build, no nbgrader, no browser (the slowest tests are listed at the end, and
# every unmarked test over 2 s by name); it prints its own wall time.
check: $(STAMP)
	@start=$$(date +%s.%N); rc=0; \
	{ echo "$(BIN)/ruff check ." && $(BIN)/ruff check . && \
	  echo "$(BIN)/lint-imports" && $(BIN)/lint-imports && \
	  echo '$(BIN)/python -m pytest -n 2 -q -m "not slow and not browser"' && \
	  $(BIN)/python -m pytest -n 2 -q -m "not slow and not browser"; } || rc=$$?; \
	echo "make check: $$(awk -v a=$$start -v b=$$(date +%s.%N) 'BEGIN { printf "%.0f", b - a }') s wall time"; \
	exit $$rc

test: lint book pytest

# make release LANG=en, LANG=zh_CN or LANG=both: the text cells in one language or both; the grading is the
# same. The choice is recorded in nbgrader_config.py (c.OneLanguage.language), so a later make release and
# nbgrader's own generate_assignment release in it too. Only a LANG given on the command line counts (the
# environment's LANG=en_US.UTF-8 is the locale).
release: $(STAMP)
	-$(BIN)/python -m attn_grader.authoring.bilingual apply
	$(BIN)/python -m attn_grader.authoring.release $(if $(filter command line,$(origin LANG)),--lang $(LANG))

# make publish DEST=../student-edition [LANG=en|zh_CN|both]: the student edition (the book, its site, exercises/,
# attn_ref and the self-check; no solution, hidden test or secret), to push as the students' repository
# (repository.url in _config.yml).
publish: book
	@test -n "$(DEST)" || { echo "make publish DEST=folder (a new folder, or an edition written before)"; exit 2; }
	$(BIN)/python -m attn_grader.authoring.publish '$(DEST)' --lang $(if $(filter command line,$(origin LANG)),$(LANG),both)

grade: $(STAMP) sandbox-packages
	$(BIN)/python -m attn_grader.run.autograde --jobs $(JOBS) $(if $(SCHEDULER),--scheduler '$(SCHEDULER)') $(if $(PS),--assignment $(PS)) $(if $(STUDENT),--student '$(STUDENT)') $(if $(DB_URL),--db-url '$(DB_URL)') $(if $(EXPORT),--export '$(EXPORT)') $(ARGS)

grade-demo: $(STAMP) sandbox-packages
	$(BIN)/python -m attn_grader.authoring.demo --jobs $(JOBS)

# BUSY=2: two CPU-bound processes run beside it, as on a busy machine (the book must still build).
bench: $(STAMP)
	$(BIN)/python -m bench $(if $(BUSY),--busy $(BUSY))

clean:
	rm -rf _build
