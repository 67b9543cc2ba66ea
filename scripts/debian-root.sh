# Sourced by scripts that need a clean Debian 12 (bookworm) root file system
# (scripts/build-images.sh where no registry answers, tests/package/
# deb_smoke_test.sh): debootstrap's minbase variant from the Debian archive
# this machine's apt uses, that is the sources in /etc/apt/sources.list and
# /etc/apt/sources.list.d (*.list, *.sources) that serve bookworm (and
# bookworm-security) with the main component. The root's apt gets the same
# sources, with the bookworm, bookworm-updates and bookworm-security suites
# as in the official images. DEBIAN_MIRROR (and DEBIAN_SECURITY_MIRROR) name
# another archive where this machine's apt has none for bookworm. Runs
# debootstrap as root, or through sudo ($sudo) when not root.

# The first URI of this machine's apt sources (as apt reads them) that serves
# the Debian suite $1 with the main component; nothing where none does.
apt_source_uri() {
  local suite=$1 etc=/etc/apt f
  # One-line style: deb [options] URI SUITE COMPONENT...
  local one_line='$1 == "deb" {
      i = 2
      if ($i ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
      for (j = i + 2; j <= NF; j++) if ($j == "main" && $(i + 1) == suite) { print $i; exit }
    }'
  # deb822 style: paragraphs of Types, URIs, Suites, Components, Enabled.
  local deb822='function flush() {
      if (types ~ /(^| )deb( |$)/ && enabled != "no" && (" " suites " ") ~ (" " suite " ") &&
          (" " comps " ") ~ / main /) { split(uris, u, " "); print u[1]; found = 1 }
      types = uris = suites = comps = ""; enabled = "yes"
    }
    BEGIN { enabled = "yes" }
    /^[ \t]*#/ { next }
    /^[ \t]*$/ { flush(); if (found) exit; next }
    {
      key = tolower($1); sub(/:$/, "", key); $1 = ""; sub(/^[ \t]+/, "")
      if (key == "types") types = $0
      else if (key == "uris") uris = $0
      else if (key == "suites") suites = $0
      else if (key == "components") comps = $0
      else if (key == "enabled") enabled = tolower($0)
    }
    END { if (!found) flush() }'
  local uri=""
  for f in "$etc/sources.list" "$etc"/sources.list.d/*.list; do
    [ -z "$uri" ] && [ -f "$f" ] && uri=$(awk -v suite="$suite" "$one_line" "$f")
  done
  for f in "$etc"/sources.list.d/*.sources; do
    [ -z "$uri" ] && [ -f "$f" ] && uri=$(awk -v suite="$suite" "$deb822" "$f")
  done
  echo "$uri"
}

# make_debian_root DIR WHO: debootstraps bookworm into DIR (WHO names the
# caller in messages) and writes its apt sources. Returns 1, saying why, when
# no archive serves bookworm or debootstrap fails.
make_debian_root() {
  local dir=$1 who=$2 mirror security sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  mirror=${DEBIAN_MIRROR:-$(apt_source_uri bookworm)}
  security=${DEBIAN_SECURITY_MIRROR:-$(apt_source_uri bookworm-security)}
  if [ -z "$mirror" ]; then
    echo "$who: this machine's apt sources serve no Debian bookworm: set DEBIAN_MIRROR to a" \
      "Debian archive's URI" >&2
    return 1
  fi
  if ! command -v debootstrap > /dev/null 2>&1; then
    echo "$who: installing debootstrap"
    $sudo apt-get update -q > /dev/null
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends \
      debootstrap > /dev/null
  fi
  echo "$who: debootstrap bookworm (minbase) from $mirror into $dir"
  $sudo mkdir -p "$dir"
  if ! $sudo debootstrap --variant=minbase bookworm "$dir" "$mirror" > "$dir.debootstrap.log" 2>&1; then
    tail -20 "$dir.debootstrap.log" >&2
    echo "$who: debootstrap failed (log: $dir.debootstrap.log)" >&2
    return 1
  fi
  $sudo rm -f "$dir/etc/apt/sources.list"
  $sudo tee "$dir/etc/apt/sources.list.d/debian.sources" > /dev/null <<SOURCES
Types: deb
URIs: $mirror
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
  if [ -n "$security" ]; then
    $sudo tee -a "$dir/etc/apt/sources.list.d/debian.sources" > /dev/null <<SOURCES

Types: deb
URIs: $security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
  else
    echo "$who: this machine's apt sources serve no bookworm-security: the root gets no" \
      "security suite (DEBIAN_SECURITY_MIRROR names one)" >&2
  fi
}
