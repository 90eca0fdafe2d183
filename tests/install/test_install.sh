#!/bin/sh
# Installs gwr into a temporary prefix, then builds the tour example against
# the installed copy twice: through pkg-config and through CMake's
# find_package(gwr). usage: test_install.sh BUILD_DIR SOURCE_DIR
set -u
build=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
step() {
    desc=$1; shift
    if "$@" >"$tmp/log" 2>&1; then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "FAIL: $desc"; tail -20 "$tmp/log"; fi
}

step "cmake --install" cmake --install "$build" --prefix "$tmp/prefix"
libdir=$(ls -d "$tmp"/prefix/lib* | head -1)
step "headers installed" test -f "$tmp/prefix/include/gwr/gwr.h" -a -f "$tmp/prefix/include/gwr/ops.def"
step "shared and static libraries installed" test -f "$libdir/libgwr.a" -a -e "$libdir/libgwr.so"
step "gwr tool installed" test -x "$tmp/prefix/bin/gwr"

export PKG_CONFIG_PATH="$libdir/pkgconfig"
step "pkg-config knows gwr" pkg-config --exists gwr
step "build against pkg-config" sh -c "cc -std=c11 -Wall -Werror $src/examples/tour.c \$(pkg-config --cflags --libs gwr) -o $tmp/tour_pc"
step "run the pkg-config build" env LD_LIBRARY_PATH="$libdir" "$tmp/tour_pc"

mkdir -p "$tmp/proj"
cp "$src/examples/tour.c" "$tmp/proj/"
cat > "$tmp/proj/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.20)
project(use_gwr C)
find_package(gwr 0.1 REQUIRED)
add_executable(tour tour.c)
target_link_libraries(tour PRIVATE gwr::gwr)
CM
step "configure a CMake project with find_package(gwr)" cmake -S "$tmp/proj" -B "$tmp/proj/build" -DCMAKE_PREFIX_PATH="$tmp/prefix"
step "build it" cmake --build "$tmp/proj/build"
step "run it" env LD_LIBRARY_PATH="$libdir" "$tmp/proj/build/tour"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
