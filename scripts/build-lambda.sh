#!/usr/bin/env bash
# Builds the AWS Lambda package of hermes-zero: the release binary with `--features aws`,
# named `bootstrap`, zipped for the `provided.al2023` runtime. See --help.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  cat <<'EOF'
Usage: scripts/build-lambda.sh [--arch x86_64|arm64|all] [--home DIR] [--scripts DIR] [--stage-only OUT]

Builds the Lambda package of hermes-zero (release, --features aws) for the provided.al2023
runtime and writes, per architecture:

  target/lambda/<arch>/bootstrap             the binary (plus hermes-home/ with --home)
  target/lambda/hermes-zero-<arch>.zip       the deployment package: bootstrap at its root

then prints each zip's size. infra/aws/template.yaml deploys target/lambda/hermes-zero-x86_64.zip
(see infra/aws/README.md for arm64).

  --arch x86_64   only x86_64 (x86_64-unknown-linux-gnu)
  --arch arm64    only arm64 (aarch64-unknown-linux-gnu); fails if its toolchain is missing
  --arch all      x86_64, and arm64 where the toolchain is present, else arm64 is skipped
                  with the reason (the default)
  --home DIR      copy DIR (config.yaml, SOUL.md, skills/, cron/jobs.json) into the package
                  as hermes-home/, which the template's HERMES_HOME=/var/task/hermes-home
                  reads. Without it the function runs on the defaults and its environment.
  --scripts DIR   copy DIR's files into the package as hermes-home/scripts/, the function's
                  $HERMES_HOME/scripts where job scripts are looked up (replaces a scripts/
                  folder of --home). Files keep their exec bit; nothing is group- or
                  world-writable. provided.al2023 is a minimal Amazon Linux 2023: make sure
                  the interpreter the scripts need (bash, python3) is there, or add it with a
                  Lambda layer.
  --stage-only OUT  build nothing: write only hermes-home/ (from --home and --scripts) into
                  OUT, as the zip would hold it, and exit (to check a package's home)
  -h, --help      this text

arm64 needs `rustup target add aarch64-unknown-linux-gnu` and a cross linker: the one in
CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER, else aarch64-linux-gnu-gcc on PATH (Debian:
apt-get install gcc-aarch64-linux-gnu). The zip is made with `zip`, or with
`python3 -m zipfile` where zip is not installed.

glibc: provided.al2023 is Amazon Linux 2023, which has glibc 2.34. A -gnu binary links
against the glibc of the build machine, so this script reads the highest GLIBC_x.y symbol
version the binary needs and fails if it is above 2.34 (then build on Amazon Linux 2023,
e.g. in public.ecr.aws/amazonlinux/amazonlinux:2023, or with
`cargo zigbuild --target x86_64-unknown-linux-gnu.2.34`).
EOF
}

die() { printf 'build-lambda: error: %s\n' "$*" >&2; exit 1; }
say() { printf '==> %s\n' "$*"; }

# The glibc of Amazon Linux 2023, the OS of the provided.al2023 runtime.
AL2023_GLIBC=2.34

ARCH=all
HOME_DIR=
SCRIPTS_DIR=
STAGE_ONLY=
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --arch) [ $# -ge 2 ] || die "--arch needs a value (x86_64, arm64 or all)"; ARCH=$2; shift 2 ;;
    --arch=*) ARCH=${1#--arch=}; shift ;;
    --home) [ $# -ge 2 ] || die "--home needs a directory"; HOME_DIR=$2; shift 2 ;;
    --home=*) HOME_DIR=${1#--home=}; shift ;;
    --scripts) [ $# -ge 2 ] || die "--scripts needs a directory"; SCRIPTS_DIR=$2; shift 2 ;;
    --scripts=*) SCRIPTS_DIR=${1#--scripts=}; shift ;;
    --stage-only) [ $# -ge 2 ] || die "--stage-only needs a directory"; STAGE_ONLY=$2; shift 2 ;;
    --stage-only=*) STAGE_ONLY=${1#--stage-only=}; shift ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
case "$ARCH" in x86_64|arm64|all) ;; *) die "--arch must be x86_64, arm64 or all, not '$ARCH'" ;; esac
if [ -n "$HOME_DIR" ]; then
  [ -d "$HOME_DIR" ] || die "--home: '$HOME_DIR' is not a directory"
  if [ -e "$HOME_DIR/state.db" ]; then
    die "--home: '$HOME_DIR' holds a state.db; on Lambda the store is DynamoDB and the home is read-only, so do not ship a SQLite file"
  fi
fi
if [ -n "$SCRIPTS_DIR" ] && [ ! -d "$SCRIPTS_DIR" ]; then die "--scripts: '$SCRIPTS_DIR' is not a directory"; fi

# stage_home DIR: writes DIR/hermes-home from --home and --scripts (nothing without either).
stage_home() {
  local home=$1/hermes-home
  if [ -n "$HOME_DIR" ]; then cp -R "$HOME_DIR" "$home"; fi
  if [ -n "$SCRIPTS_DIR" ]; then
    rm -rf "$home/scripts"
    mkdir -p "$home/scripts"
    cp -R "$SCRIPTS_DIR/." "$home/scripts/"
    chmod -R go-w "$home/scripts"
    chmod 755 "$home/scripts"
  fi
}

if [ -n "$STAGE_ONLY" ]; then
  mkdir -p "$STAGE_ONLY"
  stage_home "$STAGE_ONLY"
  say "staged $STAGE_ONLY/hermes-home"
  exit 0
fi

command -v cargo > /dev/null || die "cargo is not on PATH (install Rust: https://rustup.rs)"
if command -v zip > /dev/null; then ZIPPER=zip
elif command -v python3 > /dev/null; then ZIPPER=python3
else die "neither zip nor python3 is installed: one is needed to make the zip"
fi

CARGO_OUT=${CARGO_TARGET_DIR:-target}
OUT=target/lambda
mkdir -p "$OUT"

# arm64_missing: prints why arm64 cannot be built here, or nothing when it can (and exports
# the linker and C compiler the cross build needs).
arm64_missing() {
  if ! command -v rustup > /dev/null; then echo "rustup is not installed"; return; fi
  if ! rustup target list --installed | grep -qx aarch64-unknown-linux-gnu; then
    echo "the Rust target is not installed (rustup target add aarch64-unknown-linux-gnu)"; return
  fi
  local linker=${CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER:-aarch64-linux-gnu-gcc}
  if ! command -v "$linker" > /dev/null; then
    echo "no cross linker: '$linker' is not on PATH (Debian: apt-get install gcc-aarch64-linux-gnu, or set CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER)"; return
  fi
  export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=$linker
  # C code in dependencies (TLS crypto) is compiled for the target too.
  export CC_aarch64_unknown_linux_gnu=${CC_aarch64_unknown_linux_gnu:-$linker}
}

# check_glibc BINARY: fails if the binary needs a newer glibc than Amazon Linux 2023's.
check_glibc() {
  local need
  need=$(LC_ALL=C grep -aoE 'GLIBC_[0-9]+\.[0-9]+(\.[0-9]+)?' "$1" | sed 's/^GLIBC_//' | sort -uV | tail -n 1 || true)
  [ -n "$need" ] || die "$1: found no GLIBC symbol versions; is it a glibc (-gnu) binary?"
  if [ "$(printf '%s\n%s\n' "$need" "$AL2023_GLIBC" | sort -V | tail -n 1)" != "$AL2023_GLIBC" ]; then
    die "$1 needs glibc $need but provided.al2023 (Amazon Linux 2023) has $AL2023_GLIBC: build on Amazon Linux 2023 or with cargo zigbuild (see --help)"
  fi
  echo "glibc: needs $need, provided.al2023 has $AL2023_GLIBC: ok"
}

# make_zip DIR ZIP: zips DIR's contents (bootstrap at the root), keeping the exec bit.
make_zip() {
  local dir=$1 zip_abs
  zip_abs="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"
  rm -f "$zip_abs"
  if [ "$ZIPPER" = zip ]; then
    (cd "$dir" && zip -q -r -X "$zip_abs" .)
  else
    (cd "$dir" && python3 -m zipfile -c "$zip_abs" ./*)
  fi
}

# check_zip ZIP: bootstrap at the root, executable.
check_zip() {
  if command -v python3 > /dev/null; then
    python3 - "$1" <<'PY' || die "$1: bootstrap is missing from the root of the zip or is not executable"
import sys, zipfile
info = zipfile.ZipFile(sys.argv[1]).getinfo("bootstrap")
sys.exit(0 if (info.external_attr >> 16) & 0o111 else 1)
PY
  else
    unzip -Z "$1" bootstrap | grep -q '^-rwx' || die "$1: bootstrap is missing from the root of the zip or is not executable"
  fi
}

# build ARCH TRIPLE
build() {
  local arch=$1 triple=$2 bin stage zip size
  say "cargo build --release --features aws --target $triple"
  cargo build --release --locked --features aws --target "$triple" \
    || die "cargo build for $triple failed (output above)"
  bin="$CARGO_OUT/$triple/release/hermes-zero"
  [ -x "$bin" ] || die "cargo reported success but $bin is missing"
  check_glibc "$bin"
  stage="$OUT/$arch"
  rm -rf "$stage"
  mkdir -p "$stage"
  cp "$bin" "$stage/bootstrap"
  chmod 755 "$stage/bootstrap"
  stage_home "$stage"
  zip="$OUT/hermes-zero-$arch.zip"
  make_zip "$stage" "$zip" || die "making $zip with $ZIPPER failed"
  check_zip "$zip"
  size=$(wc -c < "$zip" | tr -d ' ')
  BUILT+=("$(awk -v s="$size" -v z="$zip" 'BEGIN { printf "%s  %d bytes (%.1f MiB)", z, s, s / 1048576 }')")
}

BUILT=()
SKIPPED=
if [ "$ARCH" != arm64 ]; then build x86_64 x86_64-unknown-linux-gnu; fi
if [ "$ARCH" != x86_64 ]; then
  why=$(arm64_missing)
  if [ -z "$why" ]; then
    arm64_missing > /dev/null  # again in this shell, for its exports
    build arm64 aarch64-unknown-linux-gnu
  elif [ "$ARCH" = arm64 ]; then
    die "cannot build arm64: $why"
  else
    SKIPPED="arm64 skipped: $why"
  fi
fi

echo
for line in ${BUILT[@]+"${BUILT[@]}"}; do echo "$line"; done
if [ -n "$SKIPPED" ]; then echo "$SKIPPED"; fi
