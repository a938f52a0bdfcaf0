#!/bin/sh
# Entrypoint of the example stack's inference container: remove CPU-KV offload mmaps that a
# crashed server left in /dev/shm (they pin ~100 GB of RAM), then start vLLM with the given args.
set -eu
find /dev/shm -maxdepth 1 -name 'vllm_offload_*' -type f -mmin +1 -delete 2>/dev/null || true
exec vllm serve "$@"
