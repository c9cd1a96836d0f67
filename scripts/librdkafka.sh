#!/usr/bin/env bash
# Builds a recent librdkafka for the SCRAM test of test/kcat_test.go and
# prints the directory of its shared library, for LD_LIBRARY_PATH:
#
#   export PURGATORY_LIBRDKAFKA=$(scripts/librdkafka.sh)   # as .ci/run does
#
# Why: Debian's librdkafka (2.0.2, under kcat and python3-confluent-kafka)
# sends the client nonce twice in its final SCRAM message (fixed in 2.6.1,
# confluentinc/librdkafka#4895), which Kafka 4 refuses under RFC 5802's
# strict comparison (CVE-2024-56128), and so does this broker. No newer
# librdkafka is packaged where this project's machines can reach, but npm
# is: node-rdkafka's package carries librdkafka's source (deps/librdkafka),
# pinned here by version, and npm checks the tarball against the
# registry's integrity hash. Only the C library is built (about two
# minutes on two cores), with OpenSSL (TLS, SCRAM) and zlib, nothing
# fetched at build time; kcat, Debian's, loads it by its soname.
#
# The build is cached in $PURGATORY_CACHE (default ~/.cache/purgatory), so
# that only the first run pays for it. Needs npm, a C compiler, make,
# pkg-config and OpenSSL's and zlib's headers (libssl-dev, zlib1g-dev).
set -euo pipefail

node_rdkafka=3.6.1 # bundles librdkafka 2.12.0
want=2.12.0
cache=${PURGATORY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/purgatory}
dir=$cache/librdkafka-$want
if [[ -f $dir/lib/librdkafka.so.1 ]]; then
	echo "$dir/lib"
	exit 0
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/librdkafka.XXXXXX")
trap 'rm -rf "$work"' EXIT
log=$work/build.log
fail() {
	echo "librdkafka.sh: $1 (last lines of the log below)" >&2
	tail -20 "$log" >&2
	exit 1
}
(cd "$work" && npm pack --silent "node-rdkafka@$node_rdkafka") >"$log" 2>&1 || fail "npm pack node-rdkafka@$node_rdkafka failed"
tar -xzf "$work/node-rdkafka-$node_rdkafka.tgz" -C "$work" package/deps/librdkafka
src=$work/package/deps/librdkafka
got=$(sed -n 's/^#define RD_KAFKA_VERSION *0x\([0-9a-f]\{2\}\)\([0-9a-f]\{2\}\)\([0-9a-f]\{2\}\).*/\1 \2 \3/p' "$src/src/rdkafka.h")
read -r major minor patch <<<"$got"
[[ $((16#$major)).$((16#$minor)).$((16#$patch)) == "$want" ]] || fail "node-rdkafka@$node_rdkafka carries librdkafka $got, not $want"
(
	cd "$src"
	./configure --disable-gssapi --disable-zstd --disable-curl --disable-lz4-ext --enable-ssl
	make -j"$(nproc)" libs
) >>"$log" 2>&1 || fail "building librdkafka $want failed"
grep -q SASL_SCRAM "$src/Makefile.config" || fail "librdkafka was built without SASL SCRAM (OpenSSL's headers missing?)"

mkdir -p "$cache"
tmp=$(mktemp -d "$cache/.librdkafka.XXXXXX")
mkdir "$tmp/lib"
cp "$src/src/librdkafka.so.1" "$tmp/lib/"
rm -rf "$dir"
mv "$tmp" "$dir" # whole or not at all: a run cut short leaves no half cache
echo "$dir/lib"
