#!/usr/bin/env bash
# Build a patched FerretDB (SQLite backend) from the Go module proxy.
#
#   scripts/ferretdb/build.sh OUTPUT_BINARY
#
# Called by scripts/dev-mongo; see docs/dev-database.md for the why.
#
# Why not `go install github.com/FerretDB/FerretDB/cmd/ferretdb@VERSION`?
# The module zip lacks build/version/version.txt (it is generated from git by
# `task gen-version`), and the binary panics at start without it. So we copy
# the module source to a writable directory, write version.txt, patch, and
# `go build` there. No build tags are needed: the SQLite backend (pure Go,
# modernc.org/sqlite) is in the default build; its only tag is the opt-out
# `ferretdb_no_sqlite`.
set -euo pipefail

FERRETDB_MODULE=github.com/FerretDB/FerretDB
FERRETDB_VERSION=${FERRETDB_VERSION:-v1.24.2}

die() { echo "ferretdb/build.sh: error: $*" >&2; exit 1; }
say() { echo "ferretdb/build.sh: $*" >&2; }

[[ $# -eq 1 ]] || die "usage: $0 OUTPUT_BINARY"
out=$1
command -v go >/dev/null || die "'go' is not on PATH (Go >= 1.24 is needed to build FerretDB)"
command -v python3 >/dev/null || die "'python3' is not on PATH"

out_dir=$(dirname "$out")
mkdir -p "$out_dir"
work=$(mktemp -d "$out_dir/build.XXXXXX")
trap 'chmod -R u+w "$work" 2>/dev/null || true; rm -rf "$work"' EXIT

# 1. Fetch the module source through GOPROXY (respects GOPATH/GOMODCACHE).
#    Run outside any Go module so the repository's own go.mod files don't matter.
say "downloading $FERRETDB_MODULE@$FERRETDB_VERSION via the Go module proxy"
json=$(cd "$work" && GOFLAGS=-mod=mod go mod download -json "$FERRETDB_MODULE@$FERRETDB_VERSION") ||
    die "go mod download failed: $json"
moddir=$(printf '%s' "$json" | python3 -c '
import json, sys
d = json.load(sys.stdin)
if d.get("Error"):
    sys.exit("go mod download: " + d["Error"])
print(d["Dir"])') || die "cannot read module directory from: $json"
[[ -f $moddir/go.mod ]] || die "module directory $moddir has no go.mod"

# 2. Writable copy (the module cache is read-only).
src=$work/src
cp -R "$moddir" "$src"
chmod -R u+w "$src"

# 3. The files `task gen-version` would generate from git.
printf '%s\n' "$FERRETDB_VERSION" >"$src/build/version/version.txt"
printf '%s\n' "mongodns-dev" >"$src/build/version/package.txt"

# 4. Patch: make `_id` lookups use the `_id` index.
#
# The SQLite backend creates the unique `_id_` index on the expression
#     _ferretdb_sjson->"_id"                 (registry.go, indexesCreate)
# but queries (find/update/delete by _id, explain) filter on IDColumn, which is
#     _ferretdb_sjson->'$._id'               (metadata.go)
# Both evaluate to the same value, but SQLite's planner only uses an index on
# an expression when the query contains the *same* expression, so every `_id`
# lookup was a full table scan. Writing IDColumn as ->'_id' (same path, the
# form the index uses) makes the planner pick the index. The PostgreSQL
# backend already uses ->'_id' for the same constant.
meta=$src/internal/backends/sqlite/metadata/metadata.go
[[ -f $meta ]] || die "patch target $meta not found (FerretDB layout changed?)"
cp "$meta" "$work/metadata.go.orig"
sed -i "s|^\(\s*IDColumn\s*=\s*DefaultColumn + \"->\)'\\\$\._id'\"|\1'_id'\"|" "$meta"
if cmp -s "$meta" "$work/metadata.go.orig"; then
    grep -n 'IDColumn' "$work/metadata.go.orig" >&2 || true
    die "the _id index patch did NOT apply to $meta (the line above no longer matches; update the sed in $0)"
fi
grep -q "IDColumn = DefaultColumn + \"->'_id'\"" "$meta" ||
    die "patched $meta does not contain the expected IDColumn line"
say "patched: $(diff "$work/metadata.go.orig" "$meta" | grep '^>' | sed 's/^>\s*//')"

# 5. Build. -buildvcs=false: the copy is not a VCS checkout (and may sit inside
#    one if MONGODNS_CACHE points into a repository).
say "go build ./cmd/ferretdb ($(go version | cut -d' ' -f3)); the first build takes a few minutes"
(cd "$src" && go build -buildvcs=false -trimpath -o "$work/ferretdb" ./cmd/ferretdb) ||
    die "go build of FerretDB failed"
"$work/ferretdb" --version >/dev/null 2>&1 || die "built binary does not run: $("$work/ferretdb" --version 2>&1 | tail -5)"

cat >"$out_dir/BUILD-INFO" <<EOF
module:  $FERRETDB_MODULE@$FERRETDB_VERSION
sum:     $(printf '%s' "$json" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("Sum",""))')
go:      $(go version)
built:   $(date -u +%Y-%m-%dT%H:%M:%SZ)
patch:   internal/backends/sqlite/metadata/metadata.go: IDColumn ->'\$._id' => ->'_id' (use the _id_ index)
EOF
mv -f "$work/ferretdb" "$out"
say "built $out"
