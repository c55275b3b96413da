# The two commands: `make demo` and `make test`. Both install what is missing, configure
# and build first.
BUILD_DIR ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
# The MPI to build against: mpich (default) or openmpi, where both are installed side by side
# (Debian's mpicc.mpich / mpicc.openmpi); the system's default MPI when that one is absent.
ZCCL_MPI ?= mpich
# make test runs the multi-rank suites once more against the other MPI, in this tree.
SECOND_MPI ?= openmpi
SECOND_BUILD_DIR ?= build-$(SECOND_MPI)

mpi_flags = $(if $(shell command -v mpicc.$(1)),-DMPI_C_COMPILER=mpicc.$(1) \
	-DMPIEXEC_EXECUTABLE=$(shell command -v mpiexec.$(1)))

.PHONY: all deps configure build demo test test-second-mpi install clean format tidy

all: build

deps:
	ZCCL_MPI=$(ZCCL_MPI) ./scripts/install-deps.sh

configure: deps
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(call mpi_flags,$(ZCCL_MPI)) \
		$(CMAKE_FLAGS)

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

demo: build
	cmake --build $(BUILD_DIR) --target demo

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j 1
	$(MAKE) test-second-mpi

# The library and its multi-rank suites built and run against the second MPI.
test-second-mpi:
	ZCCL_MPI=$(SECOND_MPI) ./scripts/install-deps.sh
	cmake -S . -B $(SECOND_BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) \
		$(call mpi_flags,$(SECOND_MPI)) -DZCCL_WITH_CUDA=OFF -DZCCL_BUILD_PERF=OFF \
		-DZCCL_BUILD_SANITIZED_TESTS=OFF $(CMAKE_FLAGS)
	cmake --build $(SECOND_BUILD_DIR) -j $(JOBS)
	cd $(SECOND_BUILD_DIR) && ctest --output-on-failure -j 1 -L mpi

install: build
	cmake --install $(BUILD_DIR)

format:
	clang-format -i $$(git ls-files '*.h' '*.cc' '*.c' '*.cu')

# Static analysis of the library's sources with the checks in .clang-tidy.
tidy: configure
	clang-tidy -p $(BUILD_DIR) --quiet $$(git ls-files 'src/*.cc')

clean:
	rm -rf $(BUILD_DIR) $(SECOND_BUILD_DIR)
