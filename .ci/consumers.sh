#!/usr/bin/env bash
# Packages that depend on CacheKit as a user's would, each resolving only what it uses:
#   - the README's installation snippet, verbatim: the CacheKit product alone, which must build and
#     resolve no other package (no pins at all);
#   - one package per level or tool that brings a dependency, with its trait: it must resolve that
#     level's packages (and what they bring) and none of the other levels'.
# Each consumer finds CacheKit at ../CacheKit, as the README's snippet does.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
ln -s "$root" "$work/CacheKit"

# The pins of the package in $1, one identity per line, sorted.
pins() {
    if [ -f "$1/Package.resolved" ]; then
        python3 -c 'import json,sys; print("\n".join(sorted(p["identity"] for p in json.load(open(sys.argv[1]))["pins"])))' \
            "$1/Package.resolved"
    fi
}

# A consumer named $1 whose Package.swift is standard input and whose main.swift is $2.
consumer() {
    mkdir -p "$work/$1/Sources/App"
    cat > "$work/$1/Package.swift"
    printf '%s\n' "$2" > "$work/$1/Sources/App/main.swift"
}

# The packages any level brings; a consumer must resolve none but its own level's.
heavy="swift-nio swift-syntax swift-log swift-metrics swift-docc-plugin"

# Checks that the consumer $1 resolves every package in $2 (space-separated) and none of the
# packages in $heavy that $2 does not name (a level's own packages may bring others of theirs).
expect_pins() {
    (cd "$work/$1" && swift package resolve > /dev/null 2>&1) || (cd "$work/$1" && swift package resolve)
    local got
    got=" $(pins "$work/$1" | tr '\n' ' ')"
    for package in $2; do
        [[ "$got" == *" $package "* ]] || { printf 'consumer %s did not resolve %s: [%s]\n' "$1" "$package" "$got"; exit 1; }
    done
    for package in $heavy; do
        [[ " $2 " == *" $package "* ]] && continue
        [[ "$got" != *" $package "* ]] || { printf 'consumer %s resolved %s: [%s]\n' "$1" "$package" "$got"; exit 1; }
    done
    printf 'consumer %s resolves [%s]\n' "$1" "$got"
}

# The README's snippet: the first swift block after "## Installation", as a whole Package.swift.
awk '/^## Installation/ { on = 1 } on && /^```swift/ { grab = 1; next } grab && /^```/ { exit } grab { print }' \
    "$root/README.md" | consumer readme 'import CacheKit
let cache = Cache<String, Int>(countLimit: 10)
cache["a"] = 1
precondition(cache["a"] == 1)
print("ok")'
grep -q '"CacheKit"' "$work/readme/Package.swift" || { echo "the README has no installation snippet"; exit 1; }
expect_pins readme ""
[ -z "$(pins "$work/readme")" ] || { echo "the README's snippet resolved packages: $(pins "$work/readme")"; exit 1; }
(cd "$work/readme" && swift build > /dev/null && [ "$(swift run -q App)" = ok ])
echo "consumer readme builds and runs"

# One consumer per trait: $1 name, $2 trait, $3 product, $4 the packages it must resolve.
level() {
    consumer "$1" "import $3" <<EOF
// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "$1",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    dependencies: [.package(path: "../CacheKit", traits: ["$2"])],
    targets: [.executableTarget(name: "App", dependencies: [.product(name: "$3", package: "CacheKit")])]
)
EOF
    expect_pins "$1" "$4"
}

level sqlite SQLite CacheKitSQLite ""
[ -z "$(pins "$work/sqlite")" ] || { echo "the SQLite level resolved packages: $(pins "$work/sqlite")"; exit 1; }
(cd "$work/sqlite" && swift build > /dev/null)
echo "consumer sqlite builds"
level observability Observability CacheKitObservability "swift-log swift-metrics"
level redis Redis CacheKitRedis "swift-nio"
level macros Macros CacheKitMacros "swift-syntax"
