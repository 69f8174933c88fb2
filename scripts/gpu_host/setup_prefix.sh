#!/usr/bin/env bash
# Brings Tessera's build dependencies to an offline GPU host (Ubuntu 24.04) as Debian 12 .debs
# unpacked into a private prefix; nothing is installed system-wide. See scripts/gpu_host/README.md.
#
#   here (Debian 12, online):  bash scripts/gpu_host/setup_prefix.sh download
#       -> .deps/debs/*.deb (copy the repository, .deps included, to the GPU host)
#   there (offline):           bash scripts/gpu_host/setup_prefix.sh install [PREFIX]   (default .deps/prefix)
#                              eval "$(bash scripts/gpu_host/setup_prefix.sh env [PREFIX])"
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

DEB_DIR=.deps/debs
# Always unpacked: ONNX protos, protobuf 3.21 (must match the protoc that generated onnx-ml.pb.h),
# oneDNN 2.6, GoogleTest/GMock, Google Benchmark, the ONNX conformance data, the Vulkan headers and loader and
# glslc (the Vulkan EP; NVIDIA's Vulkan driver comes from the host).
REQUIRED=(
  libonnx1 libonnx-dev libonnxifi libonnx-testdata
  libprotobuf32 libprotobuf-lite32 libprotobuf-dev libprotoc32 protobuf-compiler
  libdnnl2 libdnnl-dev
  libgtest-dev libgmock-dev googletest
  libbenchmark1debian libbenchmark-dev
  libvulkan1 libvulkan-dev glslc libshaderc1
)
# Unpacked only when the host lacks the library: the host's own (newer) copies must win.
declare -A OPTIONAL_PROVIDES=(
  [libgomp1]=libgomp.so.1
  [ocl-icd-libopencl1]=libOpenCL.so.1
  [zlib1g-dev]=libz.so
)

usage() {
  sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

download() {
  mkdir -p "$DEB_DIR"
  (cd "$DEB_DIR" && apt-get download "${REQUIRED[@]}" "${!OPTIONAL_PROVIDES[@]}")
  ls -1 "$DEB_DIR"
  echo "setup_prefix.sh: $(find "$DEB_DIR" -name "*.deb" | wc -l) packages in $DEB_DIR ($(du -sh "$DEB_DIR" | cut -f1))"
}

host_has_library() {
  ldconfig -p 2>/dev/null | grep -q "/$1\$" || compgen -G "/usr/lib/x86_64-linux-gnu/$1" >/dev/null
}

deb_for() {
  local matches=("$DEB_DIR/$1"_*.deb)
  [[ -f "${matches[0]}" ]] || { echo "setup_prefix.sh: no $DEB_DIR/$1_*.deb (run 'download' first)" >&2; exit 1; }
  echo "${matches[0]}"
}

# dpkg -x keeps the packages' symlinks; absolute ones would point at the host's /usr, so re-aim them.
relocate_absolute_symlinks() {
  local prefix=$1 link target
  while IFS= read -r -d '' link; do
    target=$(readlink "$link")
    if [[ $target == /* ]]; then ln -sfn "$prefix$target" "$link"; fi
  done < <(find "$prefix" -type l -print0)
}

install_prefix() {
  local prefix package
  prefix=$(realpath -m "${1:-.deps/prefix}")
  mkdir -p "$prefix"
  for package in "${REQUIRED[@]}"; do dpkg -x "$(deb_for "$package")" "$prefix"; done
  for package in "${!OPTIONAL_PROVIDES[@]}"; do
    if host_has_library "${OPTIONAL_PROVIDES[$package]}"; then
      echo "setup_prefix.sh: host has ${OPTIONAL_PROVIDES[$package]}; not unpacking $package" >&2
    else
      dpkg -x "$(deb_for "$package")" "$prefix"
    fi
  done
  relocate_absolute_symlinks "$prefix"
  echo "setup_prefix.sh: unpacked into $prefix; now run: eval \"\$(bash $0 env $prefix)\"" >&2
}

print_env() {
  local prefix
  prefix=$(realpath -m "${1:-.deps/prefix}")
  [[ -d "$prefix/usr/lib/x86_64-linux-gnu" ]] || { echo "setup_prefix.sh: $prefix is not unpacked" >&2; exit 1; }
  cat <<ENV
export TESSERA_DEPS_PREFIX="$prefix"
export PATH="$prefix/usr/bin:\$PATH"
export LD_LIBRARY_PATH="$prefix/usr/lib/x86_64-linux-gnu:$prefix/usr/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
export CMAKE_PREFIX_PATH="$prefix/usr\${CMAKE_PREFIX_PATH:+:\$CMAKE_PREFIX_PATH}"
export CPLUS_INCLUDE_PATH="$prefix/usr/include\${CPLUS_INCLUDE_PATH:+:\$CPLUS_INCLUDE_PATH}"
export TESSERA_ONNX_TESTDATA="$prefix/usr/share/libonnx-testdata/data"
ENV
}

case "${1:-}" in
  download) download ;;
  install) install_prefix "${2:-}" ;;
  env) print_env "${2:-}" ;;
  *) usage ;;
esac
