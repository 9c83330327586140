#!/usr/bin/env bash
# How the adapter is trained (dataset 6, analyze_v3 prompts: security-v3, issue 33 item 6; dataset 4: security-v2,
# issue 15) and evaluated on the borrowed H200. The GPU box
# has no network and none of logwarden's light dependencies, and one `run` call carries at most 64 MiB,
# so the work is split into calls made back to back (the box stays warm between calls; /root/m and
# /tmp/site persist while it is held). This file is a recipe: the `run` calls are made with the device tool.
#
# 0. Rehearse here first (CPU, tiny random Qwen2, the same scripts and arguments, ~3 min):
#    CI=true PYTHONPATH=$PWD python -m pytest -q tests/train/test_device_job.py
#
# 1. Here (CPU), prepare what travels, all under ignored folders (.mdl/, .whl/ are in .gitignore):
#    PYTHONPATH=. python scripts/device_prepare.py --n 4000 --seed 7       (~5 min on 2 idle cores)
#        # GGUF slices → .mdl/c00..c10 (46 MB each, sha256 checked);
#        # dataset 6 → .mdl/data/{train,val}.jsonl.gz (train/production.py: what analyze queues — the realdata
#        #   train side analysed after a learned history, ~2,100 prompts; 4,000 generated windows judged against a
#        #   generated history, + benign ones, + some rendered alone, ~2,400; manifest.json says how many, the
#        #   targets (finding / dismissal / no findings), answer tokens, targets_ungrounded = 0);
#        # prompts with their per-prompt schemas → .mdl/data/prompts_sample.jsonl.gz (sample_logs, llm-policy
#        #   suspicious, 150) and prompts_heldout.jsonl.gz (realdata held-out as a site with a past, history share
#        #   0.5, analyze's default policy deviations: 437 prompts)
#    pip download ... -d .mdl/ws xgrammar==0.2.9 gguf==0.19.0 pydantic==2.13.4 pydantic_core==2.46.4 \
#        typing-inspection==0.4.2 annotated-types==0.7.0 apache-tvm-ffi==0.1.15.post2      (~7 MB)
#    pip download ... -d .mdl/wb bitsandbytes==0.50.2                                       (43 MB)
#    (the device README's platform flags, manylinux_2_24 too). The working tree is ~18 MiB, so
#    bitsandbytes travels alone and the small wheels with the last, shorter slice.
#
# 2. Device calls, one slice each (NN = 00..10), written at its offset so a repeated call is harmless:
#    run carry=[".mdl/cNN"]  command:
#      mkdir -p /root/m && dd if=.mdl/cNN of=/root/m/q.gguf bs=500000 seek=$((10#NN*92)) conv=notrunc status=none
#    the call for c10 also carries .mdl/ws and installs it:
#      python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .mdl/ws/*.whl
#
# 3. One call installs bitsandbytes and checks the GGUF:
#    run carry=[".mdl/wb"]  command:
#      python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .mdl/wb/*.whl && \
#      echo "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32  /root/m/q.gguf" | sha256sum -c -
#
# 4. Train (GGUF → bf16 ~50 s, then QLoRA: session 5, 5,994 prompts × 2 epochs = 12.1 M tokens in 281 s;
#    325 s the call). A dataset-6 prompt is ~1,240 tokens with its 650-token system prompt, so 1024 cuts the start of
#    the system prompt (as it did for dataset 4); `train --max-len 1536` keeps it, but on an H100 batch 16 × 1536
#    ran out of memory and batch 8 × 1536 went NaN (EVAL.md, security-v3): on the H200 try 1024 × 16 first:
#    run carry=[".mdl/data"]  timeout_s=600  command: bash scripts/device_run.sh train
#
# 5. Generate: base and base + adapter answer the ~1,500 prompts (sample_logs, realdata held-out, 300
#    generated validation windows), each under its own grammar (compiled on 8 threads); estimate from
#    session 4 (522 prompts in 18–24 s per config) ~1–1.5 min per config:
#    run carry=[".mdl/data"]  timeout_s=600  command: bash scripts/device_run.sh generate
#
# 6. Back here: copy $OUT/adapter/{adapter_model.safetensors,adapter_config.json,training.json} to
#    logwarden/adapters/security-vN/ (base_model_name_or_path "embedded"; a MODEL_CARD.md like v2's) and make
#    it the default in logwarden/adapters/__init__.py; put both answers_*.jsonl in one folder and score the
#    three sets, rules-only / base / base + adapter, through the unchanged pipeline:
#    PYTHONPATH=. python scripts/device_score.py --results <folder> --markdown     # the EVAL.md tables
#    PYTHONPATH=. python scripts/device_score.py --results <folder> > <folder>/score.json
#
# Evaluation only (an existing adapter, no training): steps 2, 3, then
#    bash scripts/device_run.sh generate --adapter logwarden/adapters/security-v2
set -euo pipefail
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
stage=${1:?usage: device_run.sh train|generate [extra device_job.py arguments]}
shift
common=(--gguf /root/m/q.gguf --work /root/m --data .mdl/data --out "$OUT")
case "$stage" in
  train)
    python3 scripts/device_job.py "${common[@]}" --stage train --epochs 2 --rank 12 --batch 16 --lr 2e-4 \
        --max-len 1024 "$@" > "$OUT/train.log" 2>&1 ;;
  generate)
    python3 scripts/device_job.py "${common[@]}" --stage generate --configs base,adapter --max-batch 128 \
        --val-prompts 430 "$@" > "$OUT/generate.log" 2>&1 ;;
  *) echo "unknown stage $stage" >&2; exit 2 ;;
esac
tail -5 "$OUT/$stage.log"
