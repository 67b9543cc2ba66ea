# iosfarm: the two entry points. `make run` and `make test` install what is
# missing (Debian packages), configure, build, then run the main job or all
# tests. Other targets are conveniences.
BUILD_DIR ?= build
BUILD_TYPE ?= RelWithDebInfo
JOBS ?= $(shell nproc)
GENERATOR := $(shell command -v ninja >/dev/null 2>&1 && echo Ninja || echo "Unix Makefiles")
CTEST_ARGS ?=

.PHONY: run test deps deps-build configure build build-cli clean fuzz images images-test deb deb-test

# The main job needs the CLI and its libraries only, not the test suites.
run: build-cli
	./scripts/run-main-job.sh $(BUILD_DIR)

test: deps build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) $(CTEST_ARGS)

# Build packages only for the main job; the test suites' packages (PyTorch
# and the rest) with `make test`.
deps-build:
	./scripts/install-deps.sh build

# With the test packages, ONNX Runtime for bench/onnxruntime_cpu_bench.py (the
# cpu backend's peer), best effort: without it that benchmark's smoke test is
# skipped, saying why.
deps:
	./scripts/install-deps.sh test
	@if command -v npm >/dev/null 2>&1 && [ ! -d bench/onnxruntime/node_modules/onnxruntime-node ]; then \
	  (cd bench/onnxruntime && timeout 300 npm ci --no-audit --no-fund --onnxruntime-node-install=skip) || \
	  echo "deps: onnxruntime-node not installed; onnxruntime_cpu_bench_smoke will be skipped"; fi

configure: deps-build
	cmake -S . -B $(BUILD_DIR) -G "$(GENERATOR)" -DCMAKE_BUILD_TYPE=$(BUILD_TYPE)

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

build-cli: configure
	cmake --build $(BUILD_DIR) -j $(JOBS) --target iosfarm

# libFuzzer target for the ONNX importer (clang); see graph/onnx/FUZZING.md.
FUZZ_FLAGS := -fsanitize=fuzzer-no-link,address,undefined
fuzz: deps
	CC=clang CXX=clang++ cmake -S . -B $(BUILD_DIR)-fuzz -G "$(GENERATOR)" \
	  -DIOSFARM_FUZZ=ON -DIOSFARM_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DCMAKE_CXX_FLAGS="$(FUZZ_FLAGS)" -DCMAKE_C_FLAGS="$(FUZZ_FLAGS)"
	cmake --build $(BUILD_DIR)-fuzz -j $(JOBS) --target onnx_import_fuzzer

# Container images (docker/*.Dockerfile) with docker, or buildah where no
# docker engine runs; see scripts/build-images.sh and docs/operations.md.
images:
	./scripts/build-images.sh server worker-cpu

# The built images run as deploy/docker-compose.yml runs them (slow: a job
# through the containers; not part of `make test`).
images-test:
	/usr/bin/python3 tests/images/images_smoke_test.py

# The Debian package (cpack -G DEB of a cpu build for /usr; scripts/build-deb.sh),
# and its smoke test in a clean Debian 12 root (slow: debootstrap and apt; not
# part of `make test`).
deb: deps-build
	./scripts/build-deb.sh $(BUILD_DIR)-deb

deb-test: deb
	./tests/package/deb_smoke_test.sh $$(ls -t $(BUILD_DIR)-deb/iosfarm_*.deb | head -1)

clean:
	rm -rf $(BUILD_DIR) $(BUILD_DIR)-fuzz $(BUILD_DIR)-deb
