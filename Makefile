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

.PHONY: all deps configure build demo test check docs test-second-mpi test-second-mpi-long \
	test-sanitizers test-fuzz fuzz-programs run-fuzzers torch torch-venv torch-extension \
	build-beside-torch-venv torch-suite \
	bench-link bench-zero bench-fidelity sim-validate sim-zeropp sim-zeropp-paper carry install \
	clean format tidy

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

# make test: what a user runs. The second MPI's multi-rank suites first, then the main tree's
# suites (the torch backend's included), whose summary ends the run; the long runs (label
# long: every collective family killed mid-call, 100,000-call load runs, the UCX and
# reliability suites at 2 and 4 ranks, FSDP2's 150 steps, the collectives over MPI's
# rendezvous, the 1024-rank simulation, the namespace testbed) wait for make check.
# make check (CI, .ci/run): the same with the long runs, plus the sanitizers and the fuzzers;
# make test's cuts of a long run (label subset: FSDP2's 60 steps, two families killed) are left
# to make test, their long runs checking all they do.
# Both begin with the build and torch's download side by side (pip takes about one core for
# minutes, the compilers the rest), then build zccl_torch as `make torch` does, without making
# the build and the venv a second time (make check: while the fuzzers run).
test: build-beside-torch-venv test-second-mpi
	$(torch_extension)
	cd $(BUILD_DIR) && ctest --output-on-failure -j 1 -LE long

check: build-beside-torch-venv test-second-mpi-long test-sanitizers fuzz-programs
	$(MAKE) --no-print-directory -j 2 run-fuzzers torch-extension
	cd $(BUILD_DIR) && ctest --output-on-failure -j 1 -LE subset

# API reference from the public headers (Doxygen, Debian's package) into build/docs/html.
docs:
	ZCCL_DEPS_EXTRA=docs ./scripts/install-deps.sh
	mkdir -p $(BUILD_DIR)/docs && ZCCL_DOCS_OUT=$(BUILD_DIR)/docs doxygen docs/Doxyfile
	@echo "make docs: $(BUILD_DIR)/docs/html/index.html"

# PyTorch's backend "zccl": a venv with the pinned torch from PyPI (made once, then reused:
# torch-venv) and python/zccl_torch built against this build tree.
TORCH_VERSION ?= 2.15.0
TORCH_VENV ?= .venv-torch
torch_extension = ./scripts/torch-env.sh $(TORCH_VENV) $(TORCH_VERSION) $(BUILD_DIR)
torch: build torch-venv
	$(torch_extension)

torch-extension:
	$(torch_extension)

torch-venv: deps
	ZCCL_DEPS_EXTRA=torch ./scripts/install-deps.sh
	./scripts/torch-env.sh $(TORCH_VENV) $(TORCH_VERSION)

build-beside-torch-venv:
	$(MAKE) --no-print-directory -j 2 build torch-venv

# A selection of torch's own distributed test suite (collectives, point-to-point, groups) over
# zccl and over gloo, at 2 and 3 processes; zccl must pass what gloo passes but the known
# differences (tests/torch/torch_suite.py). About an hour on 2 cores: docs/figures/torch_suite.md.
torch-suite: torch
	$(TORCH_VENV)/bin/python -m pip install -q --disable-pip-version-check expecttest
	$(TORCH_VENV)/bin/python tests/torch/torch_suite.py --markdown docs/figures/torch_suite.md

# A tree that runs only some of its tests (the second MPI's, the sanitizers') builds only the
# programs those tests run (scripts/test-targets.py): build_programs_of TREE CTEST_SELECTION.
build_programs_of = cmake -B $(1) -DZCCL_SELECTED_PROGRAMS="$$(./scripts/test-targets.py $(1) $(2))" \
	&& cmake --build $(1) -j $(JOBS) --target selected_programs

# The multi-rank suites built and run against the second MPI: in make test all but the heavier
# ones (label heavy: 4 ranks, the MPI rendezvous, the reliability suites), which the main MPI
# runs there; in make check the reliability suite at 3 ranks too. Left to the main MPI in both:
# the runs whose figures no MPI changes (label numerics: the ZeRO optimizer's fidelity runs),
# the long ones (the load runs check zccl's own memory, descriptors and threads over many calls;
# the reliability suite at 2 ranks and the collectives over MPI's rendezvous repeat what runs
# here at 3) and the collectives at 4 ranks (at 2 and 3 here).
SECOND_MPI_TESTS = -L mpi -LE "long|heavy|numerics"
test-second-mpi: deps
	ZCCL_MPI=$(SECOND_MPI) ./scripts/install-deps.sh
	cmake -S . -B $(SECOND_BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) \
		$(call mpi_flags,$(SECOND_MPI)) -DZCCL_WITH_CUDA=OFF -DZCCL_BUILD_PERF=OFF $(CMAKE_FLAGS)
	$(call build_programs_of,$(SECOND_BUILD_DIR),$(SECOND_MPI_TESTS))
	cd $(SECOND_BUILD_DIR) && ctest --output-on-failure -j 1 $(SECOND_MPI_TESTS)

test-second-mpi-long:
	$(MAKE) test-second-mpi SECOND_MPI_TESTS='-L mpi -LE "long|numerics" -E ^collectives_test_np4'

# The unit and multi-rank suites under AddressSanitizer + UndefinedBehaviorSanitizer (leaks
# included, those of MPI, UCX and hwloc's PCI plugin aside; the tests labelled asan), and the
# threaded parts (abort from another thread, communicators set up on several threads, device
# work on a communicator's own thread, the simulator's ranks, the calls' records written from
# the caller's and the communicator's threads) under ThreadSanitizer.
# Their reports need file and line, not variables: line tables only (-g1), a fifth less
# compiling than full debug information in a sample of the AddressSanitizer tree's sources
# (ThreadSanitizer's option adds -g of its own, which wins there). AddressSanitizer's tree
# builds at -O1, as its own documentation advises: 113 s against 179 at -O2 here, its suites
# 180 s against 169.
line_tables = -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_C_FLAGS_RELWITHDEBINFO=$(1) -g1 -DNDEBUG" \
	"-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$(1) -g1 -DNDEBUG"
sanitizer_flags = $(call line_tables,$(1)) $(call mpi_flags,$(ZCCL_MPI)) \
	-DZCCL_WITH_CUDA=OFF -DZCCL_BUILD_PERF=OFF $(CMAKE_FLAGS)
ASAN_TESTS = -L asan
TSAN_TESTS = -R "^reliability_test_ucx_np|^bootstrap$$|^staged_threads_2x2$$|^sim_threads$$|^call_trace$$"
test-sanitizers: deps
	cmake -S . -B build-asan -DZCCL_SANITIZE=ON $(call sanitizer_flags,-O1)
	$(call build_programs_of,build-asan,$(ASAN_TESTS))
	cd build-asan && HWLOC_COMPONENTS=-pci ASAN_OPTIONS=detect_leaks=1 \
		LSAN_OPTIONS=suppressions=$(CURDIR)/tests/sanitizers/lsan.supp \
		UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j 1 $(ASAN_TESTS)
	cmake -S . -B build-tsan -DZCCL_TSAN=ON $(call sanitizer_flags,-O2)
	$(call build_programs_of,build-tsan,$(TSAN_TESTS))
	# UCX's memory hooks (libucm) and ThreadSanitizer's interceptors do not mix.
	cd build-tsan && UCX_MEM_EVENTS=no \
		TSAN_OPTIONS="halt_on_error=1 suppressions=$(CURDIR)/tests/sanitizers/tsan.supp" \
		ctest --output-on-failure -j 1 $(TSAN_TESTS)

# zccl-sim on the shapes of make bench-link's table (docs/testbed.md) and of make bench-zero's
# steps (where it has run), side by side with the measured figures: docs/figures/sim_testbed.md.
sim-validate: build
	./scripts/sim-validate.py $(BUILD_DIR)/zccl-sim > docs/figures/sim_testbed.md
	@grep -E '^- |^\| ZeRO' docs/figures/sim_testbed.md

# ZeRO-3 against ZeRO++ simulated at the ZeRO++ paper's scales (64-384 GPUs, two clusters):
# docs/figures/sim_zeropp.md, the runs' JSON under bench/sim.
sim-zeropp: build
	ZCCL_DEPS_EXTRA=bench ./scripts/install-deps.sh
	./scripts/sim-zeropp-scaling.sh $(BUILD_DIR)/zccl-sim bench/sim > docs/figures/sim_zeropp.md

# The same in the paper's own setting (384 V100s, the 18 B GPT of DeepSpeed's ZeRO++ tutorial,
# 1K and 2K tokens per GPU, 100 and 400 Gbit/s nodes) beside its published ratios:
# docs/figures/sim_zeropp_paper.md (about 55 minutes).
sim-zeropp-paper: build
	./scripts/sim-zeropp-paper.sh $(BUILD_DIR)/zccl-sim bench/sim > docs/figures/sim_zeropp_paper.md

# libFuzzer targets, built with clang, each for ZCCL_FUZZ_SECONDS (30) from its corpus, two at
# a time (each is one process on one core). Each runs for its time whatever else the machine
# does, so make check builds zccl_torch beside them.
test-fuzz: fuzz-programs
	$(MAKE) --no-print-directory run-fuzzers

fuzz-programs: deps
	CC=clang CXX=clang++ cmake -S . -B build-fuzz -DZCCL_FUZZ=ON -DZCCL_WITH_CUDA=OFF \
		-DZCCL_BUILD_TESTS=OFF -DZCCL_BUILD_PERF=OFF -DZCCL_BUILD_EXAMPLES=OFF \
		$(call line_tables,-O2) $(call mpi_flags,$(ZCCL_MPI))
	cmake --build build-fuzz -j $(JOBS) --target fuzz_quant_decode fuzz_config \
		fuzz_topology_xml fuzz_bootstrap fuzz_nccl_config

run-fuzzers:
	cd build-fuzz && ctest --output-on-failure -j 2 -L fuzz

# Two nodes in network namespaces behind a capped link (scripts/testbed, root only): the perf
# binaries at 1 and 10 Gbit/s (bench/link: link.md, link.png), and ZeRO-3 against ZeRO++ in
# time (bench/zero: zero.md, zero.png).
bench-link: build
	ZCCL_DEPS_EXTRA=bench ./scripts/install-deps.sh
	MPIEXEC=$$(grep '^MPIEXEC_EXECUTABLE:' $(BUILD_DIR)/CMakeCache.txt | cut -d= -f2) \
		./scripts/testbed/bench-link.sh $(BUILD_DIR) bench/link

bench-zero: build
	ZCCL_DEPS_EXTRA=bench ./scripts/install-deps.sh
	./scripts/testbed/bench-zero.sh $(BUILD_DIR) bench/zero

bench-fidelity: build
	ZCCL_DEPS_EXTRA=bench ./scripts/install-deps.sh
	./scripts/bench-fidelity.sh $(BUILD_DIR) bench/fidelity

# What the GPU test machine lacks (GoogleTest, UCX's headers), into .carry/ for the device tool.
carry:
	./scripts/gpu-carry.sh

install: build
	cmake --install $(BUILD_DIR)

format:
	clang-format -i $$(git ls-files '*.h' '*.cc' '*.c' '*.cu')

# Static analysis of the library's sources with the checks in .clang-tidy. The build's flags
# are GCC's: clang is told to pass over the GCC-only warning options among them.
tidy: configure
	clang-tidy -p $(BUILD_DIR) --quiet --extra-arg=-Wno-unknown-warning-option \
		$$(git ls-files 'src/*.cc')

clean:
	rm -rf $(BUILD_DIR) $(SECOND_BUILD_DIR) build-asan build-tsan build-fuzz
