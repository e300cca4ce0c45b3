#!/usr/bin/env bash
# The merge gate of a pull request that carries a patch from patcher, with re-verification when the base moved.
#
#   patcher-gate.sh JOB_ID BASE HEAD
#
# 1. Fetch the job's signed record and let `patcher gate` check it against the pull request (BASE: the
#    target branch's commit, HEAD: the pull request's head): signature, PASSED, the merge base is the tree it
#    was verified on, the head is that base plus the verified patch, our suite, an approval by someone other
#    than the submitter.
# 2. If the gate refuses only because the base moved (main went on, the branch was updated onto it), ask the
#    server to prove the same diff again on the new merge base (POST /v1/jobs/JOB_ID/reverify: the baseline,
#    the reproduction, the suite and every integrity rule from scratch, no agent), wait for it, and gate again
#    with the new record. The approval of the same diff carries over (the record says from which job); any
#    other refusal, or a re-verification that fails (the patch no longer applies, the tests fail), fails the
#    check.
#
# Environment: PATCHER_URL, PATCHER_TOKEN (a token with submit permission, to ask for re-verification),
# PATCHER_PUBLIC_KEY_FILE (the server's PEM Ed25519 public key); optional PATCHER_SUITE (default
# `python -m pytest -q`), PATCHER_WAIT_S (default 1800), PATCHER_POLL_S (default 5), PATCHER_GATE_DIR
# (default: a temp dir).
set -euo pipefail
job=$1 base=$2 head=$3
case "$job" in *[!A-Za-z0-9-]*|"") echo "bad job id: $job" >&2; exit 2;; esac
suite=${PATCHER_SUITE:-python -m pytest -q}
dir=${PATCHER_GATE_DIR:-$(mktemp -d)}
auth="Authorization: Bearer $PATCHER_TOKEN"

record() {  # the signed record of job $1 into $dir/$1.json
  curl --fail --silent --show-error -H "$auth" "$PATCHER_URL/v1/jobs/$1/attestation" -o "$dir/$1.json"
}

gate() {  # the gate over the record of job $1; prints its one line, exit code as the gate's
  patcher gate --base "$base" --head "$head" --attestation "$dir/$1.json" \
    --public-key "$PATCHER_PUBLIC_KEY_FILE" --suite "$suite" --require-approval 2>&1
}

field() {  # one field of a JSON object on stdin
  python3 -c 'import json, sys; print(json.load(sys.stdin).get(sys.argv[1]) or "")' "$1"
}

record "$job"
if line=$(gate "$job"); then echo "$line"; exit 0; fi
echo "$line"
case "$line" in *"refused: base:"*) ;; *) exit 1;; esac

onto=$(git merge-base "$base" "$head")
echo "the base moved: asking patcher to verify job $job's diff again on $onto"
again=$(curl --fail --silent --show-error -X POST -H "$auth" -H "Content-Type: application/json" \
  -H "Idempotency-Key: reverify-$job-$onto" -d "{\"ref\": \"$onto\"}" \
  "$PATCHER_URL/v1/jobs/$job/reverify" | field id)
case "$again" in *[!A-Za-z0-9-]*|"") echo "the server did not queue a re-verification" >&2; exit 1;; esac

deadline=$(( $(date +%s) + ${PATCHER_WAIT_S:-1800} ))
while :; do
  state=$(curl --fail --silent --show-error -H "$auth" -o /dev/null -w '%header{x-patcher-job-state}' \
    "$PATCHER_URL/v1/jobs/$again")
  case "$state" in done|failed|cancelled) break;; esac
  if [ "$(date +%s)" -ge "$deadline" ]; then echo "re-verification $again did not end in time" >&2; exit 1; fi
  sleep "${PATCHER_POLL_S:-5}"
done
result=$(curl --fail --silent --show-error -H "$auth" "$PATCHER_URL/v1/jobs/$again")
status=$(field status <<<"$result")
echo "re-verification $again: ${status:-$state} ($(field reason <<<"$result")): $(field message <<<"$result")"
[ "$status" = verified ] || exit 1
record "$again"
gate "$again"
