#!/usr/bin/env bash
# Every link in README.md and docs/*.md must name a file or folder inside this repository that
# exists: no link to another site, none that leaves the checkout (../shared/...); a path written as
# code that starts with ../ must stay inside it too. Anchors within a page (#section) are not
# checked. Run by ctest (doc_links); prints each bad link and exits 1.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd -P)
bad=0
for page in README.md docs/*.md; do
  dir=$(dirname "$page")
  # Inline links and images "](target)" and reference definitions "[name]: target".
  while IFS=: read -r line target; do
    target=${target%% *}          # drop a "title"
    target=${target#<}; target=${target%>}
    case $target in
      '#'*) continue ;;
      *://*|mailto:*) echo "$page:$line: $target: a link outside the repository"; bad=1; continue ;;
    esac
    file=${target%%#*}
    resolved=$(realpath -m "$dir/$file")
    if [[ $resolved != "$root" && $resolved != "$root"/* ]]; then
      echo "$page:$line: $target: leaves the repository"; bad=1
    elif [[ ! -e $resolved ]]; then
      echo "$page:$line: $target: no such file in the repository"; bad=1
    fi
  done < <( (grep -noE '\]\([^)]+\)' "$page" || true) | sed -E 's/\]\((.*)\)$/\1/'
           (grep -noE '^\s*\[[^]]+\]:\s*\S+' "$page" || true) | sed -E 's/^([0-9]+):\s*\[[^]]+\]:\s*/\1:/'
           (grep -noE '`\.\./[^` ]+`' "$page" || true) | tr -d '`')
done
if [[ $bad -ne 0 ]]; then exit 1; fi
echo "doc links: every link in README.md and docs/*.md names a file in the repository"
