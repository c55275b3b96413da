# The two commands: `make demo` and `make test`. Both install what is missing, configure
# and build first.
BUILD_DIR ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps configure build demo test install clean format tidy

all: build

deps:
	./scripts/install-deps.sh

configure: deps
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_FLAGS)

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

# ZeRO-3 against ZeRO++ on both demo models, 4 ranks as 2 emulated nodes of 2.
demo: build
	ZCCL_RANKS_PER_NODE=2 mpiexec -n 4 $(BUILD_DIR)/examples/zero_demo

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j 1

install: build
	cmake --install $(BUILD_DIR)

format:
	clang-format -i $$(git ls-files '*.h' '*.cc' '*.c' '*.cu')

# Static analysis of the library's sources with the checks in .clang-tidy.
tidy: configure
	clang-tidy -p $(BUILD_DIR) --quiet $$(git ls-files 'src/*.cc')

clean:
	rm -rf $(BUILD_DIR)
