# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# Sourced by the benchmark scripts (after setting $root to the repository): bench_python
# MODULE... prints the path of a Python that imports every MODULE. It is bench/compare/.venv's,
# made on first use, with the modules installed there by pip (tensorflow as tensorflow-cpu);
# Debian's python3-venv is installed through apt (sudo when not root) if python3 lacks venv.
# The peers and plotting libraries never become dependencies of dsgd itself.
bench_python() {
  _venv="$root/bench/compare/.venv"
  _py="$_venv/bin/python"
  _imports=$(echo "$*" | tr ' ' ',')
  if ! "$_py" -c "import $_imports" 2>/dev/null; then
    if [ ! -x "$_py" ] && ! python3 -m venv "$_venv" >/dev/null 2>&1; then
      _sudo=""
      [ "$(id -u)" -eq 0 ] || _sudo=sudo
      echo "bench: installing python3-venv (Debian's python3 has no venv without it)" >&2
      DEBIAN_FRONTEND=noninteractive $_sudo apt-get update -qq >&2
      DEBIAN_FRONTEND=noninteractive $_sudo apt-get install -y -qq --no-install-recommends python3-venv >&2
      rm -rf "$_venv"
      python3 -m venv "$_venv"
    fi
    _packages=""
    for _m in "$@"; do
      case $_m in
        tensorflow) _packages="$_packages tensorflow-cpu" ;;
        *) _packages="$_packages $_m" ;;
      esac
    done
    echo "bench: pip install$_packages into $_venv" >&2
    # shellcheck disable=SC2086
    "$_py" -m pip install --quiet $_packages >&2
  fi
  echo "$_py"
}
