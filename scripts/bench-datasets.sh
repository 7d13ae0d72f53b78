#!/usr/bin/env bash
# Data sets: imgcache against img2dataset and tar.
#   scripts/bench-datasets.sh BINARY OUTPUT.md [COUNT] [IMG2DATASET]
# Serves COUNT (default 2000) generated images from nginx on loopback and, in
# five alternating rounds, all written to tmpfs (/dev/shm):
#   imgcache --json prefetch LIST into a new cache root      img2dataset --resize_mode no,
#                                                             2 processes x 32 threads (when given)
#   imgcache export --webdataset of the warm cache            tar -cf of the same cached files
#   imgcache export --to s3:// (moto, when installed)        imgcache export --webdataset to tmpfs
# then the peak memory of a prefetch of a 300,000-row CSV (the images'
# URLs 150 times over, with a caption column) on the warm cache. Every run's
# output is checked. Appends a Markdown section with the medians.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/bench-corpus.sh"
img2dataset=${4:-}
bench_arguments "$1" "$2" "${3:-2000}"
bench_serve_corpus 18900
shm=$(mktemp -d /dev/shm/imgcache-datasets.XXXXXX)
trap 'rm -rf "$shm"; stop_sample_server' EXIT

run=0
run_prefetch() {
    run=$((run + 1))
    timed sh -c 'out="$0"; exec "$@" > "$out"' "$work/summary-$run" "$bin" --cache-dir "$shm/imgcache-$run" --json prefetch "$work/urls.txt"
    grep -q "\"downloaded\":$count," "$work/summary-$run" || { echo "imgcache: not all downloaded" >&2; exit 1; }
    rm -rf "$shm/imgcache-$run"
}
run_img2dataset() {
    run=$((run + 1))
    I2D_LOG="$work/i2d.log" timed sh -c 'exec "$@" > "$I2D_LOG" 2>&1' sh \
        "$img2dataset" --url_list "$work/urls.txt" --output_folder "$shm/i2d-$run" --output_format files \
        --resize_mode no --processes_count 2 --thread_count 32 --timeout 10 \
        --enable_wandb False --compute_hash None --disallowed_header_directives '[]'
    local found
    found=$(find "$shm/i2d-$run" -type f \( -name '*.jpg' -o -name '*.png' -o -name '*.webp' -o -name '*.gif' \) | wc -l)
    [ "$found" -ge "$count" ] || { echo "img2dataset wrote $found of $count" >&2; exit 1; }
    rm -rf "$shm/i2d-$run"
}

# The warm cache the exports read.
"$bin" --cache-dir "$shm/warm" -q prefetch "$work/urls.txt"
find "$shm/warm/default" -type f \( -name '*.jpg' -o -name '*.png' -o -name '*.webp' -o -name '*.gif' \) | sort > "$work/cached.txt"
[ "$(wc -l < "$work/cached.txt")" -eq "$count" ] || { echo "the warm cache holds $(wc -l < "$work/cached.txt") images" >&2; exit 1; }
run_export() {
    run=$((run + 1))
    timed "$bin" --cache-dir "$shm/warm" -q export --webdataset "$shm/shards-$run" --shard-size 1000 "$work/urls.txt"
    [ "$(ls "$shm/shards-$run"/*.tar | wc -l)" -eq $(( (count + 999) / 1000 )) ] || { echo "export: shards missing" >&2; exit 1; }
    rm -rf "$shm/shards-$run"
}
run_tar() {
    run=$((run + 1))
    timed tar -P -cf "$shm/tar-$run.tar" -T "$work/cached.txt"
    rm -f "$shm/tar-$run.tar"
}

run_prefetch > /dev/null   # warm nginx's open-file cache
for round in 1 2 3 4 5; do
    run_prefetch >> "$work/prefetch.runs"
    [ -n "$img2dataset" ] && run_img2dataset >> "$work/i2d.runs"
    run_export >> "$work/export.runs"
    run_tar >> "$work/tar.runs"
done

# The same export into an S3 bucket (moto on loopback, signed requests) against into a folder on tmpfs,
# alternated: what sending each shard whole, checked, with the manifest last, costs.
s3_port=18961
if python3 -c 'import moto.server, boto3' 2>/dev/null; then
    INITIAL_NO_AUTH_ACTION_COUNT=3 python3 -m moto.server -H 127.0.0.1 -p "$s3_port" > "$work/moto.log" 2>&1 &
    moto_pid=$!
    trap 'rm -rf "$shm"; stop_sample_server; kill "$moto_pid" 2>/dev/null || true' EXIT
    for attempt in $(seq 1 100); do
        # A connection, not a request: moto lets only the first three requests through unsigned.
        (exec 3<> "/dev/tcp/127.0.0.1/$s3_port") 2> /dev/null && break
        [ "$attempt" -eq 100 ] && { echo "moto did not start" >&2; exit 1; }
        sleep 0.1
    done
    read -r AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY < <(python3 - "http://127.0.0.1:$s3_port" <<'PY'
import boto3, json, sys
plain = dict(endpoint_url=sys.argv[1], region_name="us-east-1", aws_access_key_id="setup", aws_secret_access_key="setup")
iam = boto3.client("iam", **plain)
iam.create_user(UserName="bench")
key = iam.create_access_key(UserName="bench")["AccessKey"]
policy = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}
iam.put_user_policy(UserName="bench", PolicyName="s3", PolicyDocument=json.dumps(policy))
boto3.client("s3", endpoint_url=sys.argv[1], region_name="us-east-1", aws_access_key_id=key["AccessKeyId"],
             aws_secret_access_key=key["SecretAccessKey"]).create_bucket(Bucket="bench")
print(key["AccessKeyId"], key["SecretAccessKey"])
PY
)
    export AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
    # Checks the run's objects (every shard and the manifest), then removes them: moto keeps them in memory.
    check_bucket() {
        python3 - "http://127.0.0.1:$s3_port" "$1" "$2" <<'PY'
import boto3, os, sys
s3 = boto3.client("s3", endpoint_url=sys.argv[1], region_name="us-east-1",
                  aws_access_key_id=os.environ["AWS_ACCESS_KEY_ID"], aws_secret_access_key=os.environ["AWS_SECRET_ACCESS_KEY"])
# (No Prefix parameter: moto's check of the signature of an encoded "/" in a query fails.)
keys = [item["Key"] for item in s3.list_objects_v2(Bucket="bench").get("Contents", []) if item["Key"].startswith(sys.argv[2] + "/")]
if len(keys) != int(sys.argv[3]) + 1 or sys.argv[2] + "/manifest.jsonl" not in keys:
    sys.exit("export --to: the bucket holds %s" % keys)
for key in keys:
    s3.delete_object(Bucket="bench", Key=key)
PY
    }
    run_export_s3() {
        run=$((run + 1))
        timed "$bin" --cache-dir "$shm/warm" -q export --to "s3://bench/run-$run?endpoint=http://127.0.0.1:$s3_port" --shard-size 1000 "$work/urls.txt"
        check_bucket "run-$run" $(( (count + 999) / 1000 ))
    }
    for round in 1 2 3 4 5; do
        run_export_s3 >> "$work/export-s3.runs"
        run_export >> "$work/export-folder.runs"
    done
fi

# 300,000 rows on the warm cache: the table streamed, the rows' columns carried.
/usr/bin/python3 - "$work/urls.txt" "$work/rows.csv" <<'PY'
import sys
urls = [line.strip() for line in open(sys.argv[1]) if line.strip()]
with open(sys.argv[2], "w") as out:
    out.write("url,caption,key\n")
    for row in range(300000):
        out.write('%s,"a caption, with a comma, for row %d",%d\n' % (urls[row % len(urls)], row, row))
PY
rows_run=$(timed sh -c 'exec "$@" > /dev/null' sh "$bin" --cache-dir "$shm/warm" --json prefetch "$work/rows.csv")

# 1,000,000 rows exported: the cached images, then 998,000 rows never fetched; the manifest says what became
# of each, and memory stays flat (export exits 1: rows are missing).
/usr/bin/python3 - "$work/urls.txt" "$work/million.csv" <<'PY'
import sys
urls = [line.strip() for line in open(sys.argv[1]) if line.strip()]
with open(sys.argv[2], "w") as out:
    out.write("url,caption\n")
    for row in range(1000000):
        url = urls[row] if row < len(urls) else "http://127.0.0.1:9/never/%d.jpg" % row
        out.write('%s,"caption %d"\n' % (url, row))
PY
million_run=$(timed sh -c '"$@" > /dev/null; [ $? -le 1 ]' sh "$bin" --cache-dir "$shm/warm" -q export --webdataset "$shm/million" "$work/million.csv")
[ "$(wc -l < "$shm/million/manifest.jsonl")" -eq 1000000 ] || { echo "export: the manifest lacks rows" >&2; exit 1; }
rm -rf "$shm/million"

median() { cut -d' ' -f"$2" "$1" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
prefetch=$(median "$work/prefetch.runs" 1)
export_time=$(median "$work/export.runs" 1)
tar_time=$(median "$work/tar.runs" 1)
{
    echo
    echo "## Data sets: a list in, shards out ($count images)"
    echo
    echo "Corpus: $(cat "$corpus/summary.txt"), from nginx on loopback; everything written to"
    echo "tmpfs. Medians of 5 alternating rounds (wall seconds; peak RSS)."
    echo
    echo "| Job | imgcache | Other tool | Ratio |"
    echo "|:---|---:|---:|---:|"
    if [ -n "$img2dataset" ]; then
        i2d=$(median "$work/i2d.runs" 1)
        echo "| download every image (\`prefetch --json\` vs img2dataset 1.47, \`--resize_mode no\`, 2 processes x 32 threads) | $prefetch s, $(( $(median "$work/prefetch.runs" 3) / 1024 )) MB | $i2d s, $(( $(median "$work/i2d.runs" 3) / 1024 )) MB | $(ratio "$prefetch" "$i2d")x |"
    fi
    echo "| write the cached images as tar shards (\`export --webdataset\` vs \`tar -cf\` of the same files) | $export_time s | $tar_time s | $(ratio "$export_time" "$tar_time")x |"
    if [ -s "$work/export-s3.runs" ]; then
        s3_time=$(median "$work/export-s3.runs" 1)
        folder_time=$(median "$work/export-folder.runs" 1)
        echo "| the same shards into an S3 bucket (\`export --to s3://\`, moto on loopback, vs \`export --webdataset\` to tmpfs) | $s3_time s, $(( $(median "$work/export-s3.runs" 3) / 1024 )) MB | $folder_time s, $(( $(median "$work/export-folder.runs" 3) / 1024 )) MB | $(ratio "$s3_time" "$folder_time")x |"
    fi
    echo
    echo "A 300,000-row CSV (the images' URLs 150 times over, with a caption column) on the"
    echo "warm cache: $(echo "$rows_run" | cut -d' ' -f1) s, peak RSS $(( $(echo "$rows_run" | cut -d' ' -f3) / 1024 )) MB (target: at most 40 MB)."
    echo "A 1,000,000-row CSV exported (the $count cached images, then rows never fetched, each in the"
    echo "manifest): $(echo "$million_run" | cut -d' ' -f1) s, peak RSS $(( $(echo "$million_run" | cut -d' ' -f3) / 1024 )) MB (target: under 60 MB)."
    echo
    echo "Targets: prefetch at most 0.1x img2dataset. \`export\` does more than \`tar\`: it"
    echo "looks each row up, reads each image, hashes it (SHA-256) and writes a JSON"
    echo "member and a manifest line beside it."
} >> "$output"
tail -n 14 "$output"
