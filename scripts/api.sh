#!/usr/bin/env bash
# Keeps the record of the library's exported API: api/current.txt, the
# listing test/apicheck compares the packages with (go test ./... fails when
# they differ), and the changes since the last release.
#
#   scripts/api.sh          # make api: regenerate api/current.txt, then report
#   scripts/api.sh report   # make api-report: report only (CI runs it)
#
# The report has two parts:
#   1. the lines of api/current.txt missing from, or new to, the newest
#      release listing api/vX.Y.Z.txt (no git needed);
#   2. when a v0.* tag is in this clone, apidiff's report between the tag
#      and the working tree, package by package: which changes are
#      compatible and which break callers. A clone without tags skips it.
# Every change it reports belongs in CHANGELOG.md under Unreleased.
#
# Environment:
#   GO   the go command (default: go)
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}

# apidiff is golang.org/x/exp/cmd/apidiff, pinned: x/exp has no tagged
# versions, so this is the pseudo-version of the commit used.
APIDIFF=golang.org/x/exp/cmd/apidiff@v0.0.0-20261113113407-e3970619a1a4

mode=${1:-update}
case $mode in
update)
	$GO test ./test/apicheck -run '^TestAPI$' -count=1 -update
	;;
report) ;;
*)
	echo "usage: $0 [update|report]" >&2
	exit 2
	;;
esac

# features prints a listing's feature lines in byte order, for comm.
features() { grep -v -e '^#' -e '^$' "$1" | LC_ALL=C sort; }

# 1. Against the newest release listing.
release=$(find api -name 'v*.txt' | sort -V | tail -n 1)
if [[ -z $release ]]; then
	echo "no release listing api/v*.txt yet: nothing to compare with"
else
	version=$(basename "$release" .txt)
	removed=$(comm -23 <(features "$release") <(features api/current.txt))
	added=$(comm -13 <(features "$release") <(features api/current.txt))
	if [[ -z $removed && -z $added ]]; then
		echo "api/current.txt: no exported change since $version ($release)"
	else
		echo "api/current.txt against $version ($release); write these in CHANGELOG.md under Unreleased:"
		if [[ -n $removed ]]; then
			echo "  removed or changed, which breaks callers (Changed or Removed):"
			sed 's/^/    - /' <<<"$removed"
		fi
		if [[ -n $added ]]; then
			echo "  new (Added, or the new form of a changed line):"
			sed 's/^/    + /' <<<"$added"
		fi
	fi
fi

# 2. apidiff against the newest v0.* tag, when the clone has one.
tag=$(git tag -l 'v0.*' --sort=-v:refname 2>/dev/null | head -n 1 || true)
if [[ -z $tag ]]; then
	echo "no v0.* tag in this clone: apidiff skipped (git fetch --tags to get them)"
	exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/old" "$tmp/bin"
if ! git archive "$tag" | tar -x -C "$tmp/old"; then
	echo "tag $tag is here but its tree is not (a shallow clone?): apidiff skipped" >&2
	exit 0
fi
GOBIN="$tmp/bin" $GO install "$APIDIFF"

# The packages are the listing's own, so this script never needs editing
# when the list in test/apicheck changes.
echo "apidiff $tag..working tree:"
for pkg in $(grep -o '^pkg [^,]*' api/current.txt | cut -d' ' -f2 | sort -u); do
	echo "== $pkg"
	if [[ ! -d $tmp/old/$pkg ]]; then
		echo "new since $tag"
		continue
	fi
	# apidiff -w writes the package's export data as the tag had it; it
	# loads it from the tag's module, so it runs in the tag's tree.
	(cd "$tmp/old" && "$tmp/bin/apidiff" -w "$tmp/$pkg.export" "./$pkg")
	report=$("$tmp/bin/apidiff" "$tmp/$pkg.export" "./$pkg")
	echo "${report:-no change}"
done
