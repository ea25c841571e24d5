# Thin wrapper: every target installs what is missing, configures and builds.
BUILD ?= build
JOBS  ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all bootstrap build demo test bench bench-torch asan package vsix wheel format clean

all: build

bootstrap:
	@bash scripts/bootstrap.sh

$(BUILD)/CMakeCache.txt: | bootstrap
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)

build: bootstrap $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

# Only what the demo needs: the nisa binary and the demo driver (no tests, benchmarks or Python
# module; `make test` builds everything).
demo: bootstrap $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS) --target nisa nisa-demo
	@bash scripts/demo.sh $(BUILD)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) $(CTEST_ARGS)

bench: build
	@bash scripts/bench.sh $(BUILD)

# Whole kernels against PyTorch CPU at one thread (bench/torch_compare.py, docs/performance.md
# "Whole kernels against PyTorch"): the only target that installs python3-torch.
# Options: TORCH_ARGS="--only topk ...".
bench-torch: $(BUILD)/CMakeCache.txt
	@bash scripts/bootstrap.sh --bench
	cmake --build $(BUILD) -j $(JOBS) --target nisa
	/usr/bin/python3 bench/torch_compare.py --nisa $(BUILD)/cli/nisa $(TORCH_ARGS)

# Whole test suite under AddressSanitizer + UndefinedBehaviorSanitizer, less the two
# long-context end-to-end tests (AttnLarge, TkgLarge: ~100 s each optimised, far longer in a
# sanitized Debug build; the same kernels' smaller cases run under it).
asan:
	@$(MAKE) test BUILD=build-asan CTEST_ARGS="-E '^(AttnLarge|TkgLarge)[.]'" CMAKE_FLAGS="-DNISA_SANITIZE=ON -DNISA_BENCH=OFF -DCMAKE_BUILD_TYPE=Debug"

# The Debian package $(BUILD)/nisa_<version>_amd64.deb (packaging/cpack.cmake; README.md
# "Install"): sudo apt install ./$(BUILD)/nisa_*.deb
package: build
	cd $(BUILD) && cpack -G DEB

# The VS Code extension $(BUILD)/nisa-nasm-<version>.vsix (packaging/vsix.sh: installs
# @vscode/vsce from npm into $(BUILD)/vsce, packs editors/vscode, checks the manifest):
# code --install-extension $(BUILD)/nisa-nasm-*.vsix
vsix: bootstrap $(BUILD)/CMakeCache.txt
	@bash packaging/vsix.sh $(BUILD)

# The wheel $(BUILD)/dist/nisa-<version>-*.whl of this build tree's targets (setup.py); a
# `pip install --no-build-isolation .` builds its own (build/wheel: Release, no tests).
wheel: bootstrap $(BUILD)/CMakeCache.txt
	NISA_BUILD_DIR=$(abspath $(BUILD)) /usr/bin/python3 -m build --no-isolation --wheel --outdir $(BUILD)/dist .

format:
	git ls-files '*.cpp' '*.h' | xargs clang-format -i

clean:
	rm -rf $(BUILD) build-asan
