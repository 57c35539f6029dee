#!/usr/bin/env bash
# Regenerates every statement catalog in catalog/data from the engines' own
# source trees (git directories, as the library's fetch tool brings them to
# MIRROR/<owner>+<repo>/repo), or from trees assembled file by file from the
# library's file index where fetch has no snapshot (ASSEMBLED/<owner>+<repo>/
# tree/.git, see catalog/data/gufo-manifest.txt). Which tree and commit each
# catalog reads is written here and in catalog/data/README.md; a tree that is
# absent is skipped with a message, its catalog left as it is.
set -euo pipefail
cd "$(dirname "$0")/.."
MIRROR="${MIRROR:-/work/.mirror}"
# Engines the fetch tool refuses are assembled file by file from the library's
# file index into ASSEMBLED/<owner>+<repo>/tree (a git work tree; its manifest
# of paths and upstream commits is committed in catalog/data/).
ASSEMBLED="${ASSEMBLED:-/work/.assembled}"
extract() { # out engine version repo rev [under]; repo may be ASSEMBLED:<owner>+<repo>
  local out=$1 engine=$2 version=$3 repo=$4 rev=$5 under=${6:-}
  local dir="$MIRROR/$repo/repo"
  if [[ $repo == ASSEMBLED:* ]]; then
    repo=${repo#ASSEMBLED:}
    dir="$ASSEMBLED/$repo/tree/.git"
  fi
  if ! git -C "$dir" rev-parse --verify -q "$rev^{commit}" >/dev/null 2>&1; then
    echo "skip $out: no $repo at $rev in $dir" >&2
    return 0
  fi
  local args=(--engine "$engine" --version "$version" --rev "$rev")
  [ -n "$under" ] && args+=(--under "$under")
  go run ./cmd/enginecatalog extract "${args[@]}" "$dir" > "catalog/data/$out.tsv.tmp"
  mv "catalog/data/$out.tsv.tmp" "catalog/data/$out.tsv"
  echo "wrote catalog/data/$out.tsv" >&2
}
extract_assembled() { # out engine version repo [under]
  local out=$1 engine=$2 version=$3 repo=$4 under=${5:-}
  local dir="$ASSEMBLED/$repo/tree"
  if ! git -C "$dir" rev-parse --verify -q "HEAD^{commit}" >/dev/null 2>&1; then
    echo "skip $out: no assembled $repo under $ASSEMBLED" >&2
    return 0
  fi
  local args=(--engine "$engine" --version "$version" --rev HEAD)
  [ -n "$under" ] && args+=(--under "$under")
  go run ./cmd/enginecatalog extract "${args[@]}" "$dir" > "catalog/data/$out.tsv.tmp"
  mv "catalog/data/$out.tsv.tmp" "catalog/data/$out.tsv"
  echo "wrote catalog/data/$out.tsv" >&2
}
extract vllm-fork-28be48fa9 vllm local-inference-lab-28be48fa9 local-inference-lab+vllm 28be48fa9
extract sglang-fork-64bca5315 sglang YAMY1234-64bca5315 YAMY1234+sglang 64bca5315
extract ik_llama.cpp-8337e4cd3 llamacpp ik-8337e4cd3 ikawrakow+ik_llama.cpp 8337e4cd3
extract llamacpp-ollama-vendored-9db4bdb llamacpp ollama-vendored-9db4bdb ollama+ollama '9db4bdb^' llama/llama.cpp
extract ollama-fb3076099 ollama fb3076099 ollama+ollama fb3076099
extract tgi-db931fcf tgi db931fcf huggingface+text-generation-inference db931fcf
extract lmdeploy-1263d5cd8 lmdeploy 1263d5cd8 InternLM+lmdeploy 1263d5cd8
extract exllama-tabbyapi-e632af4 exllama tabbyapi-e632af4 theroyallab+tabbyAPI e632af4
# the radiance fork serves through its patched vLLM and GGUF plugin (vendor/)
extract_assembled radiance-757ae1f3d vllm radiance-vllm-qwen4exp-757ae1f3d drwolfen+radiance-vllm-qwen4exp vendor/vllm,vendor/vllm-gguf-plugin
extract gufo-13381a302 gufo assembled-13381a302 ASSEMBLED:gufo-org+gufo 13381a302
# halogen-flash-server's public tree: its container entrypoint, not the engine
extract halogen-090da7b2c halogen assembled-090da7b2c ASSEMBLED:peonist-ai+halogen-flash-server 090da7b2c
extract trtllm-2586a32af trtllm assembled-2586a32af ASSEMBLED:NVIDIA+TensorRT-LLM 2586a32af
go run ./cmd/enginecatalog table catalog/data/*.tsv
