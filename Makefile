# The front door. `make test` and `make demo` install what is missing
# (scripts/setup.sh) and build first.
BUILD      ?= build
BUILD_SAN  ?= build-san
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
PREFIX     ?= /usr/local
CMAKE_ARGS ?=

.PHONY: all setup build test test-fast test-python test-san demo install clean

all: build

setup:
	@sh scripts/setup.sh

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=$(PREFIX) $(CMAKE_ARGS)

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

# The whole suite: a gcc build, then an ASan+UBSan build with clang (so both
# compilers build with -Werror), each running every test.
test: setup
	$(MAKE) build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)
	$(MAKE) test-san

test-fast: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

# The Python package alone: pytest, the examples of examples/python/ and the
# installed package (ctest label "python").
test-python: build
	ctest --test-dir $(BUILD) --output-on-failure -L python

test-san:
	cmake -S . -B $(BUILD_SAN) -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER=clang -DGWR_SANITIZE=ON
	cmake --build $(BUILD_SAN) -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --test-dir $(BUILD_SAN) --output-on-failure -j $(JOBS)

demo: setup
	$(MAKE) build
	./$(BUILD)/gwr --version
	./$(BUILD)/gwr demo

# Also installs the Python package gwr under PREFIX's site directory of
# /usr/bin/python3 (python/install.cmake: /usr/local/lib/python3.X/dist-packages
# for /usr/local, which Debian's python3 reads: `import gwr` works anywhere).
install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD) $(BUILD_SAN)
