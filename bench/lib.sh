# lib.sh - what the bench/run_*.sh scripts share. Source it from the
# repository root with BUILD set.

# bench_build TARGET...: configures BUILD (RelWithDebInfo) when it has no
# CMakeCache.txt yet, builds the targets, and makes sure onnxruntime-node
# is installed (npm, no install scripts: the package ships its library).
bench_build() {
    [ -f "$BUILD/CMakeCache.txt" ] || cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    cmake --build "$BUILD" --target "$@" -j "$(nproc)" >/dev/null
    [ -f node_modules/onnxruntime-node/package.json ] || npm install --ignore-scripts --no-audit --no-fund >/dev/null
}

# bench_workdir [DIR]: W is DIR, or a temporary folder removed at exit.
bench_workdir() {
    W=${1:-$(mktemp -d)}
    mkdir -p "$W"
    [ -n "${1:-}" ] || trap 'rm -rf "$W"' EXIT
}

# What was measured: the build folder, its type and the commit.
bench_build_desc() {
    echo "build $BUILD ($(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$BUILD/CMakeCache.txt")), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD -- src include 2>/dev/null || echo ' + local changes')"
}
