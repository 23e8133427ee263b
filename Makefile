# The two commands of the README:
#   make demo   install what is missing, build, run the quickstart with `drover run`
#   make test   install what is missing, build, run every test through ctest
# Other targets: build, asan (build + test under sanitizers), release, bench, fuzz (each
# libFuzzer harness of fuzz/ for FUZZ_SECONDS, default 60), format, format-check, thread-safety,
# deps.

PRESET ?= dev
JOBS ?= $(shell nproc)
FUZZ_SECONDS ?= 60
DEBIAN_PACKAGES := build-essential cmake ninja-build pkg-config git \
  libyaml-cpp-dev nlohmann-json3-dev libcpp-httplib-dev libsqlite3-dev libcli11-dev \
  libspdlog-dev libfmt-dev libexpected-dev libgtest-dev libgmock-dev libbenchmark-dev \
  libhowardhinnant-date-dev tzdata libssl-dev openssl slurm-wlm munge \
  python3 procps clang-format clang libclang-rt-14-dev postgresql-15 libpqxx-dev prometheus \
  libevent-dev libmimalloc-dev libslurm-dev

.PHONY: deps kubernetes-deps openapi-deps web web-deps build test demo asan release bench fuzz format \
  format-check thread-safety clean

# Installs the Debian packages that are not installed yet (needs root, or sudo).
deps:
	@missing=$$(for p in $(DEBIAN_PACKAGES); do \
	  dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; \
	done); \
	if [ -n "$$missing" ]; then \
	  echo "installing:" $$missing; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing; \
	fi

# Node.js and npm (Debian's, unless a node is installed already) and the npm packages of
# tests/kubernetes (kubernetes-models, pinned by its package-lock.json) for the Kubernetes
# manifest validation test.
kubernetes-deps: deps
	@if ! command -v npm >/dev/null; then \
	  echo "installing: nodejs npm"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends nodejs npm; \
	fi
	@[ -d tests/kubernetes/node_modules/kubernetes-models ] || \
	  npm ci --prefix tests/kubernetes --no-audit --no-fund --loglevel=error

# The npm packages of tests/openapi (Redocly's OpenAPI linter and Ajv, pinned by its
# package-lock.json) for the tests openapi.lint and openapi.responses; Node.js as above.
# Installed again when the lock file is newer than the installed tree.
openapi-deps: kubernetes-deps
	@[ tests/openapi/node_modules/.package-lock.json -nt tests/openapi/package-lock.json ] || \
	  npm ci --prefix tests/openapi --no-audit --no-fund --loglevel=error

# The dashboard's bundle (web/dist, embedded into the binary by the build) where npm is present:
# npm ci from web/package-lock.json, then esbuild. Without npm the binary serves a "dashboard not
# built" page at /.
web:
	@if command -v npm >/dev/null; then \
	  [ web/node_modules/.package-lock.json -nt web/package-lock.json ] || \
	    npm ci --prefix web --no-audit --no-fund --loglevel=error; \
	  npm run --prefix web --silent build; \
	else \
	  echo "npm not found: building without the dashboard (see docs/dashboard.md)"; \
	fi

# Debian's Chromium and the npm packages of tests/web (playwright-core, pinned by its
# package-lock.json) for the browser test web.browser; Node.js as above.
web-deps: kubernetes-deps
	@dpkg-query -W -f='$${Status}\n' chromium 2>/dev/null | grep -q 'install ok installed' || { \
	  echo "installing: chromium"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends chromium; }
	@[ tests/web/node_modules/.package-lock.json -nt tests/web/package-lock.json ] || \
	  npm ci --prefix tests/web --no-audit --no-fund --loglevel=error

build: deps web
	cmake --preset $(PRESET) >/dev/null
	cmake --build --preset $(PRESET) -j $(JOBS)

test: kubernetes-deps build openapi-deps web-deps
	ctest --preset $(PRESET) -j $(JOBS)

demo: build
	./build/drover run examples/quickstart.yaml

asan:
	$(MAKE) test PRESET=asan

release: deps
	cmake --preset release >/dev/null
	cmake --build --preset release -j $(JOBS)

bench: release
	@echo "see docs/benchmarks.md for the benchmark commands"

# Builds the libFuzzer harnesses (clang; libclang-rt-14-dev has libFuzzer) with ASan, UBSan and
# LeakSanitizer, and runs each for FUZZ_SECONDS from its seed corpus (fuzz/README.md). Fails,
# leaving the input under build-fuzz/fuzz/work/, on any crash, sanitizer report or leak.
fuzz: deps
	cmake --preset fuzz >/dev/null
	cmake --build --preset fuzz -j $(JOBS)
	FUZZ_SECONDS=$(FUZZ_SECONDS) fuzz/run.sh

SOURCES = $(shell find drover tests bench tools fuzz -name '*.h' -o -name '*.cc')

format:
	clang-format -i $(SOURCES)

# Fails, naming the files, if any source is not clang-formatted.
format-check: deps
	clang-format --dry-run --Werror $(SOURCES)

# Clang's -Wthread-safety (syntax only) over the sources annotated with GUARDED_BY, REQUIRES...
# (drover/common/thread_annotations.h), with the flags of build/compile_commands.json.
thread-safety: deps
	cmake --preset $(PRESET) >/dev/null
	python3 .ci/thread_safety.py

clean:
	rm -rf build build-asan build-release build-fuzz
